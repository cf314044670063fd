#!/bin/sh
# A bad option value is a usage error (exit 2) that names the option, given before the model is
# read: each command below names a model that does not exist, so a check that waited for the model
# would answer "model ... not found" (exit 1) instead. The second word of each case is a text the
# message must hold (the option, or one of the values it allows).
# usage: refused_before_load.sh TACH
set -u
tach=$1
m=/nonexistent-model-for-usage-checks
failed=0
expect() {  # expect WORD ARGS...: exit 2 and WORD in the message
  word=$1
  shift
  out=$("$tach" "$@" </dev/null 2>&1)
  rc=$?
  if [ $rc -ne 2 ] || ! printf '%s' "$out" | grep -q -- "$word" || printf '%s' "$out" | grep -q "not found"; then
    echo "FAIL: tach $*: exit $rc, expected 2 naming '$word': $out"
    failed=1
  else
    echo "ok: tach $*: $(printf '%s' "$out" | head -1)"
  fi
}
# eval: token-classification and question-answering options
expect "IOB2" eval -m $m -d x.conll --tag-scheme IOB9
expect "--doc-stride" eval -m $m -d x.json --doc-stride -1
expect "--max-answer-len" eval -m $m -d x.json --max-answer-len 0
expect "dtype" eval -m $m -d x.csv --dtype f64
# bench (and run): the sweep's own checks, before the model's config is read
expect "dtype" bench -m $m --dtype f64
expect "--runs" bench -m $m --runs -1
expect "warm-up" bench -m $m --warmup -1
expect "--decode-tokens" bench -m $m --decode-tokens -1
expect "dtype" run -m $m --dtype f64
# answer
expect "--doc-stride" answer -m $m -q who -c text --doc-stride -1
expect "--max-length" answer -m $m -q who -c text --max-length 0
expect "bf16" answer -m $m -q who -c text --dtype f64
# classify, fill-mask, embed, generate
expect "sequence length" classify -m $m -s 0
expect "--repeat" classify -m $m --repeat 0
expect "--warmup" classify -m $m --warmup -1
expect "--show-rows" classify -m $m --show-rows -1
expect "bf16" classify -m $m --dtype f64
expect "bf16" fill-mask -m $m --text "a [MASK]" --dtype f64
expect "--max-length" embed -m $m --text a --max-length 0
expect "bf16" embed -m $m --text a --dtype f64
expect "--prompt-len" generate -m $m --prompt-len 0
expect "--max-new-tokens" generate -m $m -n 0
expect "--warmup" generate -m $m --warmup -1
expect "bf16" generate -m $m --dtype f64
# profile: its table and schedule options are read after the whole profile otherwise
expect "shape" profile -m $m --group-by kernel
expect "flops" profile -m $m --sort-by cpu
expect "--top" profile -m $m --top 0
expect "--profiler-active" profile -m $m --profiler-active 0
expect "--memory-log-steps" profile -m $m --memory-log-steps 0
expect "--overhead-steps" profile -m $m --overhead-steps 0
expect "sequence length" profile -m $m -s 0
expect "bf16" profile -m $m --dtype f64
expect "qlora" profile -m $m --train --method adapters
expect "fused" profile -m $m --train --exec lazy
# train and estimate
expect "--max-length" train -m $m -d x.csv --max-length 0
expect "adamw" estimate -m $m --optimizer sgd
expect "bf16" estimate -m $m --dtype f64
expect "--lora-targets 'query'" estimate -m $m --mode train-lora --lora-targets q,query
exit $failed
