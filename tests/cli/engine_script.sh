# What the engine scripts run with the development virtualenv share (engine_accuracy.sh,
# engine_profile.sh, task_engine_accuracy.sh): their arguments, the interpreter and the skip
# without it, a bench run with every engine's accuracy pass, and the check that a resumed run
# keeps those passes. Sourced, not run:
#   . "$(dirname "$0")/engine_script.sh"
#   engine_script_start "$@" torch transformers   # the modules the script needs

# list_with_or A B C: "A, B or C".
list_with_or() {
  list=$1
  shift
  while [ $# -gt 1 ]; do
    list="$list, $1"
    shift
  done
  [ $# -eq 1 ] && list="$list or $1"
  printf '%s' "$list"
}

# engine_script_start TACH FIXTURES PYTHON_PACKAGE WORK_DIR MODULE...: sets tach, fixtures, work and
# python (TACH_REF_PYTHON, default ~/tach-ref/bin/python), exports TACH_PYTHON_PACKAGE, skips
# (exit 77) saying why where the interpreter or one of the modules is missing, and empties WORK_DIR.
engine_script_start() {
  tach=$1 fixtures=$2 work=$4
  export TACH_PYTHON_PACKAGE="$3"
  shift 4
  python="${TACH_REF_PYTHON:-$HOME/tach-ref/bin/python}"
  [ -x "$python" ] || { echo "skip: no development virtualenv at $python (scripts/peers/README.md)"; exit 77; }
  "$python" -c "import $(echo "$@" | sed 's/ /, /g')" 2> /dev/null ||
    { echo "skip: $python lacks $(list_with_or "$@")"; exit 77; }
  rm -rf "$work"
  mkdir -p "$work"
}

# accuracy_bench RUN_ID MODEL TOKENIZER DATA EVAL_BATCH_SIZE: tach bench --accuracy on tach, torch
# and onnxruntime, one tiny point; its output in WORK_DIR/RUN_ID.txt and printed (and the script
# ends, failing, where it fails).
accuracy_bench() {
  "$tach" bench -m "$2" -k "$3" -d "$4" --accuracy --eval-batch-size "$5" --engine tach,torch,onnxruntime \
    --python "$python" -b 1 -s 8 -t 1 --runs 2 --warmup 1 --no-progress --no-tensorboard --runs-dir "$work" \
    --run-id "$1" > "$work/$1.txt" 2>&1 || { cat "$work/$1.txt"; exit 1; }
  cat "$work/$1.txt"
}

# resumed_keeps_every_pass RUN_DIR NOT_SAID FINDING: tach bench --resume RUN_DIR runs no pass again
# (its output never says NOT_SAID) and still gives the finding (a line starting with FINDING).
resumed_keeps_every_pass() {
  "$tach" bench --resume "$1" --no-progress > "$work/resume.txt" 2>&1 || { cat "$work/resume.txt"; exit 1; }
  if grep -q "$2" "$work/resume.txt"; then
    cat "$work/resume.txt"
    exit 1
  fi
  grep -q "^$3" "$work/resume.txt"
}
