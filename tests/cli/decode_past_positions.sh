#!/bin/sh
# Decoding past the model's positions is refused before anything runs, naming the limit: tach bench
# --decode-tokens from prompts of -s tokens when no length leaves room (a length past it among
# others that fit is a point's "decoding: not run", test_bench's Sweep.CausalLm...), and tach generate's prompt + --max-new-tokens (a
# fixture decoder of 64 positions). A prompt and new tokens that fit still run.
# usage: decode_past_positions.sh TACH FIXTURES WORK_DIR
set -u
tach=$1
lm=$2/decoders/llama-lm-llama3rope-f32
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$tach" bench -m "$lm" -s 58,60 --decode-tokens 10 -b 1 --runs 1 --warmup 0 --no-progress --no-tensorboard \
  --runs-dir "$work/runs" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 2 ] || fail "bench: exit $rc, expected 2 (a usage error)"
echo "$out" | grep -q "every sequence length (-s 58,60) leaves no room: the shortest, 58 prompt tokens + --decode-tokens 10 new ones (68 per row) is past .* 64 positions" ||
  fail "bench: the message does not name the limit"
echo "$out" | grep -q -- "--decode-tokens at most 6, or -s at most 54" || fail "bench: no advice naming what fits"
[ ! -d "$work/runs" ] || [ -z "$(ls "$work/runs")" ] || fail "bench: a run directory was made before the refusal"

out=$("$tach" generate -m "$lm" --prompt-len 60 -n 10 2>&1)
rc=$?
echo "$out"
[ $rc -eq 2 ] || fail "generate: exit $rc, expected 2 (a usage error)"
echo "$out" | grep -q "a prompt of 60 tokens + --max-new-tokens 10 (70 per row) is past .* 64 positions" ||
  fail "generate: the message does not name the limit"
echo "$out" | grep -q -- "--max-new-tokens at most 4" || fail "generate: no advice naming what fits"

"$tach" generate -m "$lm" --prompt-len 60 -n 4 --ignore-eos --warmup 0 >"$work/fits.txt" 2>&1 ||
  { cat "$work/fits.txt"; fail "generate: 60 + 4 tokens fit 64 positions but were refused"; }
echo "ok: refused past 64 positions, named the limit; 60 + 4 ran"
