# QLoRA of the per-token heads through the binary (tach train --method qlora --task
# token-classification|question-answering on Llama, Mistral and ModernBERT); the forward and
# backward against bitsandbytes + peft are test_train_qlora's.
add_test(NAME cli.qlora_tasks COMMAND ${PROJECT_SOURCE_DIR}/tests/cli/qlora_tasks.sh
  $<TARGET_FILE:tach_cli> ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(cli.qlora_tasks PROPERTIES LABELS unit TIMEOUT 300)
