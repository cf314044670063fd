# Extractive question answering and SQuAD scoring: the answer spans and windows against
# transformers' question-answering pipeline, the SQuAD metrics against the official scripts,
# SQuAD files, and tach answer / tach eval on a question-answering model.
tach_test(test_question_answering unit)

# The binary: tach answer --json equals the pipeline (short and windowed contexts), its errors (a
# question longer than the window, a stride with no new context, options out of range); tach eval
# on SQuAD v1.1 and v2.0 files equals the pipeline's answers and the official scores; v1.1 data
# whose answer is not at answer_start is refused naming the record.
add_test(NAME cli.question_answering
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/question_answering.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/question_answering)
set_tests_properties(cli.question_answering PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
