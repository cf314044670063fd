# A busy machine: other processes' CPU use measured from procfs under a real competing load, bench
# points that record the load they ran under (and a contended point named as such), ceilings never
# cached from a loaded measurement, a default thread count that leaves busy cores alone, and -t
# above the cores as a warning.
tach_test(test_contention unit)

add_test(NAME cli.threads_above_cores
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/threads_above_cores.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_BINARY_DIR}/threads_above_cores ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
set_tests_properties(cli.threads_above_cores PROPERTIES LABELS unit)
