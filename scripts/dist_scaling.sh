#!/usr/bin/env bash
# Data-parallel scaling on this machine (docs/perf.md): the same training job at global batch 32
# as 1 process x 2 threads (batch 32) and as 2 MPI ranks x 1 thread (batch 16 each), alternated
# in rounds so that drift and noise fall on both alike; then Open MPI's own MPI_Allreduce on the
# gradient's size with nothing else running (bench/mpi_allreduce.cc), against the all-reduce
# bandwidth tach train measured while the backward ran beside it.
#
#   scripts/dist_scaling.sh [MODEL_DIR] [DATASET] [ROUNDS]
# Defaults: all-MiniLM-L6-v2 fetched by ../shared/tools/get-minilm (a new 2-label head), the
# IMDB sample truncated to 128 tokens (every row fills them), 3 rounds of 12 optimizer steps.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tach=$(realpath "${TACH:-$repo/build/tach}")
model=${1:-$("$repo/../shared/tools/get-minilm" 2>/dev/null | tail -1)}
[ -f "$model/config.json" ] || [ ! -f "$model/all-MiniLM-L6-v2/config.json" ] || model=$model/all-MiniLM-L6-v2  # the package's folder
data=${2:-$repo/../shared/data/imdb/sample.csv}
rounds=${3:-3}
[ -d "$model" ] || { echo "no model at $model: run ../shared/tools/get-minilm, or give MODEL_DIR" >&2; exit 2; }
command -v mpirun >/dev/null && command -v mpicxx >/dev/null || { echo "needs Open MPI (openmpi-bin libopenmpi-dev)" >&2; exit 2; }
export OMPI_MCA_btl_vader_single_copy_mechanism=none
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d /tmp/tach-dist-scaling.XXXXXX)
common=(train -m "$model" -d "$data" -s 128 --max-steps 12 --no-dropout --seed 1 --no-progress --no-tensorboard
        --runs-dir "$out")
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$@"; }

"$tach" info | head -3
echo "model $model, data $data, global batch 32, 128 tokens, 12 steps per run, $rounds rounds"
one() { "$tach" "${common[@]}" -b 32 -t 2 --run-id "one-$1" > /dev/null; }
two() { mpirun -np 2 --bind-to none "$tach" "${common[@]}" -b 16 -t 1 --run-id "two-$1" > /dev/null; }
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then one "$r"; two "$r"; else two "$r"; one "$r"; fi  # each goes first half the time
  one_sps=$(field "$out/one-$r/summary.json" "d['samples_per_s_median']")
  two_sps=$(field "$out/two-$r/summary.json" "d['samples_per_s_median']")
  e=$(python3 -c "print(round($two_sps / $one_sps, 4))")
  comm=$(field "$out/two-$r/summary.json" "round(d['distributed']['communication_share'], 4)")
  overlap=$(field "$out/two-$r/summary.json" "round(d['distributed']['overlap_share'], 4)")
  gbs=$(field "$out/two-$r/summary.json" "round(d['distributed']['all_reduce_gb_per_s'], 3)")
  echo "round $r: 1 process x 2 threads $one_sps samples/s, 2 ranks x 1 thread $two_sps samples/s: efficiency $e;" \
       "communication $comm of the step, $overlap of it hidden; all-reduce $gbs GB/s"
  echo "$e" >> "$out/efficiency"; echo "$gbs" >> "$out/gbs"
done
bytes=$(field "$out/two-1/summary.json" "d['distributed']['all_reduce_bytes_per_step']")
echo "median scaling efficiency: $(median < "$out/efficiency") (target >= 0.90)"
echo "tach's all-reduce, beside the backward: median $(median < "$out/gbs") GB/s over $bytes bytes per step"
mpicxx -O2 "$repo/bench/mpi_allreduce.cc" -o "$out/mpi_allreduce"
mpirun -np 2 --bind-to none "$out/mpi_allreduce" 1 4 25 "$(python3 -c "print($bytes / 1e6)")"
echo "runs kept in $out"
