# The causal decoder families' per-token heads (Llama, Mistral, Qwen2, Qwen3: token classification
# and question answering) through the binary: tach answer equals transformers' question-answering
# pipeline, tach classify the token-classification pipeline's labels and entity groups, a causal LM
# takes a new head with transformers' note, and Gemma 3 (no such head in transformers) is refused.
# Their outputs against transformers, right- and left-padded, are test_heads' (tests/cmake/heads.cmake).
add_test(NAME cli.decoder_heads
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/decoder_heads.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/decoder_heads_cli)
set_tests_properties(cli.decoder_heads PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)
