# Token classification: seqeval's entity-level metrics (every scheme), CoNLL and JSON tagged
# datasets, the pipeline's entity groups, and tach classify/eval on token-classification models.
tach_test(test_token_classes unit)

# tach classify (entity groups) and tach eval (seqeval) on a tiny token classifier, against
# transformers' pipeline and seqeval on run_ner's predictions; the errors for bad schemes and lines.
add_test(NAME cli.token_classes
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/token_classes.sh $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
          ${CMAKE_CURRENT_BINARY_DIR}/token_classes)
set_tests_properties(cli.token_classes PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
