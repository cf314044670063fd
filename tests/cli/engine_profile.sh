#!/bin/sh
# tach profile --engine torch with the development virtualenv (TACH_REF_PYTHON, default
# ~/tach-ref/bin/python; skips, saying why, without it): on a tiny fixture it says which engine it
# profiled, writes a torch.profiler trace, prints tach analyze's op table from it, and tach analyze
# reads the same trace; --train profiles the engine's training steps; then a two-engine bench run's
# report has the engine panel and its finding.
# usage: engine_profile.sh TACH FIXTURES PYTHON_PACKAGE WORK_DIR
set -eu
. "$(dirname "$0")/engine_script.sh"
engine_script_start "$@" torch transformers
model="$fixtures/encoders/bert-cls2-f32"

"$tach" profile -m "$model" -b 2 -s 8 -t 1 --engine torch --python "$python" --profiler-output-dir "$work/profile" \
  --top 5 > "$work/profile.txt"
cat "$work/profile.txt"
grep -q "^tach profile --engine torch: forwards (sequence-classification) of .*profiled in torch under torch.profiler" \
  "$work/profile.txt"
grep -q "^Ops (as torch's key_averages(), by self_cpu; 5 of" "$work/profile.txt"
grep -q "^aten::addmm " "$work/profile.txt"
test -s "$work/profile/torch.1.pt.trace.json"
test -s "$work/profile/analysis.json" && test -s "$work/profile/summary.txt"
grep -q '"engine"' "$work/profile/analysis.json"

# --train: the engine's training steps (LoRA through peft on a token classifier), split into phases.
"$tach" profile -m "$model" -b 2 -s 8 -t 1 --engine torch --train --task token-classification --method lora \
  --python "$python" --profiler-output-dir "$work/train" --top 5 > "$work/train.txt"
grep -q "^tach profile --engine torch: training steps (token-classification, lora, lr 5e-05) of " "$work/train.txt"
grep -q "^Optimizer.step#AdamW.step \|autograd::engine::evaluate_function" "$work/train.txt"
grep -q "step      wall     data  forward  backward    optim    other" "$work/train.txt"

"$tach" analyze "$work/profile/torch.1.pt.trace.json" -o "$work/analyze" > "$work/analyze.txt"
grep -q "^aten::addmm " "$work/analyze.txt"
grep -q "ProfilerStep#N" "$work/analyze.txt"

"$tach" bench -m "$model" --engine tach,torch --python "$python" -b 1,2 -s 8 -t 1 --runs 6 --warmup 1 --no-progress \
  --no-tensorboard --runs-dir "$work" --run-id two-engines > "$work/bench.txt"
"$tach" report "$work/two-engines" > /dev/null
grep -q "<h2>Engines</h2>" "$work/two-engines/report.html"
grep -q "torch against tach: " "$work/two-engines/report.html"
grep -q "outputs</th>" "$work/two-engines/report.html"
"$tach" report "$work/profile" > /dev/null
grep -q "<dt>engine</dt><dd>torch, sequence-classification (" "$work/profile/report.html"
echo "ok"
