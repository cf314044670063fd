# Training ModernBERT's per-token heads (tach train --task mlm|token-classification|question-answering)
# through the binary, and the refusal of a task a decoder family has no head for.
add_test(NAME cli.train_modernbert_tasks COMMAND ${PROJECT_SOURCE_DIR}/tests/cli/train_modernbert_tasks.sh
  $<TARGET_FILE:tach_cli> ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(cli.train_modernbert_tasks PROPERTIES LABELS unit TIMEOUT 300)
