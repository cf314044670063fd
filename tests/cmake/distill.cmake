# Knowledge distillation (tach train --distill-from): the KL op, the teacher's checks, and 20
# distilled steps of every head against transformers with the same loss in torch.
tach_test(test_train_distill unit)
add_test(NAME cli.train_distill COMMAND ${PROJECT_SOURCE_DIR}/tests/cli/train_distill.sh
  $<TARGET_FILE:tach_cli> ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(cli.train_distill PROPERTIES LABELS unit TIMEOUT 300)
