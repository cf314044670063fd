#!/bin/sh
# tach answer and tach eval on a question-answering model, through the binary: answer --json
# equals transformers' question-answering pipeline (pipeline.json of make_qa_golden.py) on a short
# context and on one longer than the window; a question longer than the window and bad options
# are refused. tach eval on SQuAD v1.1 (official layout) and v2.0 (flat JSONL) files writes the
# pipeline's best answers (predictions.json) and the official exact match and F1 (eval.json); v1.1
# data whose answer is not at its answer_start is refused, naming the record.
# usage: question_answering.sh TACH FIXTURES_DIR WORK_DIR
set -eu
command -v python3 > /dev/null || { echo "skip: python3 (to read the JSON) is not installed"; exit 77; }
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
qa=$fx/question_answering
model=$fx/heads/bert-qa-f32
[ -d "$model" ] || { echo "skip: $model is missing"; exit 77; }
tok=$qa/tokenizer-tiny

# 1. answer --json against the pipeline, for each bert-qa-f32 case of pipeline.json.
python3 - "$qa/pipeline.json" > "$work/cases.txt" <<'EOF2'
import json, sys
for i, c in enumerate(json.load(open(sys.argv[1]))):
    if c["model"] != "bert-qa-f32":
        continue
    o = c["options"]
    args = ["--max-length", str(o["max_seq_len"])]
    if "doc_stride" in o: args += ["--doc-stride", str(o["doc_stride"])]
    if "top_k" in o: args += ["--top-k", str(o["top_k"])]
    if "max_answer_len" in o: args += ["--max-answer-len", str(o["max_answer_len"])]
    if o.get("handle_impossible_answer"): args += ["--handle-impossible-answer"]
    print(i, " ".join(args))
EOF2
while read -r index args; do
  python3 -c "import json,sys; c=json.load(open(sys.argv[1]))[int(sys.argv[2])]; open(sys.argv[3],'w').write(c['question']); open(sys.argv[4],'w').write(c['context'])" \
    "$qa/pipeline.json" "$index" "$work/question.txt" "$work/context.txt"
  # shellcheck disable=SC2086
  "$tach" answer -m "$model" -k "$tok" -q "$(cat "$work/question.txt")" --context-file "$work/context.txt" $args \
    --json > "$work/answer$index.json"
  python3 - "$work/answer$index.json" "$qa/pipeline.json" "$index" <<'EOF2'
import json, sys
got = json.load(open(sys.argv[1]))
want = json.load(open(sys.argv[2]))[int(sys.argv[3])]
assert got["schema"] == "tach.answer/1" and got["model"]["head"] == "question-answering", got["model"]
assert len(got["answers"]) == len(want["answers"]), (got["answers"], want["answers"])
for a, w in zip(got["answers"], want["answers"]):
    assert (a["answer"], a["start"], a["end"]) == (w["answer"], w["start"], w["end"]), (a, w)
    assert abs(a["score"] - w["score"]) < 1e-4, (a, w)
print("ok: answer --json equals the pipeline (%s, %d windows, %d answers)" % (want["question"], want["windows"], len(want["answers"])))
EOF2
done < "$work/cases.txt"
"$tach" answer -m "$model" -k "$tok" -q "Where is the forest?" -c "The Amazon rainforest is in South America." \
  --max-length 32 > "$work/answer.txt"
grep -q '^answer      0.0314  "The Amazon rainforest"  (characters 0-21)$' "$work/answer.txt" \
  || { echo "FAIL: tach answer's text output:"; cat "$work/answer.txt"; exit 1; }
echo "ok: answer's text output"
# Scores to 4 significant digits (a small one shows its order, not 0.0000), equal to --json's; the
# time to answer comes with the load it was measured under, in both.
for fmt in text json; do
  flag=""
  [ $fmt = json ] && flag=--json
  "$tach" answer -m "$model" -k "$tok" -q "Where is the forest?" -c "The Amazon rainforest is in South America." \
    --max-length 32 --top-k 30 $flag > "$work/answers.$fmt"
