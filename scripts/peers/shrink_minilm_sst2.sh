#!/bin/bash
# The trade-off table of docs/perf.md ("Making all-MiniLM-L6-v2 smaller on SST-2"): a fine-tuned
# teacher, its heads pruned by importance with and without recovery fine-tuning, a 3-layer student
# distilled from it, and its int8 and NF4 forms, all measured by one `tach shrink` run.
#
#   scripts/peers/shrink_minilm_sst2.sh [OUT_DIR]      (default /tmp/tach-shrink-minilm)
#
# Each step's output is kept; rerunning skips the steps that finished (a killed run goes on).
# Environment: TACH (default build/tach), MODEL (default ~/.cache/tach-models/all-MiniLM-L6-v2,
# from ../shared/tools/get-minilm), SST2 (default ../shared/data/sst2), THREADS (default 2).
# Every fine-tuning step is the MiniLM SST-2 recipe of scripts/peers/minilm_sst2_recipe.py:
# train's first 8,000 sentences in file order, batch 32, padded to 64, AdamW lr 5e-5, weight decay
# 0.01 on every parameter, no warm-up, schedule or clipping, seed 0; 2 epochs for the teacher (one
# leaves it under-trained: 0.806 on dev, where a second pass gives 0.856), 1 for the others.
set -euo pipefail
TACH=${TACH:-build/tach}
MODEL=${MODEL:-$HOME/.cache/tach-models/all-MiniLM-L6-v2}
SST2=${SST2:-../shared/data/sst2}
THREADS=${THREADS:-2}
OUT=${1:-/tmp/tach-shrink-minilm}
mkdir -p "$OUT/runs"
log() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }

# fine_tune NAME FROM EPOCHS [extra tach train options]: the recipe on FROM, saved to OUT/NAME.
fine_tune() {
  local name=$1 from=$2 epochs=$3
  shift 3
  if [ -f "$OUT/$name/config.json" ]; then log "$name: kept"; return; fi
  log "$name: fine-tuning $from $*"
  "$TACH" train -m "$from" -d "$SST2/train.tsv" --eval-dataset "$SST2/dev.tsv" --max-samples 8000 \
    --no-shuffle -b 32 --padding max_length -s 64 --eval-max-length 128 --epochs "$epochs" --lr 5e-5 \
    --weight-decay 0.01 --decay-scope all --max-grad-norm 0 --schedule constant --seed 0 \
    --threads "$THREADS" --runs-dir "$OUT/runs" --run-id "$name" --save "$OUT/$name" --no-progress "$@" \
    > "$OUT/$name.train.log"
  log "$name: dev accuracy $(tail -1 "$OUT/runs/$name/epoch_results.csv")"
}

# prune NAME FROM [tach prune options]: units ranked by importance on 512 training sentences.
prune() {
  local name=$1 from=$2
  shift 2
  if [ -f "$OUT/$name/config.json" ]; then log "$name: kept"; return; fi
  log "$name: pruning $from $*"
  "$TACH" prune -m "$from" -o "$OUT/$name" --by importance -d "$SST2/train.tsv" \
    --calibration-samples 512 -s 64 "$@" > "$OUT/$name.prune.log"
}

fine_tune teacher "$MODEL" 2
prune heads25 "$OUT/teacher" --heads 0.25
prune heads50 "$OUT/teacher" --heads 0.5
prune layers3 "$OUT/teacher" --layers 3
# A 3-layer student: the teacher's 3 most important layers, distilled from it, and without the
# teacher (what distillation adds).
fine_tune student-3-layers "$OUT/layers3" 1 --distill-from "$OUT/teacher"
fine_tune layers3-fine-tuned "$OUT/layers3" 1
# Recovery fine-tuning of the head-pruned models, with and without the teacher.
fine_tune heads25-recovered "$OUT/heads25" 1
fine_tune heads50-recovered "$OUT/heads50" 1
fine_tune heads25-distilled "$OUT/heads25" 1 --distill-from "$OUT/teacher"

# The table: the teacher in f32, int8 and NF4; the pruned checkpoints before recovery (the same
# ranking, made again by shrink's own --prune); the recovered ones and the student as --student.
if [ -f "$OUT/runs/shrink/summary.txt" ]; then
  log "shrink: kept"
elif [ -f "$OUT/runs/shrink/shrink.json" ]; then
  log "shrink: resuming"
  "$TACH" shrink --resume "$OUT/runs/shrink" --no-progress > "$OUT/shrink.log"
else
  log "shrink: measuring every variant"
  "$TACH" shrink -m "$OUT/teacher" -d "$SST2/dev.tsv" --dtype f32,int8,nf4 \
    --prune heads:0.25,heads:0.5 --prune-by importance --calibration-data "$SST2/train.tsv" \
    --calibration-samples 512 \
    --student "$OUT/heads25-recovered,$OUT/heads50-recovered,$OUT/heads25-distilled,$OUT/student-3-layers" \
    --student "$OUT/layers3-fine-tuned" \
    -b 1,32 -s 64 -t "$THREADS" --runs-dir "$OUT/runs" --run-id shrink --report --no-progress > "$OUT/shrink.log"
fi
log "done: $OUT/runs/shrink (summary.txt, report.html)"
