#!/usr/bin/env bash
# Usage errors and run directories, end to end: what a misspelt command or option suggests, which
# values are usage errors (exit 2), that eval and bench never write into another run's directory,
# that what cannot run anywhere is refused before a run directory is made and a sweep where no
# point ran exits 1, what an eval's summary and report say, what tach run takes, and estimate's
# table's exit status.
# Usage: usage_and_runs.sh path/to/tach path/to/tests/fixtures CASE
set -uo pipefail
tach=$1
fixtures=$2
case_name=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
data=$fixtures/bench/six_rows.csv
tok=$fixtures/tokenizers/tiny-wordpiece
base=(--runs 2 --warmup 0 --no-progress --no-tensorboard --runs-dir "$dir/runs")
quick=(-m preset:bert-tiny -s 8 "${base[@]}")
evalargs=(-m preset:bert-tiny -k "$tok" -d "$data" --text-column sentence --runs-dir "$dir/runs")

fail() {
  echo "FAIL: $*"
  exit 1
}
# expect STATUS REGEX -- ARGS...: tach ARGS exits with STATUS and its output (both streams) matches REGEX.
expect() {
  local want=$1 regex=$2
  shift 3
  "$tach" "$@" > "$dir/out" 2>&1
  local got=$?
  [ "$got" = "$want" ] || fail "tach $* exited $got, not $want: $(tail -5 "$dir/out")"
  grep -Eq -- "$regex" "$dir/out" || fail "tach $*: no '$regex' in: $(tail -5 "$dir/out")"
  echo "ok: tach $* -> $got"
}