done
python3 - "$work/answers.text" "$work/answers.json" <<'EOF2'
import json, re, sys
text = open(sys.argv[1]).read()
got = json.load(open(sys.argv[2]))
shown = [float(m) for m in re.findall(r"^answer \d+ +(\S+)  ", text, re.M)]
want = [a["score"] for a in got["answers"]]
assert len(shown) == len(want) and min(want) < 0.005, (shown, want)
for s, w in zip(shown, want):
    assert abs(s - w) <= 1e-3 * w, (s, w)
assert set(got["load"]) == {"measured", "other_cores_mean", "other_cores_max", "load_average_1m", "contended"}, got["load"]
assert re.search(r"^load        other processes used", text, re.M), text
# The text and the JSON are two runs, each under its own load: whether each was contended is its own.
assert not got["load"]["contended"] or got["load"]["other_cores_mean"] > 0, got["load"]
print("ok: answer's scores to 4 significant digits (the least %s); the load it ran under" % shown[-1])
EOF2

expect_failure() {  # expect_failure STATUS TEXT COMMAND...: exits STATUS and says TEXT
  want_code=$1
  want_text=$2
  shift 2
  set +e
  msg=$("$@" 2>&1)
  code=$?
  set -e
  if [ "$code" -ne "$want_code" ] || ! echo "$msg" | grep -qF -- "$want_text"; then
    echo "FAIL: $* exited $code (want $want_code) saying:"
    echo "$msg" | tail -3
    exit 1
  fi
  echo "ok: exit $code: $(echo "$msg" | grep -F -- "$want_text" | head -1)"
}
long="where is the largest city of the country where most of the forest is and who lives there and when was it built"
expect_failure 1 'the question is longer than the window' "$tach" answer -m "$model" -k "$tok" -q "$long" -c "Paris." \
  --max-length 20
expect_failure 2 '--doc-stride 11 leaves no new context' "$tach" answer -m "$model" -k "$tok" -q "where?" \
  -c "$(cat "$qa/squad-v1.json")" --max-length 16 --doc-stride 11
expect_failure 2 'is longer than the 32 positions' "$tach" answer -m "$model" -k "$tok" -q "where?" -c "x" --max-length 64
expect_failure 2 'give the context with --context or --context-file' "$tach" answer -m "$model" -k "$tok" -q "where?"
expect_failure 2 'the context is empty (--context "")' "$tach" answer -m "$model" -k "$tok" -q "where?" -c ""
: > "$work/empty.txt"
expect_failure 1 'empty.txt: the context file is empty' "$tach" answer -m "$model" -k "$tok" -q "where?" \
  --context-file "$work/empty.txt"
# The pipeline's default stride (half the window) is kept where it leaves no new context, as
# transformers keeps it; the error says it is the default.
expect_failure 2 '--doc-stride 8 (not given: the default, half of --max-length 16 up to 128) leaves no new context' \
  "$tach" answer -m "$model" -k "$tok" -q "where is the largest forest?" -c "$(cat "$qa/squad-v1.json")" --max-length 16
expect_failure 2 '--top-k' "$tach" answer -m "$model" -k "$tok" -q "where?" -c "x" --top-k 0

# 2. eval on SQuAD files: the pipeline's answers and the official scores.
for version in v1 v2; do
  data=$qa/squad-v1.json
  [ $version = v2 ] && data=$qa/squad-v2.jsonl
  "$tach" eval -m "$model" --tokenizer "$tok" -d "$data" -s 32 --doc-stride 16 --runs-dir "$work/runs" \
    --run-id $version > "$work/eval-$version.txt"
  python3 - "$work/runs/$version" "$qa/eval.json" $version <<'EOF2'
import json, sys
run, golden, version = sys.argv[1:]
want = [c for c in json.load(open(golden)) if c["version"] == version][0]
assert json.load(open(run + "/predictions.json")) == want["predictions"], json.load(open(run + "/predictions.json"))
got = json.load(open(run + "/question_answering.json"))
assert got["schema"] == "tach.eval.question_answering/1" and got["squad_version"] == ("v2.0" if version == "v2" else "v1.1")
scores = got["passes"][0]["scores"]
for k, v in want["scores"].items():
    assert abs(scores[k] - v) < 1e-9, (k, scores[k], v)
