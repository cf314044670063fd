# tach shrink: the Pareto frontier, the variants' spellings and a row's variant and accuracy
# (test_shrink), and the binary on tiny fixtures: f32, int8 and heads:0.5 rows, each variant's
# accuracy equal to tach eval's, the findings, tach compare --by variant, report.html's charts,
# a killed run resumed, and each bad input refused with exit status 2 before anything runs.
tach_test(test_shrink unit)

add_test(NAME cli.shrink
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/shrink.sh $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
          ${CMAKE_CURRENT_BINARY_DIR}/shrink)
set_tests_properties(cli.shrink PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
