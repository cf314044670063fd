#!/bin/sh
# Option values whose valid set is in the model's config files, refused (exit 2, naming the option
# and the values the model has) after those files are read and before any weights load: each model
# below is a copy of a fixture whose model.safetensors is cut in half, so a check that waited for
# the weights would answer with the truncated file instead.
# - tach embed --prompt-name: the names in config_sentence_transformers.json (a name it has still
#   gets as far as the weights);
# - tach estimate --lora-targets: ModernBERT's fused qkv on a BERT (estimate reads no weights, so
#   this one is a check of its exit status and words).
# usage: option_values_before_weights.sh TACH FIXTURES WORK_DIR
set -u
tach=$1
fixtures=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
failed=0
expect() {  # expect RC WORD ARGS...: exit RC and WORD (a grep -E pattern) in the message
  rc_want=$1 word=$2
  shift 2
  out=$("$tach" "$@" </dev/null 2>&1)
  rc=$?
  if [ $rc -ne "$rc_want" ] || ! printf '%s' "$out" | grep -Eq -- "$word"; then
    echo "FAIL: tach $*: exit $rc, expected $rc_want with '$word': $out"
    failed=1
  else
    echo "ok: tach $*: exit $rc: $(printf '%s' "$out" | grep -E -- "$word" | head -1)"
  fi
}
cut_weights() {  # cut_weights FIXTURE NAME: a copy of the fixture with half its weights file
  cp -r "$fixtures/$1" "$work/$2"
  size=$(wc -c <"$work/$2/model.safetensors")
  head -c $((size / 2)) "$fixtures/$1/model.safetensors" >"$work/$2/model.safetensors"
}
cut_weights decoders/qwen3-embed-bf16 embed
expect 2 "--prompt-name \"passage\" is not one of .*'s prompts \(document, query\)" \
  embed -m "$work/embed" --text a --prompt-name passage
expect 2 "--prompt-name \"query\" is not one of preset:bert-tiny's prompts \(it has none" \
  embed -m preset:bert-tiny --text a --prompt-name query
# A name the model has passes the check: what stops it is the weights.
expect 1 "model.safetensors" embed -m "$work/embed" --text a --prompt-name query
expect 2 "--lora-targets 'qkv' is one of ModernBERT's fused linears; .*q, k, v, o, gate, up, down" \
  estimate -m preset:bert-tiny --mode train-lora --lora-targets q,qkv
exit $failed
