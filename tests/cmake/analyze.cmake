# tach analyze: torch.profiler traces read as they stream (errors for cut or foreign files), the op
# table against torch's key_averages() on real traces, steps and GPU time, and the command.
tach_test(test_analyze unit)
tach_test(test_analyze_gpu unit)

# The binary on the same traces: --json's field names, a row against torch, the skipped GPU
# sections and the assumed rank said, errors for a non-trace, a cut gzip and an unknown column.
add_test(NAME cli.analyze_traces
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/analyze_traces.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/analyze_traces)
set_tests_properties(cli.analyze_traces PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)
