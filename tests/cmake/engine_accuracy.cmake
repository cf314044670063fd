# Other engines' accuracy passes (tach bench --engine ... --accuracy): accuracy.json's engines, what
# --resume keeps, the findings, and sweeps against the stand-in worker (test_engine_accuracy, which
# needs only python3); each engine's accuracy against transformers run directly, with the development
# virtualenv (skipped without it). And an engine refused before it runs leaves no directory behind.
tach_test(test_engine_accuracy unit)

add_test(NAME cli.engine_accuracy.against_transformers COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/engine_accuracy.sh
  $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${PROJECT_SOURCE_DIR}/python
  ${CMAKE_CURRENT_BINARY_DIR}/engine_accuracy)
set_tests_properties(cli.engine_accuracy.against_transformers PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 600)

add_test(NAME cli.engine_accuracy.refused_leaves_nothing
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/engine_refused_leaves_nothing.sh $<TARGET_FILE:tach_cli>
  ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/engine_refused)
set_tests_properties(cli.engine_accuracy.refused_leaves_nothing PROPERTIES LABELS unit)
