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

# 2. eval: a table of sentences (GLUE's TSV) is not CoNLL text.
printf 'sentence\tlabel\nit '"'"'s a charming and often affecting journey . \t1\nunflinchingly bleak \t0\n' > "$work/dev.tsv"
if "$tach" eval -m "$fx/heads/bert-tokcls-f32" -k "$tok" -d "$work/dev.tsv" --limit 10 --runs-dir "$work/runs" \
  > "$work/tsv.out" 2>&1; then
  cat "$work/tsv.out"; fail "a TSV of sentences was read as CoNLL"
fi
grep -q "a table with a sentence per line" "$work/tsv.out" || { cat "$work/tsv.out"; fail "the TSV error"; }
echo ok
