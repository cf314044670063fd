# Verdicts that hold on a busy machine: tach compare against drift inside runs and a difference in
# load, and one throughput definition (batch / median latency) shared by the bench table and compare.
add_test(NAME cli.compare_verdicts
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/compare_verdicts.sh $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_BINARY_DIR}/compare_verdicts)
set_tests_properties(cli.compare_verdicts PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