case $case_name in
  suggestions)
    expect 2 "'bnech' is not a tach command; did you mean 'bench'\?" -- bnech -b 1
    expect 2 "did you mean --batch\?" -- bench --batchsize 8
    if grep -q "not expected" "$dir/out"; then fail "a suggestion came after CLI11's reversed list: $(cat "$dir/out")"; fi
    # Arguments nothing takes are listed in the order given.
    expect 2 "tach bench does not take: 8 9 \(" -- bench 8 9 --runs 2
    # Another command's option: this command's option for the same thing.
    expect 2 "tach eval has no option -b; did you mean --eval-batch-size\?" -- eval -b 4
    expect 2 "tach eval has no option --batch; did you mean --eval-batch-size\?" -- eval --batch 4
    expect 2 "did you mean --threads\?" -- eval --thread 2 -m preset:bert-tiny -d "$data"
    expect 2 "did you mean --dtype\?" -- classify --dtpye f32
    expect 2 "not a tach command" -- zzzzzz
    expect 2 "tach has no option --bogus" -- --bogus
    expect 2 "tach has no option --verison; did you mean --version\?" -- --verison
    # An empty bare argument to a command that takes --text says where texts go.
    expect 2 'tach embed takes its texts with --text TEXT' -- embed -m preset:bert-tiny -k "$tok" ""
    ;;
  batch_option)
    # One spelling in every command's help, the others its aliases, all three taken.
    for cmd in bench run classify embed estimate generate profile train; do
      expect 0 "-b,--batch,--batch-size,--batch-sizes" -- $cmd --help
    done
    # The help footer names the commands that take -b/--batch, and every one it names does.
    expect 0 "The batch size is -b/--batch" -- --help
    named=$(grep -o "in [a-z, -]*; eval's is --eval-batch-size" "$dir/out" | sed 's/^in //; s/;.*//; s/,//g')
    [ -n "$named" ] || fail "no command list in the footer"
    for cmd in $named eval fill-mask answer; do
      "$tach" $cmd --help > "$dir/help" 2>&1
      grep -q "The batch size is -b/--batch" "$dir/help" || fail "tach $cmd --help has no batch line"
      case " $named " in
        *" $cmd "*) grep -q -- "-b,--batch" "$dir/help" || fail "the footer names $cmd, which has no -b/--batch" ;;
        *) if grep -q -- "-b,--batch" "$dir/help"; then fail "the footer leaves out $cmd, which has -b/--batch"; fi ;;
      esac
    done
    for name in --batch --batch-size --batch-sizes; do
      expect 0 '"batch": 2' -- estimate -m preset:bert-tiny $name 2 --json
      expect 0 "cpu/f32/t0/b2/s8,.*,ok," -- bench "${quick[@]}" $name 2 --run-id "bench$name" --format csv
    done
    ;;
  semantic_usage)
    expect 2 "batch size 0: batch sizes must be positive" -- bench "${quick[@]}" -b 0,4
    expect 2 "tpu" -- bench "${quick[@]}" --device tpu
    expect 2 "threads -1: must be 0" -- bench "${quick[@]}" -t -1
    expect 2 "batch size 0" -- classify -m preset:bert-tiny -b 0
    expect 2 "tpu" -- classify -m preset:bert-tiny --device tpu
    expect 2 "tpu" -- eval "${evalargs[@]}" --device tpu
    expect 2 "sequence length 0" -- bench "${quick[@]}" -s 0
    # Values out of range, found past parsing, are usage errors too, in every command.
    expect 2 "dtype 'f64' is not one of" -- bench "${quick[@]}" --dtype f64
    expect 2 "dtype 'f64' is not one of" -- eval "${evalargs[@]}" --dtype f64
    expect 2 "--mode foo: not one of inference" -- estimate -m preset:bert-tiny --mode foo
    expect 2 "--margin 1.5: must be a fraction" -- estimate -m preset:bert-tiny --margin 1.5
    expect 2 "--max-runs at least --min-runs \(got --runs 2, --min-runs 10, --max-runs 5\)" -- \
      bench "${quick[@]}" --min-runs 10 --max-runs 5
    expect 2 "--time-budget must be 0 \(none\) or a number of seconds, got -1$" -- bench "${quick[@]}" --time-budget -1
    expect 2 "--lora-r must be at least 1" -- train -m preset:bert-tiny -k "$tok" -d "$data" --text-column sentence \
      --method lora --lora-r 0 --runs-dir "$dir/runs"
    expect 2 "'int8' is given twice in --dtype" -- eval "${evalargs[@]}" --dtype int8,f32,int8
    expect 2 "'f32' is given twice in --dtype" -- bench "${quick[@]}" --dtype f32,f32
    [ ! -e "$dir/runs" ] || fail "a usage error made a run directory"
    ;;
  eval_run_id)
    expect 0 "accuracy" -- eval "${evalargs[@]}" --run-id ev1
    cp "$dir/runs/ev1/accuracy.json" "$dir/first.json"
    expect 1 "already holds a run \(config.json\); choose another --run-id" -- eval "${evalargs[@]}" --limit 3 --run-id ev1
    expect 1 "already holds a run" -- bench "${quick[@]}" -b 1 --accuracy -k "$tok" -d "$data" --text-column sentence \
      --run-id ev1
    cmp "$dir/first.json" "$dir/runs/ev1/accuracy.json" || fail "a refused run changed accuracy.json"
    grep -q '"limit": 0' "$dir/runs/ev1/config.json" || fail "a refused run changed config.json"
    ;;
  accuracy_resume)
    # A resumed sweep reuses accuracy.json only when it was measured with the run's settings.
    expect 0 "Accuracy on" -- bench "${quick[@]}" -b 1 --accuracy -k "$tok" -d "$data" --text-column sentence \
      --run-id acc
    acc=$dir/runs/acc/accuracy.json
    grep -q '"settings"' "$acc" || fail "accuracy.json does not say which settings it was measured with"
    cp "$acc" "$dir/kept.json"
    expect 0 "Accuracy on" -- bench --resume "$dir/runs/acc" --no-progress
    cmp "$acc" "$dir/kept.json" || fail "a resume with the same settings measured the accuracy again"
    python3 - "$acc" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
