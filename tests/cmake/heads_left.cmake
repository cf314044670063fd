# The per-token heads' remaining pieces: LoRA on the masked LM, token classifier and question
# answering against peft, their tasks' data in Parquet as the Hub publishes it, report and compare
# over their eval runs, and the small notes of classify, estimate and fill-mask.
tach_test(test_train_task_lora unit)
tach_test(test_task_parquet unit)

# The binary: eval and train on the Hub's Parquet layouts equal their JSONL runs; report and
# compare on token-classification and question-answering eval runs; classify's truncation note,
# estimate's 384 tokens for a question-answering model, fill-mask's significant digits.
add_test(NAME cli.heads_left
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/heads_left.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/heads_left)
set_tests_properties(cli.heads_left PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
