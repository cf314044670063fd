#!/usr/bin/env bash
# tach bench --slurm and tach train under SLURM, on a real single-node SLURM started here
# (slurm_cluster.sh: munged, slurmctld and slurmd from Debian, in the foreground):
#  1. a 4-point sweep becomes a 2-task job array; each task writes its own results file, the last
#     writes the summary, and tach report reads the run;
#  2. a task's points lost (its results file deleted): the report says 2 of 4 points are in and
#     --resume --slurm submits exactly those 2 again, as one task; while that job is queued a
#     second resubmission is refused, naming the job;
#  3. --slurm-dry-run writes the script and submits nothing; a --slurm-* setting without --slurm
#     is refused;
#  4. scripts/slurm/train.sbatch trains with 2 MPI ranks across the allocation, and srun starts the
#     2 ranks itself (PMIx).
# Usage: slurm.sh path/to/tach fixtures_dir repo_dir. Skips (77) where the daemons cannot start.
set -euo pipefail
tach=$(realpath "$1")
fixtures=$(realpath "$2")
repo=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
source "$here/slurm_cluster.sh"
cleanup() { stop_slurm; rm -rf "$dir"; }
trap cleanup EXIT
start_slurm "$dir/cluster" || exit $?
fail() { echo "FAIL: $*" >&2; for f in "$dir"/runs/*/slurm/logs/*; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done; exit 1; }
job_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['job_id'])" "$1"; }
points_in() { python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['points']))" "$1"; }

# 1. The sweep as a job array.
run="$dir/runs/sweep"
"$tach" bench -m preset:bert-tiny -b 1,2 -s 8,16 --runs 3 --runs-dir "$dir/runs" --run-id sweep --no-progress \
  --slurm --slurm-cpus-per-task 1 --slurm-time 10:00 --slurm-array-parallelism 2 > "$dir/submit.out"
grep -q "a job array of 2 task(s) for 4 point(s)" "$dir/submit.out" || fail "submission: $(cat "$dir/submit.out")"
grep -q "^#SBATCH --array=0-1%2$" "$run/slurm/sweep.sbatch" || fail "the array line: $(cat "$run/slurm/sweep.sbatch")"
grep -q "^#SBATCH --cpus-per-task=1$" "$run/slurm/sweep.sbatch" || fail "no --cpus-per-task in the script"
job=$(job_of "$run/slurm/plan-1.json")
[ -n "$job" ] || fail "plan-1.json has no job id"
wait_for_job "$job" 180 || fail "job $job did not end within 180 s"
[ "$(ls "$run/results.d" | wc -l)" = 2 ] || fail "expected one results file per task: $(ls "$run/results.d")"
[ -s "$run/summary.json" ] || fail "no summary.json once every point was in"
[ "$(points_in "$run/summary.json")" = 4 ] || fail "summary.json does not hold the 4 points"
"$tach" report "$run" > "$dir/report.out" 2> "$dir/report.err"
grep -q "SLURM submission 1: 2 task(s), 4 point(s), job $job, no task in the queue" "$dir/report.err" ||
  fail "report: $(cat "$dir/report.err")"
grep -q "SLURM" "$run/report.html" || fail "report.html does not name the SLURM job"
grep -q "\[job $job task 1\]" "$run/run.log" || fail "run.log lines do not say their task"

# 2. Lost points are resubmitted, and only they.
rm "$run/results.d/plan-1-task-1.jsonl"
"$tach" report "$run" > /dev/null 2> "$dir/report.err"
grep -q "covers 2 of 4 points" "$dir/report.err" || fail "report of the incomplete run: $(cat "$dir/report.err")"
grep -q "2 of 4 points are in" "$run/report.html" || fail "report.html does not say points are missing"
scontrol update PartitionName=debug State=DOWN  # the next job waits in the queue
"$tach" bench --resume "$run" --slurm > "$dir/resubmit.out"
grep -q "a job array of 1 task(s) for 2 point(s), 2 already in" "$dir/resubmit.out" || fail "resubmission: $(cat "$dir/resubmit.out")"
python3 - "$run/slurm/plan-2.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
ids = plan["tasks"][0]["points"]
assert len(plan["tasks"]) == 1 and all("/s16" in i for i in ids) and len(ids) == 2, plan
PY
job2=$(job_of "$run/slurm/plan-2.json")
if "$tach" bench --resume "$run" --slurm > "$dir/again.out" 2>&1; then fail "a resubmission while job $job2 waits was accepted"; fi
grep -q "job $job2 (submission 2 of .*) still has 1 task(s) queued or running" "$dir/again.out" || fail "refusal: $(cat "$dir/again.out")"
scontrol update PartitionName=debug State=UP
wait_for_job "$job2" 180 || fail "job $job2 did not end within 180 s"
[ "$(points_in "$run/summary.json")" = 4 ] || fail "summary.json after the resubmission"
"$tach" bench --resume "$run" --slurm 2> "$dir/nothing.err" > /dev/null
grep -q "nothing to submit" "$dir/nothing.err" || fail "a complete run: $(cat "$dir/nothing.err")"

# 3. A dry run, and settings without --slurm.
"$tach" bench -m preset:bert-tiny -b 1 -s 8 --runs 1 --runs-dir "$dir/runs" --run-id dry --slurm --slurm-dry-run \
  --slurm-partition debug 2> "$dir/dry.err" > /dev/null
grep -q "dry run: nothing submitted" "$dir/dry.err" || fail "dry run: $(cat "$dir/dry.err")"
grep -q "^#SBATCH --partition=debug$" "$dir/runs/dry/slurm/sweep.sbatch" || fail "dry run's script"
[ -z "$(job_of "$dir/runs/dry/slurm/plan-1.json")" ] || fail "a dry run has a job id"
if "$tach" bench -m preset:bert-tiny --slurm-time 5:00 > "$dir/nos.out" 2>&1; then fail "--slurm-time without --slurm ran"; fi
grep -q "a setting of the job array: add --slurm" "$dir/nos.out" || fail "no-slurm refusal: $(cat "$dir/nos.out")"

# 4. Data-parallel training through sbatch: 2 ranks of the allocation.
if command -v mpirun > /dev/null; then
  (cd "$dir" && TACH="$tach" sbatch --wait --ntasks=2 --cpus-per-task=1 -o "$dir/train-%j.out" \
    "$repo/scripts/slurm/train.sbatch" -m "$fixtures/encoders/bert-cls2-f32" -k "$fixtures/tokenizers/tiny-wordpiece" \
    -d "$fixtures/train/tiny.csv" --max-samples 41 --epochs 1 -b 4 --no-progress --no-tensorboard \
    --runs-dir "$dir/train-runs" --run-id dp > /dev/null) || fail "the training job failed: $(cat "$dir"/train-*.out)"
  grep -q "^tach: 2 ranks (MPI), 1 thread(s) each" "$dir"/train-*.out || fail "training: $(cat "$dir"/train-*.out)"
  [ -s "$dir/train-runs/dp/ranks/rank-1/steps.jsonl" ] || fail "rank 1 wrote no steps"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['distributed']; assert d['world_size']==2, d" \
    "$dir/train-runs/dp/config.json" || fail "config.json's distributed block"
  # srun starts the ranks itself, through SLURM's PMIx plugin (where this SLURM has it).
  mpi_plugins=$(srun --mpi=list 2>&1 || true)
  if [[ "$mpi_plugins" != *pmix* ]]; then echo "note: this SLURM has no PMIx plugin; srun was not tried"; else
  timeout 180 srun --mpi=pmix -n 2 "$tach" train -m "$fixtures/encoders/bert-cls2-f32" \
    -k "$fixtures/tokenizers/tiny-wordpiece" -d "$fixtures/train/tiny.csv" --max-samples 41 --epochs 1 -b 4 -t 1 \
    --no-progress --no-tensorboard --runs-dir "$dir/train-runs" --run-id srun > "$dir/srun.out" 2>&1 ||
    fail "srun --mpi=pmix -n 2 tach train: $(tail -5 "$dir/srun.out")"
  grep -q "^2 ranks" "$dir/srun.out" || fail "srun: $(cat "$dir/srun.out")"
  [ -s "$dir/train-runs/srun/ranks/rank-1/steps.jsonl" ] || fail "srun: rank 1 wrote no steps"
  fi
else
  echo "note: no mpirun; the training jobs were not run"
fi
echo "slurm: sweep, resubmission and training passed"
