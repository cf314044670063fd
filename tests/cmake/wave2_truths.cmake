# Usage errors before the model is read, and numbers as a person writes them: a bad option value is
# refused (exit 2, naming the option) before any command reads its model.

# Every command's option values that were checked only after the model loaded (eval --tag-scheme,
# answer --doc-stride, profile --group-by, bench --dtype, ...), each given with a model that does
# not exist: the usage error must come first.
add_test(NAME cli.refused_before_load COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/refused_before_load.sh $<TARGET_FILE:tach_cli>)
set_tests_properties(cli.refused_before_load PROPERTIES LABELS unit)

# A model's parameter count, three significant digits and a unit in every place it is printed.
tach_test(test_number_texts unit)

# A new head's initialisation as a person writes it: N(0, 0.2), not std::to_string's N(0, 0.200000).
add_test(NAME cli.train_new_head_init_text COMMAND tach_cli train -m ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/encoders/bert-base-model-f32
  -d ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/train/tiny.csv -k ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/token_classes/tokenizer-wordpiece
  -s 32 -b 4 --max-steps 1 --runs-dir ${CMAKE_CURRENT_BINARY_DIR}/wave2_truths_runs --no-progress --no-tensorboard)
set_tests_properties(cli.train_new_head_init_text PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "newly initialized: \\[[^]]*\\] \\(weights N\\(0, 0\\.2\\), biases 0"
  FAIL_REGULAR_EXPRESSION "N\\(0, 0\\.2000")

# Decoding past the model's positions (bench --decode-tokens after -s, generate's prompt and
# --max-new-tokens) is refused before anything runs, naming the limit and what fits.
add_test(NAME cli.decode_past_positions COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/decode_past_positions.sh
  $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/decode_past_positions)
set_tests_properties(cli.decode_past_positions PROPERTIES LABELS unit)
