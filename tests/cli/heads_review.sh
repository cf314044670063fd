#!/bin/sh
# Through the binary, the heads' rough edges: a head the checkpoint lacks, built new, is said as
# transformers says it ("newly initialized") by tach eval (terminal and summary.txt); a TSV of
# sentences given to a token classifier is refused, saying what the file looks like.
# usage: heads_review.sh TACH FIXTURES_DIR WORK_DIR [SHARED_DATA_DIR]
set -eu
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
tok=$fx/token_classes/tokenizer-wordpiece

# 1. eval: a masked LM given a token-classification head says the head is new.
"$tach" eval -m "$fx/heads/bert-mlm-f32" -k "$tok" -d "$fx/token_classes/ner.conll" --head token-classification \
  --runs-dir "$work/runs" --run-id tokcls > "$work/eval.out" 2>&1 || { cat "$work/eval.out"; fail "eval exited $?"; }
grep -q "newly initialized: \['classifier.bias', 'classifier.weight'\]" "$work/eval.out" ||
  { cat "$work/eval.out"; fail "eval's terminal does not say the head is new"; }
grep -q "newly initialized" "$work/runs/tokcls/summary.txt" || fail "summary.txt does not say the head is new"

# 1b. bench: the same note on the terminal, in run.log, summary.txt and summary.json.
"$tach" bench -m "$fx/heads/roberta-mlm-f32" --head token-classification -b 1 -s 8 --runs-dir "$work/runs" \
  --run-id bench > "$work/bench.out" 2>&1 || { cat "$work/bench.out"; fail "bench exited"; }
for f in "$work/bench.out" "$work/runs/bench/run.log" "$work/runs/bench/summary.txt" "$work/runs/bench/summary.json"; do
  grep -q "RobertaForTokenClassification were not initialized .* newly initialized" "$f" ||
    { cat "$work/bench.out"; fail "$f does not say the head is new"; }
done

# 2. eval: a table of sentences (GLUE's TSV) is not CoNLL text.
printf 'sentence\tlabel\nit '"'"'s a charming and often affecting journey . \t1\nunflinchingly bleak \t0\n' > "$work/dev.tsv"
if "$tach" eval -m "$fx/heads/bert-tokcls-f32" -k "$tok" -d "$work/dev.tsv" --limit 10 --runs-dir "$work/runs" \
  > "$work/tsv.out" 2>&1; then
  cat "$work/tsv.out"; fail "a TSV of sentences was read as CoNLL"
fi
grep -q "a table with a sentence per line" "$work/tsv.out" || { cat "$work/tsv.out"; fail "the TSV error"; }
# 3. eval: SQuAD v2.0 data with no unanswerable question has no NoAns group (the official script
# leaves it out) on the terminal, in the JSON and in the report.
qa_tok=$fx/question_answering/tokenizer-tiny
ctx="The Amazon rainforest is the largest forest in South America. Most of it is in Brazil, and Peru has a part of the basin."
printf '{"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "%s", "qas": [{"id": "q0", "question": "Where is most of the forest?", "answers": [{"text": "Brazil", "answer_start": 79}], "is_impossible": false}]}]}]}\n' \
  "$ctx" > "$work/v2-answerable.json"
"$tach" eval -m "$fx/heads/bert-qa-f32" -k "$qa_tok" -d "$work/v2-answerable.json" -s 32 --doc-stride 16 \
  --runs-dir "$work/runs" --run-id qa-v2 > "$work/qa.out" 2>&1 || { cat "$work/qa.out"; fail "eval on SQuAD v2"; }
grep -q "HasAns" "$work/qa.out" || { cat "$work/qa.out"; fail "no HasAns line"; }
if grep -q "NoAns" "$work/qa.out" "$work/runs/qa-v2/question_answering.json" "$work/runs/qa-v2/summary.txt"; then
  cat "$work/qa.out"; fail "a NoAns group with no questions is shown"
fi
"$tach" report "$work/runs/qa-v2" > /dev/null 2>&1 || fail "tach report on the QA run"
grep -q "<td>-</td><td>-</td>" "$work/runs/qa-v2/report.html" || fail "the report scores an empty NoAns group"
# 4. eval: a QA model given a table of sentences says what the file looks like, not the JSON
# library's parse error.
if "$tach" eval -m "$fx/heads/bert-qa-f32" -k "$qa_tok" -d "$work/dev.tsv" --runs-dir "$work/runs" > "$work/qa-tsv.out" 2>&1; then
  fail "a TSV was read as SQuAD data"
fi
grep -q "this file is a table (tsv rows), which a sequence classifier reads, not SQuAD-format data .*; evaluate it with -m and a sequence classifier" "$work/qa-tsv.out" || { cat "$work/qa-tsv.out"; fail "the QA TSV error"; }
grep -q "json.exception" "$work/qa-tsv.out" && fail "the JSON library's message is shown"
echo ok
