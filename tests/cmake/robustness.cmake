# The suite on a busy machine: the machine's ceilings measured once, alone, before the tests that
# judge ops against them (not again in every test process, each seeing the others as load).
add_test(NAME suite.ceilings COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/suite_ceilings.sh $<TARGET_FILE:tach_cli>)
# First (the highest COST) and alone; every other CLI test of this directory requires it, so that
# `ctest -R` on one of them runs it too (reading the cache: milliseconds).
set_tests_properties(suite.ceilings PROPERTIES LABELS unit RUN_SERIAL TRUE COST 1000000 FIXTURES_SETUP suite_ceilings)
get_property(_tach_suite_tests DIRECTORY PROPERTY TESTS)
list(REMOVE_ITEM _tach_suite_tests suite.ceilings)
set_property(TEST ${_tach_suite_tests} APPEND PROPERTY FIXTURES_REQUIRED suite_ceilings)

add_test(NAME suite.ceilings_measured_once COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/suite_ceilings_once.sh
  $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_BINARY_DIR}/suite-ceilings-once ${PROJECT_BINARY_DIR})
set_tests_properties(suite.ceilings_measured_once PROPERTIES LABELS unit RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
