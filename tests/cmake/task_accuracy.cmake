# tach bench --accuracy on a token classifier and a question-answering model: tach's pass gives tach
# eval's figures, accuracy.json's per-token results and engines, the findings, a masked LM refused,
# and other engines' passes against the stand-in worker (test_task_accuracy, which needs only
# python3); each engine's metric against transformers run directly, with the development virtualenv
# (skipped without it).
tach_test(test_task_accuracy unit)

add_test(NAME cli.task_engine_accuracy.against_transformers
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/task_engine_accuracy.sh $<TARGET_FILE:tach_cli>
  ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${PROJECT_SOURCE_DIR}/python ${CMAKE_CURRENT_BINARY_DIR}/task_engine_accuracy)
set_tests_properties(cli.task_engine_accuracy.against_transformers PROPERTIES LABELS unit SKIP_RETURN_CODE 77
  TIMEOUT 600)
