#!/usr/bin/env bash
# tach shrink through the binary on tiny fixtures: f32, int8 and heads:0.5 rows with their variant,
# accuracy and load; each variant's accuracy equal to tach eval's on the same model and dtype; the
# findings naming the frontier; tach compare --by variant and report.html's Pareto charts on the run;
# a run cut short resumed to the same rows; and each bad input refused (exit 2) before anything runs.
# usage: shrink.sh TACH FIXTURES_DIR WORK_DIR
set -euo pipefail
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
bert=$fx/encoders/bert-cls2-f32
tok=$fx/tokenizers/tiny-wordpiece
data=$fx/bench/six_rows.csv
common=(-k "$tok" -d "$data" --text-column sentence --device cpu -t 1 -b 1,2 -s 8 --runs 3 --warmup 1 --no-progress)

out=$("$tach" shrink -m "$bert" "${common[@]}" --dtype f32,int8 --prune heads:0.5 --runs-dir "$work" --run-id s \
  --report) || fail "shrink exited $?"
echo "$out"
run=$work/s
grep -q "on the frontier" <<< "$out" || fail "no frontier finding on stdout"
grep -q "on the frontier" "$run/summary.txt" || fail "no frontier finding in summary.txt"
[ -s "$run/models/heads-0.5/model.safetensors" ] || fail "no pruned model"
python3 - "$run/results.jsonl" <<'PY' || fail "results.jsonl rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = sorted((r["variant"], r["dtype"], r["batch_size"]) for r in rows)
want = sorted((v, d, b) for v, d in [("f32", "f32"), ("int8", "int8"), ("heads:0.5", "f32")] for b in (1, 2))
assert got == want, got
for r in rows:
    assert r["status"] == "ok", r["reason"]
    assert r["id"].startswith(r["variant"] + "/"), r["id"]
    assert r["accuracy"]["examples"] == 6, r["accuracy"]
    assert r["batch_latency_ms"]["p95"] >= r["batch_latency_ms"]["median"] > 0
    assert r["throughput"]["samples_per_s"] > 0 and r["memory"]["allocator"]["weights"]["current_bytes"] > 0
    assert "load" in r and r["stopped_by"].startswith("count: 3 runs"), r["stopped_by"]
# Every batch of a variant carries the one accuracy of its pass.
for v in {r["variant"] for r in rows}:
    assert len({json.dumps(r["accuracy"]) for r in rows if r["variant"] == v}) == 1
print("rows ok")
PY

# Each variant is named with its own model and what was done to the base to make it, in
# summary.txt and in its own run (variant.json, and its report's header), not the base alone.
grep -q "^  heads:0.5  $run/models/heads-0.5: $bert with 4 of 8 attention heads removed (heads:0.5, ranked by magnitude), in f32$" \
  "$run/summary.txt" || fail "summary.txt does not name the pruned variant's model: $(head -5 "$run/summary.txt")"
grep -q "^  int8       $bert at int8$" "$run/summary.txt" || fail "summary.txt does not name the int8 variant"
python3 - "$run/variants/heads-0.5/variant.json" "$run/models/heads-0.5" "$bert" <<'PY' || fail "variant.json"
import json, sys
v = json.load(open(sys.argv[1]))
assert (v["variant"], v["model"], v["base_model"], v["dtype"]) == ("heads:0.5", sys.argv[2], sys.argv[3], "f32"), v
PY
"$tach" report "$run/variants/heads-0.5" > /dev/null 2>&1 || fail "tach report on a variant's run"
grep -q "<h1>tach report: heads:0.5 of $bert</h1>" "$run/variants/heads-0.5/report.html" ||
  fail "the variant's report header: $(grep -o '<h1>[^<]*' "$run/variants/heads-0.5/report.html")"
grep -q "<dt>variant</dt><dd>$run/models/heads-0.5: " "$run/variants/heads-0.5/report.html" ||
  fail "the variant's report does not say what was done"

