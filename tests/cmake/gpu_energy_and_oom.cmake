# tach bench --train and tach train running out of memory: the allocator's facts, the estimate's need, the largest
# batch that fits and the switches that need less (TACH_MEMORY_LIMIT_MB forces it on the CPU).
add_test(NAME cli.train_out_of_memory_advice COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/oom_advice.sh
  $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_BINARY_DIR}/oom_advice ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/train/tiny.csv)
set_tests_properties(cli.train_out_of_memory_advice PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION "PASS")
