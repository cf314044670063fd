#!/bin/sh
# tach classify and tach eval on a token classifier, against transformers and seqeval
# (tests/fixtures/token_classes, written by scripts/golden/make_token_class_golden.py):
#  - classify --json: each text's entity groups equal the token-classification pipeline's
#    (aggregation "simple"), and the text output shows them;
#  - eval on a CoNLL file and on JSONL records with integer tags: seqeval's metrics of run_ner's
#    predictions, default mode and strict IOB2;
#  - errors: a tag scheme that does not parse, tags the scheme does not have, a malformed line.
# usage: token_classes.sh TACH FIXTURES_DIR WORK_DIR
set -eu
command -v python3 > /dev/null || { echo "skip: python3 (to read the JSON) is not installed"; exit 77; }
tach=$1
fx=$2
work=$3
model=$fx/heads/bert-tokcls-f32
tok=$fx/token_classes/tokenizer-wordpiece
[ -f "$model/config.json" ] || { echo "skip: no $model"; exit 77; }
rm -rf "$work"
mkdir -p "$work"

# classify: entity groups
"$tach" classify -m "$model" -k "$tok" --text "John Smith lives in New York." --text "Zürich ☃ and Köln are big" \
  --warmup 0 --repeat 1 --json > "$work/classify.json"
python3 - "$work/classify.json" "$fx/token_classes/entity_groups.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1], encoding="utf-8"))
want = {r["text"]: r for r in json.load(open(sys.argv[2], encoding="utf-8"))["models"]["bert-tokcls-f32"]}
for text, row in zip(got["input"]["texts"], got["rows"]):
    w = want[text]["simple"]
    g = row["entities"]
    assert len(g) == len(w), (text, g, w)
    for a, b in zip(g, w):
        assert (a["entity_group"], a["word"], a["start"], a["end"]) == (b["entity_group"], b["word"], b["start"], b["end"]), (a, b)
        assert abs(a["score"] - b["score"]) < 1e-4, (a, b)
    labels = [t["entity"] for t in row["tokens"] if t["entity"] != "O"]
    assert labels == [t["entity"] for t in want[text]["none"]], (labels, want[text]["none"])
    assert len(row["logits"]) == len(want[text]["ids"]), "the raw logits cover every token"
print("ok: classify --json entity groups equal the pipeline's")
PY
"$tach" classify -m "$model" -k "$tok" --text "John Smith lives in New York." --warmup 0 --repeat 1 > "$work/classify.txt"
grep -q "entities  PER 'john smith' \[0, 10)" "$work/classify.txt" || { cat "$work/classify.txt"; exit 1; }
grep -q "tokens    john I-PER" "$work/classify.txt" || { cat "$work/classify.txt"; exit 1; }
echo "ok: classify prints entity groups and tokens"
"$tach" classify -m "$model" -k "$tok" --text "Zürich ☃ and Köln are big" --aggregation first --warmup 0 --repeat 1 --json |
  python3 -c '
import json, sys
row = json.load(sys.stdin)["rows"][0]
assert row["aggregation"] == "first", row["aggregation"]
assert [(e["entity_group"], e["word"]) for e in row["entities"]] == [("PER", "zurich ☃"), ("LOC", "and"), ("PER", "koln are big")], row["entities"]
print("ok: --aggregation first joins words as the pipeline does")
'


# eval: seqeval's metrics, CoNLL and JSONL, default and strict IOB2
"$tach" eval -m "$model" -k "$tok" -d "$fx/token_classes/ner.conll" --runs-dir "$work/runs" --run-id conll > "$work/eval.txt"
grep -q "micro avg" "$work/eval.txt" || { cat "$work/eval.txt"; exit 1; }
"$tach" eval -m "$model" -k "$tok" -d "$fx/token_classes/ner.jsonl" --tag-scheme IOB2 --runs-dir "$work/runs" \
  --run-id jsonl-iob2 > /dev/null
"$tach" eval -m "$fx/heads/distilbert-tokcls-f32" -k "$tok" -d "$fx/token_classes/ner.conll" --tag-scheme IOB2 \
  --runs-dir "$work/runs" --run-id distilbert-iob2 > /dev/null
python3 - "$work/runs" "$fx/token_classes/ner_eval.json" <<'PY'
import json, sys
runs, golden = sys.argv[1], json.load(open(sys.argv[2], encoding="utf-8"))
for run, scheme, model in (("conll", "conlleval", "bert-tokcls-f32"), ("jsonl-iob2", "IOB2", "bert-tokcls-f32"),
                           ("distilbert-iob2", "IOB2", "distilbert-tokcls-f32")):
    want = golden["models"][model]["metrics"]
    p = json.load(open("%s/%s/token_classification.json" % (runs, run)))["passes"][0]
    w = want[scheme]
    assert p["scheme"] == scheme, p["scheme"]
    for key in ("precision", "recall", "f1", "support"):
        assert p["micro"][key] == w["micro"][key], (run, key, p["micro"], w["micro"])
    assert [(t["type"], t["precision"], t["recall"], t["f1"], t["support"]) for t in p["per_type"]] == \
        [(t["type"], t["precision"], t["recall"], t["f1"], t["support"]) for t in w["per_type"]], (run, p["per_type"])
    assert p["word_accuracy"] == w["accuracy"], (p["word_accuracy"], w["accuracy"])
    assert p["words_cut"] == 0
    # The rate's timed pass comes with other processes' CPU use over it, as every timed command's.
    assert set(p["load"]) == {"other_cores_mean", "other_cores_max", "load_average_1m", "contended"}, p.get("load")
