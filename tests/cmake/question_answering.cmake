# Extractive question answering and SQuAD scoring: the answer spans and windows against
# transformers' question-answering pipeline, the SQuAD metrics against the official scripts,
# SQuAD files, and tach answer / tach eval on a question-answering model.
tach_test(test_question_answering unit)