# Each variant's accuracy is tach eval's on the same model and dtype, to the last digit.
n_eval=0
eval_accuracy() {  # model dtype
  n_eval=$((n_eval + 1))
  "$tach" eval -m "$1" -k "$tok" -d "$data" --text-column sentence --device cpu -t 1 --dtype "$2" --runs-dir "$work/eval" \
    --run-id "e$n_eval" > /dev/null 2>&1 || fail "tach eval -m $1 --dtype $2"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(repr(r["accuracy"]), repr(r["macro_f1"]))' \
    "$work/eval/e$n_eval/accuracy.json"
}
shrink_accuracy() {  # variant
  python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["variant"]==sys.argv[2]][0]["accuracy"]; print(repr(r["accuracy"]), repr(r["macro_f1"]))' "$run/results.jsonl" "$1"
}
for pair in "f32 $bert f32" "int8 $bert int8" "heads:0.5 $run/models/heads-0.5 f32"; do
  read -r variant model dtype <<< "$pair"
  a=$(shrink_accuracy "$variant")
  eval_accuracy "$model" "$dtype" > "$work/eval.txt"
  b=$(cat "$work/eval.txt")
  [ "$a" = "$b" ] || fail "variant $variant: shrink's accuracy $a, tach eval's $b"
done
echo "ok: accuracies equal tach eval's"

# The run reads as any run: compare by variant, and the report's Pareto charts.
cmp_out=$(cd "$work" && "$tach" compare "$run" --by variant) || fail "compare --by variant exited $?"
grep -q "int8" <<< "$cmp_out" || fail "compare --by variant names no int8 side: $cmp_out"
grep -q "heads:0.5" <<< "$cmp_out" || fail "compare --by variant names no heads:0.5 side: $cmp_out"
grep -q "Variants: accuracy against latency and memory" "$run/report.html" || fail "no shrink panel in report.html"
[ "$(grep -o "<svg class='chart line-chart'" "$run/report.html" | wc -l)" -ge 4 ] || fail "too few charts in report.html"

# A run cut short: the last rows and one variant's sweep half gone, a torn line at the end.
cp -r "$run" "$work/cut"
head -n 3 "$run/results.jsonl" > "$work/cut/results.jsonl"
printf '{"schema":"tach.bench.po' >> "$work/cut/results.jsonl"
head -n 1 "$run/variants/heads-0.5/results.jsonl" > "$work/cut/variants/heads-0.5/results.jsonl"
rm -rf "$work/cut/models/heads-0.5"
res=$("$tach" shrink --resume "$work/cut" --no-progress 2>&1) || fail "resume exited $?: $res"
python3 - "$run/results.jsonl" "$work/cut/results.jsonl" <<'PY' || fail "resumed rows"
import json, sys
full = [json.loads(l) for l in open(sys.argv[1])]
cut = [json.loads(l) for l in open(sys.argv[2])]
assert sorted(r["id"] for r in cut) == sorted(r["id"] for r in full), [r["id"] for r in cut]
# The rows kept are the same lines; the rest measured again.
assert [r["finished_at"] for r in cut[:3]] == [r["finished_at"] for r in full[:3]]
print("resume ok")
PY
# Pruned by importance on calibration data (prune's scores say so), beside a student with the
# model's labels (the model pruned above, as a directory): every variant's rows are there.
"$tach" shrink -m "$bert" "${common[@]}" --dtype f32 --prune ffn:0.5 --prune-by importance --calibration-data "$data" \
  --calibration-samples 4 --student "$run/models/heads-0.5" --runs-dir "$work" --run-id imp > "$work/imp.txt" 2>&1 || fail "--prune-by importance: $(cat "$work/imp.txt")"
python3 - "$work/imp" <<'PY' || fail "--prune-by importance"
import json, sys
scores = json.load(open(sys.argv[1] + "/models/ffn-0.5/prune_scores.json"))
assert scores["by"] == "importance" and scores["calibration"]["samples"] == 4, scores.get("calibration")
rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
assert sorted(r["variant"] for r in rows) == ["f32", "f32", "ffn:0.5", "ffn:0.5", "student:heads-0.5",
                                              "student:heads-0.5"], [r["variant"] for r in rows]
assert all(r["accuracy"]["examples"] == 6 for r in rows)
assert json.load(open(sys.argv[1] + "/shrink.json"))["prune_by"] == "importance"
PY