print("ok: eval equals seqeval on run_ner's predictions (CoNLL default mode, JSONL strict IOB2; BERT and DistilBERT)")
PY
python3 - "$work/runs/conll/token_classification.json" "$work/eval.txt" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))["passes"][0]["load"]
assert ("CONTENDED: other processes used" in open(sys.argv[2]).read()) == load["contended"], load
PY
echo "ok: eval's pass says the load it ran under (CONTENDED when other processes took the cores)"

# --tag-names: integer tags named by the dataset's own order (here the labels reversed, so the
# truth changes and the scores with it; the names must be what the file's ids mean)
"$tach" eval -m "$model" -k "$tok" -d "$fx/token_classes/ner.jsonl" --tag-names I-LOC,B-LOC,I-PER,B-PER,O \
  --runs-dir "$work/runs" --run-id names > /dev/null
python3 - "$work/runs" <<'PY'
import json, sys
names = json.load(open(sys.argv[1] + "/names/token_classification.json"))["passes"][0]
same = json.load(open(sys.argv[1] + "/conll/token_classification.json"))["passes"][0]
assert names["word_accuracy"] != same["word_accuracy"], (names["word_accuracy"], same["word_accuracy"])
PY
echo "ok: --tag-names names integer tags"
cp "$fx/token_classes/ner.conll" "$work/ner-conll.json"  # the extension says JSON; the option says CoNLL
"$tach" eval -m "$model" -k "$tok" -d "$work/ner-conll.json" --dataset-format conll --runs-dir "$work/runs" --run-id fmt > /dev/null
cmp "$work/runs/fmt/summary.txt" "$work/runs/conll/summary.txt" > /dev/null 2>&1 || \
  grep -q "micro avg     0.5606    0.5286    0.5441" "$work/runs/fmt/summary.txt" || { cat "$work/runs/fmt/summary.txt"; exit 1; }
echo "ok: --dataset-format conll"

# -s cuts sentences: the words past it are counted and left out of both sides
"$tach" eval -m "$model" -k "$tok" -d "$fx/token_classes/ner.conll" -s 6 --runs-dir "$work/runs" --run-id cut > "$work/cut.txt"
python3 - "$work/runs/cut/token_classification.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["passes"][0]
assert p["words_cut"] > 0 and p["words"] == 129, p
assert p["micro"]["support"] < 70, p["micro"]
PY
grep -q "have no prediction" "$work/cut.txt" || { cat "$work/cut.txt"; exit 1; }
echo "ok: -s 6 cuts words, counted and said"
printf 'Ada B-PER\nLovelace I-PER\nin O\nLondon B-GPE\n' > "$work/other-tags.conll"
"$tach" eval -m "$model" -k "$tok" -d "$work/other-tags.conll" --runs-dir "$work/runs" --run-id other-tags |
  grep -q "tags the model does not have among its labels, so never predicts: 'B-GPE' (1x); entity types it cannot predict (every one of their entities counts as missed): GPE" ||
  { cat "$work/runs/other-tags/summary.txt"; exit 1; }
echo "ok: tags the model lacks are named, and the entity types it cannot predict"

# errors
set +e
msg=$("$tach" eval -m "$model" -k "$tok" -d "$fx/token_classes/ner.conll" --tag-scheme IOB3 --runs-dir "$work/runs" 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] && echo "$msg" | grep -q "IOB3" && echo "$msg" | grep -q "BILOU" || { echo "IOB3: rc $rc: $msg"; exit 1; }
set +e
msg=$("$tach" eval -m "$model" -k "$tok" -d "$fx/token_classes/ner.conll" --tag-scheme IOE2 --runs-dir "$work/runs" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] && echo "$msg" | grep -q "IOE2" && echo "$msg" | grep -q "B-" || { echo "IOE2: rc $rc: $msg"; exit 1; }
printf 'EU B-ORG\nrejects\n' > "$work/bad.conll"
set +e
msg=$("$tach" eval -m "$model" -k "$tok" -d "$work/bad.conll" --runs-dir "$work/runs" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] && echo "$msg" | grep -q "bad.conll:2" || { echo "malformed: rc $rc: $msg"; exit 1; }
echo "ok: a scheme that does not parse, tags outside the scheme and a malformed line are errors that say so"

# tach bench --accuracy on a token classifier reads tagged words, as tach eval does: a table of
# texts and labels is refused before a run directory is made, saying what the file is and who reads it
printf 'text\tlabel\nhello world\tO\n' > "$work/labels.tsv"
set +e
msg=$("$tach" bench -m "$model" -k "$tok" --accuracy -d "$work/labels.tsv" -b 1 -s 8 --runs 1 --no-progress \
  --runs-dir "$work/runs" --run-id table-accuracy 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] && echo "$msg" | grep -q "which a sequence classifier reads" && [ ! -e "$work/runs/table-accuracy" ] ||
  { echo "bench --accuracy: rc $rc: $msg"; exit 1; }
echo "ok: bench --accuracy on a token classifier refuses a table of labelled texts, saying so"

# SQuAD data given to a token classifier: the error says what the file is and what a token
# classifier reads (it said "an object without 'tokens': read as splits ... keys are: data, version")
set +e
msg=$("$tach" eval -m "$model" -k "$tok" -d "$fx/question_answering/squad-v1.json" --runs-dir "$work/runs" 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] && echo "$msg" | grep -qF "squad-v1.json: this file is SQuAD data" &&
  echo "$msg" | grep -qF "not CoNLL text or JSON records with tokens and tags, as a token classifier reads them" ||
  { echo "SQuAD data to a token classifier: rc $rc: $msg"; exit 1; }
echo "ok: SQuAD data given to a token classifier is named as such"
