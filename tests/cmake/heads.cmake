# The per-token heads (masked LM, token classification, question answering) of every encoder family
# against transformers' outputs and parameter counts, and the heads a checkpoint lacks.
tach_test(test_heads golden)

# The binary: bert-base-uncased's published config.json estimated with transformers' count; tach
# info and estimate on a masked-LM, a token-classification and a QA checkpoint say the head and count.
add_test(NAME cli.heads
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/heads.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/heads_cli)
set_tests_properties(cli.heads PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)
