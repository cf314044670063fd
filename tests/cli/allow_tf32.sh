#!/bin/sh
# --allow-tf32: every command that takes it lists it in --help; where it could not act (a CPU, no f32
# among the dtypes, a training sweep, another engine's profile) it is a usage error (exit status 2)
# naming why, before a model loads; a bench run keeps it in config.json (a GPU run: cuda is refused
# here without one, so a resumed config is checked through --resume's refusal of flags).
# usage: allow_tf32.sh TACH WORK_DIR
set -u
tach=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }

for cmd in bench run classify profile generate; do
  "$tach" "$cmd" --help >"$dir/help.txt" 2>&1 || fail "tach $cmd --help"
  grep -q -e '--allow-tf32' "$dir/help.txt" || fail "tach $cmd --help does not list --allow-tf32"
done

# refused COMMAND-LINE... : exit status 2 and the message's words ($want).
refused() {
  status=0
  "$tach" "$@" >"$dir/out.txt" 2>&1 || status=$?
  [ "$status" -eq 2 ] || { cat "$dir/out.txt"; fail "tach $* exited $status, not 2 (a usage error)"; }
  grep -q -e "$want" "$dir/out.txt" || { cat "$dir/out.txt"; fail "tach $*: no '$want' in the message"; }
  echo "refused: tach $*"
}
want='TF32 is a GPU tensor-core format'
refused classify -m preset:bert-tiny --device cpu --allow-tf32
refused generate -m preset:qwen2-tiny --device cpu --allow-tf32 -n 2
refused profile -m preset:bert-tiny --device cpu --allow-tf32
refused bench -m preset:bert-tiny --device cpu --allow-tf32 -b 1 --runs-dir "$dir/runs"
refused bench -m preset:bert-tiny --device cuda,cpu --allow-tf32 -b 1 --runs-dir "$dir/runs"
want='changes f32 GEMMs only, and --dtype bf16'
refused bench -m preset:bert-tiny --device cuda --dtype bf16 --allow-tf32 -b 1 --runs-dir "$dir/runs"
refused classify -m preset:bert-tiny --device cuda --dtype bf16 --allow-tf32
want='applies to inference'
refused bench --train -m preset:bert-tiny --device cuda --allow-tf32 -b 8 --runs-dir "$dir/runs"
# --device auto (the default) is the CPU where no GPU is usable: refused the same, before a run
# directory is made (where a GPU is usable, auto is that GPU and runs).
if "$tach" info 2>/dev/null | grep -q '^cuda *none'; then
  want='--device auto (the CPU: no usable GPU here)'
  refused bench -m preset:bert-tiny --allow-tf32 -b 1 --runs-dir "$dir/runs"
  refused run -m preset:bert-tiny --allow-tf32 -b 1 --runs-dir "$dir/runs"
fi
# Nothing was made for a refused run.
[ ! -d "$dir/runs" ] || fail "a refused run left $dir/runs"
echo PASS
