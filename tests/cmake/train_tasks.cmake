# Training the per-token heads (tach train --task mlm|token-classification|question-answering):
# masking, label alignment, answer windows, and 20 steps against transformers.
tach_test(test_train_tasks unit)
add_test(NAME cli.train_tasks COMMAND ${PROJECT_SOURCE_DIR}/tests/cli/train_tasks.sh
  $<TARGET_FILE:tach_cli> ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(cli.train_tasks PROPERTIES LABELS unit TIMEOUT 300)
