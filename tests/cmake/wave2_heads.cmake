# Data that does not fit the model's task: each error names what the file is, what was expected
# and the flag that reads it (tach eval's -m, tach train's --task, tach run's --dataset).
set(_w2h_fixtures ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
set(_w2h_tokenizer -k ${_w2h_fixtures}/question_answering/tokenizer-tiny)
set(_w2h_runs --runs-dir ${CMAKE_CURRENT_BINARY_DIR}/wave2_heads_runs)

# A SQuAD file read as a sequence classifier's rows: its top-level keys (data, version) are no splits.
add_test(NAME cli.wave2_heads.eval_squad_on_classifier
  COMMAND tach_cli eval -m preset:bert-tiny -d ${_w2h_fixtures}/question_answering/squad-v1.json
          ${_w2h_tokenizer} --device cpu ${_w2h_runs})
set_tests_properties(cli.wave2_heads.eval_squad_on_classifier PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "squad-v1.json: this file is SQuAD data, which a question-answering model reads, not rows of a text and a label .*-m with a question-answering model.*--task question-answering"
  FAIL_REGULAR_EXPRESSION "the file has: data|choose one of: data")
add_test(NAME cli.wave2_heads.train_squad_on_classifier
  COMMAND tach_cli train -m preset:bert-tiny -d ${_w2h_fixtures}/question_answering/squad-v1.json
          ${_w2h_tokenizer} --max-steps 1 ${_w2h_runs})
set_tests_properties(cli.wave2_heads.train_squad_on_classifier PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "this file is SQuAD data, which a question-answering model reads.*--task question-answering"
  FAIL_REGULAR_EXPRESSION "the file has: data|choose one of: data")

# A .conll file for a sequence classifier: named as CoNLL text, with the token classifier's flags.
add_test(NAME cli.wave2_heads.train_conll_on_classifier
  COMMAND tach_cli train -m preset:bert-tiny -d ${_w2h_fixtures}/token_classes/ner.conll
          ${_w2h_tokenizer} --max-steps 1 ${_w2h_runs})
set_tests_properties(cli.wave2_heads.train_conll_on_classifier PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "ner.conll: this file is CoNLL text, which a token classifier reads, not rows of a text and a label .*--task token-classification")

# --dataset-format conll given where no token classifier reads the data.
add_test(NAME cli.wave2_heads.conll_format_on_classifier
  COMMAND tach_cli eval -m preset:bert-tiny -d ${_w2h_fixtures}/train/tiny.csv --dataset-format conll
          ${_w2h_tokenizer} --device cpu ${_w2h_runs})
set_tests_properties(cli.wave2_heads.conll_format_on_classifier PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "--dataset-format conll reads tagged words \\(CoNLL text\\), which a token classifier reads; this reads rows of a text and a label, as a sequence classifier does: --dataset-format auto, csv, tsv, jsonl, json or parquet")
add_test(NAME cli.wave2_heads.conll_format_on_question_answering
  COMMAND tach_cli eval -m ${_w2h_fixtures}/heads/bert-qa-f32 -d ${_w2h_fixtures}/question_answering/squad-v1.json
          --dataset-format conll ${_w2h_tokenizer} --device cpu ${_w2h_runs})
set_tests_properties(cli.wave2_heads.conll_format_on_question_answering PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "--dataset-format conll reads tagged words \\(CoNLL text\\), which a token classifier reads; a question-answering model reads SQuAD-format data \\(--dataset-format auto, json, jsonl or parquet\\): -m with a token-classification model")
add_test(NAME cli.wave2_heads.train_conll_format_on_question_answering
  COMMAND tach_cli train -m ${_w2h_fixtures}/heads/bert-qa-f32 --task question-answering
          -d ${_w2h_fixtures}/question_answering/squad-v1.json --dataset-format conll ${_w2h_tokenizer}
          --max-steps 1 ${_w2h_runs})
set_tests_properties(cli.wave2_heads.train_conll_format_on_question_answering PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "--dataset-format conll reads tagged words \\(CoNLL text\\).*: --task token-classification reads it")

# SQuAD data for a token classifier and CoNLL text for a question-answering model: the fix is named.
add_test(NAME cli.wave2_heads.eval_squad_on_token_classifier
  COMMAND tach_cli eval -m ${_w2h_fixtures}/heads/bert-tokcls-f32 -d ${_w2h_fixtures}/question_answering/squad-v1.json
          ${_w2h_tokenizer} --device cpu ${_w2h_runs})
set_tests_properties(cli.wave2_heads.eval_squad_on_token_classifier PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "this file is SQuAD data, which a question-answering model reads, not CoNLL text or JSON records with tokens and tags, as a token classifier reads them; evaluate it with -m and a question-answering model")
add_test(NAME cli.wave2_heads.eval_conll_on_question_answering
  COMMAND tach_cli eval -m ${_w2h_fixtures}/heads/bert-qa-f32 -d ${_w2h_fixtures}/token_classes/ner.conll
          ${_w2h_tokenizer} --device cpu ${_w2h_runs})
set_tests_properties(cli.wave2_heads.eval_conll_on_question_answering PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "this file is CoNLL text, which a token classifier reads, not SQuAD-format data .*; evaluate it with -m and a token classifier")

# tach run turns the accuracy pass on for --dataset: on a token classifier it is the seqeval pass
# of tach eval's code (bench --accuracy's), reading tagged words; the sequence classifier's labelled
# rows are not what it reads, said by the task pass before any run directory is made.
add_test(NAME cli.wave2_heads.run_dataset_on_token_classifier
  COMMAND tach_cli run -m ${_w2h_fixtures}/heads/bert-tokcls-f32 -d ${_w2h_fixtures}/token_classes/ner.conll
          -k ${_w2h_fixtures}/token_classes/tokenizer-wordpiece -s 16 -b 1 --runs 2 --device cpu --no-progress
          ${_w2h_runs})
set_tests_properties(cli.wave2_heads.run_dataset_on_token_classifier PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "\\[1/4\\] data: [^\n]*ner.conll, tagged words for seqeval.*Accuracy on dataset [^\n]*ner.conll\n  cpu/f32: 24 sentences \\(seqeval, conlleval tags\\): entity F1 0.5441"
  FAIL_REGULAR_EXPRESSION "needs a sequence classifier")
add_test(NAME cli.wave2_heads.run_csv_on_token_classifier
  COMMAND tach_cli run -m ${_w2h_fixtures}/heads/bert-tokcls-f32 -d ${_w2h_fixtures}/train/tiny.csv -s 16
          ${_w2h_tokenizer} --device cpu ${_w2h_runs})
set_tests_properties(cli.wave2_heads.run_csv_on_token_classifier PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "error: [^\n]*tiny.csv:1: [^\n]*this file is a table \\(csv rows\\), which a sequence classifier reads"
  FAIL_REGULAR_EXPRESSION "drop --accuracy")

# tach train on question answering: the default windows (384 tokens, run_qa.py's) fit a model with
# fewer positions (this one has 32), with the stride halved, said in the output and the run's notes;
# a --max-length past the positions is a usage error naming them.
add_test(NAME cli.wave2_heads.train_question_answering_windows
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/train_qa_windows.sh $<TARGET_FILE:tach_cli> ${_w2h_fixtures}
          ${CMAKE_CURRENT_BINARY_DIR}/wave2_heads_qa_windows)
set_tests_properties(cli.wave2_heads.train_question_answering_windows PROPERTIES LABELS unit TIMEOUT 180)

# tach train on a per-token task given the other task's data: named, with the --task that reads it.
add_test(NAME cli.wave2_heads.train_squad_for_token_classification
  COMMAND tach_cli train -m ${_w2h_fixtures}/heads/bert-tokcls-f32 --task token-classification
          -d ${_w2h_fixtures}/question_answering/squad-v1.json ${_w2h_tokenizer} --max-steps 1 ${_w2h_runs})
set_tests_properties(cli.wave2_heads.train_squad_for_token_classification PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "squad-v1.json: this file is SQuAD data, which a question-answering model reads, not CoNLL text or JSON records with tokens and tags, as a token classifier reads them; --task question-answering reads it"
  FAIL_REGULAR_EXPRESSION "the keys are: data")
add_test(NAME cli.wave2_heads.train_conll_for_question_answering
  COMMAND tach_cli train -m ${_w2h_fixtures}/heads/bert-qa-f32 --task question-answering
          -d ${_w2h_fixtures}/token_classes/ner.conll ${_w2h_tokenizer} --max-steps 1 ${_w2h_runs})
set_tests_properties(cli.wave2_heads.train_conll_for_question_answering PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "ner.conll: this file is CoNLL text, which a token classifier reads, not SQuAD-format data .*; --task token-classification reads it"
  FAIL_REGULAR_EXPRESSION "not JSON")

# A table of texts and labels given to a per-token head: named as a sequence classifier's data.
add_test(NAME cli.wave2_heads.eval_table_on_token_classifier
  COMMAND tach_cli eval -m ${_w2h_fixtures}/heads/bert-tokcls-f32 -d ${_w2h_fixtures}/train/tiny.csv
          ${_w2h_tokenizer} --device cpu ${_w2h_runs})
set_tests_properties(cli.wave2_heads.eval_table_on_token_classifier PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "tiny.csv:1: 'text,label' has 1 column; a word line needs .* \\(this file is a table \\(csv rows\\), which a sequence classifier reads: evaluate it with -m and a sequence classifier\\)")
add_test(NAME cli.wave2_heads.train_table_for_question_answering
  COMMAND tach_cli train -m ${_w2h_fixtures}/heads/bert-qa-f32 --task question-answering
          -d ${_w2h_fixtures}/train/tiny.csv ${_w2h_tokenizer} --max-steps 1 ${_w2h_runs})
set_tests_properties(cli.wave2_heads.train_table_for_question_answering PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "tiny.csv: this file is a table \\(csv rows\\), which a sequence classifier reads, not SQuAD-format data .*; --task sequence-classification reads it"
  FAIL_REGULAR_EXPRESSION "not JSON")