# A real kill: SIGKILL once the first variant's first point is in, then --resume: every row once.
"$tach" shrink -m "$bert" -k "$tok" -d "$data" --text-column sentence --device cpu -t 1 -b 1,2,4 -s 32 --runs 1500 \
  --warmup 1 --no-progress --dtype f32,int8 --runs-dir "$work" --run-id killed > "$work/killed.txt" 2>&1 &
pid=$!
for _ in $(seq 600); do
  [ -s "$work/killed/variants/f32/results.jsonl" ] && break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
"$tach" shrink --resume "$work/killed" --no-progress > "$work/resumed.txt" 2>&1 || fail "resume after a kill: $(cat "$work/resumed.txt")"
python3 - "$work/killed/results.jsonl" <<'PY' || fail "rows after a kill and --resume"
import json, sys
ids = [json.loads(l)["id"] for l in open(sys.argv[1])]
want = [f"{v}/cpu/{v}/t1/b{b}/s32" for v in ("f32", "int8") for b in (1, 2, 4)]
assert sorted(ids) == sorted(want), ids
print("killed and resumed:", len(ids), "rows")
PY

# tach bench --resume on a shrink run would add the base model's points beside the variants' rows.
set +e
err=$("$tach" bench --resume "$run" 2>&1)
got=$?
set -e
[ "$got" = 1 ] && grep -qF "is a tach shrink run: continue it with tach shrink --resume" <<< "$err" ||
  fail "tach bench --resume on a shrink run exited $got: $err"

expect_usage() {  # text, args...
  local text=$1
  shift
  set +e
  err=$("$tach" shrink "${common[@]}" --runs-dir "$work" --run-id bad "$@" 2>&1)
  got=$?
  set -e
  [ "$got" = 2 ] || fail "tach shrink $* exited $got, want 2: $err"
  grep -qF -- "$text" <<< "$err" || fail "tach shrink $*: want '$text' in: $err"
  [ ! -e "$work/bad/results.jsonl" ] || fail "tach shrink $* measured something"
}
expect_usage "--prune attention:0.5: not a pruning tach shrink knows" -m "$bert" --prune attention:0.5
expect_usage "heads takes a fraction in [0, 1), got 1.5" -m "$bert" --prune heads:1.5
expect_usage "--dtype f64: not one of" -m "$bert" --dtype f64
expect_usage "dtype f16 computes on a GPU only" -m "$bert" --dtype f32,f16
expect_usage "differ from the model's" -m "$bert" --student "$fx/distill/bert2-bert1-cls3/student"
# A per-token head is named as such (its tagged words are not blamed for not being rows).
expect_usage "tach shrink compares sequence classifiers; $fx/heads/bert-tokcls-f32 is a token classifier" \
  -m "$fx/heads/bert-tokcls-f32"
# A LoRA run's output is an adapter: named as such, with the merge that makes it a model.
mkdir -p "$work/adapter-only" && echo '{"peft_type": "LORA"}' > "$work/adapter-only/adapter_config.json"
expect_usage "a LoRA adapter (adapter_config.json), not a model: tach merge --model BASE --adapter" -m "$bert" \
  --student "$work/adapter-only"
# A part of a family without a pruning rule: prune's own message, under the variant's name.
expect_usage "--prune heads:0.5: tach prune: MPNet encoders (all-mpnet-base-v2) cannot be written with fewer attention heads" \
  -m "$fx/encoders/mpnet-cls2-f32" --prune heads:0.5
expect_usage "--calibration-data and --calibration-samples are for --prune-by importance" -m "$bert" \
  --prune heads:0.5 --calibration-samples 4
expect_usage "--resume continues a run with its own shrink.json" --resume "$run"
# A directory that holds a run is refused (as bench refuses one: status 1), naming --resume.
set +e
err=$("$tach" shrink -m "$bert" -k "$tok" -d "$data" --text-column sentence -s 8 --runs-dir "$work" --run-id s 2>&1)
got=$?
set -e
[ "$got" = 1 ] || fail "a used run directory: exited $got: $err"
grep -qF "already holds a run (shrink.json); choose another --run-id, or continue it with tach shrink --resume" \
  <<< "$err" || fail "a used run directory: $err"
echo "ok"
