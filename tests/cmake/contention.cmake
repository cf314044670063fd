# A busy machine: other processes' CPU use measured from procfs under a real competing load, bench
# points that record the load they ran under (and a contended point named as such), ceilings never
# cached from a loaded measurement, a default thread count that leaves busy cores alone, and -t
# above the cores as a warning.
tach_test(test_contention unit)

add_test(NAME cli.threads_above_cores
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/threads_above_cores.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_BINARY_DIR}/threads_above_cores ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
set_tests_properties(cli.threads_above_cores PROPERTIES LABELS unit)
# tach classify beside busy loops on every core says its latency is the shared machine's.
add_test(NAME cli.classify_load COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/classify_load.sh $<TARGET_FILE:tach_cli>)
set_tests_properties(cli.classify_load PROPERTIES LABELS unit RUN_SERIAL TRUE)
# Each point records the threads it ran with; a resume keeps the run's default count; summary.json,
# tables, eval's method and tach compare go by the count that ran.
add_test(NAME cli.threads_recorded
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/threads_recorded.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_BINARY_DIR}/threads_recorded ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
set_tests_properties(cli.threads_recorded PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
# tach eval's passes: each warmed up before its timed pass, each with the load it ran under.
add_test(NAME cli.eval_passes_warm_and_loaded COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/eval_passes_warm_and_loaded.sh
  $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/eval_passes)
set_tests_properties(cli.eval_passes_warm_and_loaded PROPERTIES LABELS unit RUN_SERIAL TRUE)
