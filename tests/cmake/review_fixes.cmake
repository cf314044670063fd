# tach analyze -o never writes into a directory that holds anything (a bench run, an earlier
# analysis); compare's and analyze's option values out of range are usage errors (exit 2).
add_test(NAME cli.analyze_compare_usage
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/review_fixes.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/analyze_compare_usage)
set_tests_properties(cli.analyze_compare_usage PROPERTIES LABELS unit TIMEOUT 120)