load = got["passes"][0]["load"]
assert set(load) == {"other_cores_mean", "other_cores_max", "load_average_1m", "contended"}, load
print("ok: eval on SQuAD %s: predictions and scores equal the pipeline and the official rules (EM %.2f, F1 %.2f)" % (version, scores["exact_match"], scores["f1"]))
EOF2
  grep -Eq '^            exact match [0-9.]+%  F1 [0-9.]+%  \(' "$work/eval-$version.txt" \
    || { echo "FAIL: scores without their unit (%):"; cat "$work/eval-$version.txt"; exit 1; }
done
grep -Eq "HasAns      exact match [0-9.]+%  F1 [0-9.]+%" "$work/eval-v2.txt" || { echo "FAIL: no HasAns line"; cat "$work/eval-v2.txt"; exit 1; }
python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); d['data'][0]['paragraphs'][0]['qas'][1]['answers'][0]['answer_start'] += 1
json.dump(d, open(sys.argv[2], 'w'))" "$qa/squad-v1.json" "$work/moved.json"
expect_failure 1 'moved.json: data[0].paragraphs[0].qas[1] (id q1): the answer "bowls" is not in its context' \
  "$tach" eval -m "$model" --tokenizer "$tok" -d "$work/moved.json" -s 32 --runs-dir "$work/runs"
# Another task's data: the error says what the model reads and what the file looks like (it said
# "line 1: not JSON" for CoNLL text).
expect_failure 1 'not SQuAD-format data (v1.1/v2.0 JSON, or records with id, context, question and answers) as a question-answering model reads it; evaluate it with -m and a token classifier' \
  "$tach" eval -m "$model" --tokenizer "$tok" -d "$fx/token_classes/ner.conll" -s 32 --runs-dir "$work/runs"
expect_failure 1 'ner.conll: this file is CoNLL text, which a token classifier reads' \
  "$tach" eval -m "$model" --tokenizer "$tok" -d "$fx/token_classes/ner.conll" -s 32 --runs-dir "$work/runs"
expect_failure 1 'this file is JSON records with tokens and tags, which a token classifier reads' \
  "$tach" eval -m "$model" --tokenizer "$tok" -d "$fx/token_classes/ner.jsonl" -s 32 --runs-dir "$work/runs"
# A masked-LM checkpoint with --head question-answering: a new head, with transformers' note.
"$tach" eval -m "$fx/heads/bert-mlm-f32" --tokenizer "$tok" -d "$qa/squad-v1.json" -s 32 --head question-answering \
  --runs-dir "$work/runs" > "$work/eval-new-head.txt"
grep -q "note        Some weights of BertForQuestionAnswering were not initialized" "$work/eval-new-head.txt" \
  || { echo "FAIL: no new-head note:"; cat "$work/eval-new-head.txt"; exit 1; }
echo "ok: eval --head question-answering on a masked LM says its head is new"
# 3. bench on a question-answering model: MLPerf's 384 tokens, or the model's positions when fewer
# (this one has 32), unless -s says otherwise.
for s in default 16; do
  flags=""
  [ $s = default ] || flags="-s $s"
  # shellcheck disable=SC2086
  "$tach" bench -m "$model" -b 1 $flags --min-runs 2 --max-runs 2 --warmup 1 --runs-dir "$work/runs" \
    --run-id bench-$s > /dev/null 2>&1
  python3 - "$work/runs/bench-$s/config.json" $s <<'EOF2'
import json, sys
want = [32] if sys.argv[2] == "default" else [int(sys.argv[2])]
got = json.load(open(sys.argv[1]))["seq_lens"]
assert got == want, (got, want)
print("ok: bench on a QA model (-s %s) runs %s tokens" % (sys.argv[2], got))
EOF2
done
echo "question answering through the binary: ok"