j["settings"]["limit"] = 3
j["results"][0]["accuracy"] = 0.123456
json.dump(j, open(sys.argv[1], "w"))
EOF
    expect 0 "measured with other settings \(limit\): measuring the accuracy again" -- bench --resume "$dir/runs/acc" \
      --no-progress
    grep -q '"limit": 0' "$acc" && ! grep -q 0.123456 "$acc" || fail "the mismatched accuracy.json was kept"
    ;;
  nothing_can_run)
    expect 1 "does-not-exist.*not found" -- bench "${base[@]}" -m "$dir/does-not-exist" -b 1,2,4 -s 16,32
    mkdir -p "$dir/broken" && printf '{"model_type": "bert",' > "$dir/broken/config.json"
    expect 1 "config.json is not valid JSON: line 1, column 23: syntax error" -- bench "${base[@]}" -m "$dir/broken" -b 1,2
    if grep -q "json.exception" "$dir/out"; then fail "the JSON library's tag reached the user: $(cat "$dir/out")"; fi
    mkdir -p "$dir/numeric" && printf '{"model_type": 3}' > "$dir/numeric/config.json"
    expect 1 '"model_type" is 3, not a string' -- bench "${base[@]}" -m "$dir/numeric" -b 1
    HF_HUB_CACHE=$dir/hub HF_ENDPOINT=http://127.0.0.1:9 expect 1 "the Hub .* could not be reached" -- \
      bench "${base[@]}" -m some-org/some-model -b 1,2
    expect 2 "every sequence length \(-s 600,1000\) is past preset:bert-tiny's 512 positions" -- \
      bench "${base[@]}" -m preset:bert-tiny -b 1 -s 600,1000
    expect 1 "not found" -- eval -m "$dir/does-not-exist" -k "$tok" -d "$data" --text-column sentence --runs-dir "$dir/runs"
    [ ! -e "$dir/runs" ] || fail "a sweep that cannot run made a run directory"
    # Past the look at config.json (its weights cut in half), every point fails: the results are
    # kept, and the exit status says nothing ran.
    cp -r "$fixtures/encoders/roberta-cls2-f32" "$dir/cut"
    head -c 17740 "$fixtures/encoders/roberta-cls2-f32/model.safetensors" >"$dir/cut/model.safetensors"
    expect 1 "no point of the sweep ran: 2 failed; the first, .*model.safetensors" -- \
      bench "${base[@]}" -m "$dir/cut" -b 1,2 -s 16 --run-id none
    [ "$(grep -c '"status":"failed"' "$dir/runs/none/results.jsonl")" = 2 ] || fail "the failed points were not kept"
    grep -q "0 ok, 2 failed" "$dir/runs/none/summary.txt" || fail "no summary of the failed points"
    ;;
  eval_summary)
    expect 0 "Per class \(6 examples, cpu/int8\)" -- eval "${evalargs[@]}" --dtype f32,int8,bf16 -t 1 --device cpu \
      --run-id ev
    run=$dir/runs/ev
    head -1 "$run/summary.txt" | grep -q "^tach eval: preset:bert-tiny" || fail "summary.txt: $(head -1 "$run/summary.txt")"
    grep -q "^method: the accuracy pass alone.*, 1 thread;" "$run/summary.txt" || fail "summary.txt has no eval method"
    if grep -Eq "^points:|clock reading|warm-up run" "$run/summary.txt"; then fail "summary.txt describes a sweep"; fi
    for g in cpu/f32 cpu/int8 cpu/bf16; do
      grep -q "Per class (6 examples, $g)" "$run/summary.txt" || fail "no per-class table for $g"
      grep -q "Confusion matrix (6 examples, $g;" "$run/summary.txt" || fail "no confusion matrix for $g"
    done
    grep -q '"kind": "eval"' "$run/summary.json" || fail "summary.json does not say eval"
    [ ! -e "$run/detailed_metrics.csv" ] || fail "eval wrote a point table with no points, unlisted in its written: line"
    if grep -q '"stopping_rule"' "$run/summary.json"; then fail "summary.json has a sweep's stopping rule"; fi
    expect 0 "report.html" -- report "$run"
    grep -q "the accuracy pass alone" "$run/report.html" || fail "the report's method is not the eval's"
    if grep -q "warm-up runs" "$run/report.html"; then fail "the report shows a bench method"; fi
    for g in cpu/f32 cpu/int8 cpu/bf16; do
      grep -q "Per class and confusion matrix: $g, 6 examples" "$run/report.html" || fail "report: nothing for $g"
    done
    ;;
  run_options)
    expect 2 "--report asks for the report that --skip-report leaves out" -- run "${quick[@]}" --report --skip-report
    # Every tach bench option is taken: --report as the default it is, --train as a training
    # sweep, --slurm refused with what to do instead.
    expect 2 "tach run runs its pipeline here.*tach bench --slurm" -- run --train --slurm --slurm-dry-run
    expect 0 "report: .*report.html" -- run "${quick[@]}" -b 1 --report --skip-profile --run-id rep
    test -s "$dir/runs/rep/report.html" || fail "no report.html"
    expect 0 "bench: preset:bert-tiny \(training steps\)" -- run "${quick[@]}" --train -b 2 --skip-profile --skip-report \
      --run-id tr
    grep -q '"kind":"train"' "$dir/runs/tr/results.jsonl" || fail "tach run --train ran no training sweep"
    expect 0 "" -- bench -m preset:bert-tiny -s 8 --runs 2 --warmup 1 --no-progress --no-tensorboard --runs-dir "$dir/runs" \
      --train -b 2 --report --run-id tr1w
    grep -q "1 warm-up step (not measured)" "$dir/runs/tr1w/summary.txt" || fail "summary.txt: not 1 warm-up step"
    grep -q "1 warm-up step (not measured)" "$dir/runs/tr1w/report.html" || fail "report.html: not 1 warm-up step"
    expect 0 "resuming" -- run --resume "$dir/runs/rep" --skip-profile --no-progress
    ;;
  estimate_table)
    # The table exits as each model alone with -m would: 3 when one does not fit in --mode.
    expect 0 "fits" -- estimate -m preset:bert-tiny
    expect 3 "does not fit" -- estimate -m preset:llama-3.1-70b -b 64 -s 512 --device cpu
    expect 0 "compatibility" -- estimate --models preset:bert-tiny,preset:distilbert-base-uncased --table
    expect 3 "exit status 3: preset:llama-3.1-70b does not fit for inference" -- \
      estimate --models preset:bert-tiny,preset:llama-3.1-70b --table -b 64 -s 512 --device cpu
    expect 3 '"fits": false' -- estimate --models preset:bert-tiny,preset:llama-3.1-70b --table -b 64 -s 512 --json
    ;;
  failed_start)
    # What a pass over a dataset needs is checked before a run directory is made, and a directory
    # holding only a start that failed (config.json, run.log) takes the corrected command.
    noktok=(-m preset:bert-tiny -d "$data" --text-column sentence --runs-dir "$dir/runs")
    expect 1 "pass --tokenizer DIR, a directory with the tokenizer.json of bert-base-uncased" -- eval "${noktok[@]}" \
      --run-id ev0
    if grep -q "shared/" "$dir/out"; then fail "the tokenizer hint names a development path: $(cat "$dir/out")"; fi
    expect 1 "pass --tokenizer DIR" -- bench "${quick[@]}" -b 1 --accuracy -d "$data" --text-column sentence --run-id ba1
    expect 1 "nope" -- eval "${evalargs[@]}" --label-column nope --run-id ev0
    expect 1 "missing.tsv" -- eval -m preset:bert-tiny -k "$tok" -d "$dir/missing.tsv" --runs-dir "$dir/runs" --run-id ev0
    [ ! -e "$dir/runs" ] || fail "a start that could not run made a run directory: $(ls -R "$dir/runs")"
    mkdir -p "$dir/runs/ev0" && echo '{}' > "$dir/runs/ev0/config.json" && echo 'failed' > "$dir/runs/ev0/run.log"
    expect 0 "accuracy" -- eval "${evalargs[@]}" --run-id ev0
    expect 1 "already holds a run" -- eval "${evalargs[@]}" --run-id ev0
    ;;
  compare_reasons)
    # Nothing comparable is an error that says why; one sample a side is no interval, not a missing one.
    expect 0 "" -- bench "${quick[@]}" -b 1 --run-id b1
    one=(-m preset:bert-tiny -s 8 --warmup 0 --no-progress --no-tensorboard --runs-dir "$dir/runs" -b 1 -r 1)
    expect 0 "" -- bench "${one[@]}" --run-id b2
    expect 0 "" -- bench "${one[@]}" --run-id b3
    expect 0 "" -- bench "${quick[@]}" -b 2 --train --run-id tr1
    expect 1 "nothing to compare.*inference.*training" -- compare "$dir/runs/b1" "$dir/runs/tr1" --fail-on-regression 1 \
      --no-html
    expect 0 "one latency sample on each side \(-r 1\)" -- compare "$dir/runs/b2" "$dir/runs/b3" --no-html
    if grep -q "no raw latencies" "$dir/out"; then fail "one raw sample was called none"; fi
    ;;
  *)
    fail "no case $case_name"
    ;;
esac
echo "PASS: $case_name"
