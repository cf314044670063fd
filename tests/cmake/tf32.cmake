# --allow-tf32 (the switch recorded, refused where it cannot act, judged against the TF32 ceiling,
# said by tach compare; the GPU's numbers in test_cuda_ops), where a sweep's throughput stops
# growing and why, and the GPU peers script's arguments and JSON on the CPU.
tach_test(test_tf32 unit)
tach_test(test_batch_plateau unit)
add_test(NAME cli.allow_tf32 COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/allow_tf32.sh $<TARGET_FILE:tach_cli>
  ${CMAKE_CURRENT_BINARY_DIR}/allow_tf32)
set_tests_properties(cli.allow_tf32 PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION "PASS")
add_test(NAME peers.gpu_smoke COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/peers/gpu_peers.sh $<TARGET_FILE:tach_cli>)
set_tests_properties(peers.gpu_smoke PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 900)
