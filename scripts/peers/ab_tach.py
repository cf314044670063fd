#!/usr/bin/env python3
"""Before/after: two tach binaries on the same model and inputs, alternating, several rounds.

    git worktree add /tmp/tach-before <commit> && cmake -S /tmp/tach-before -B /tmp/tach-before/build \
        -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/tach-before/build -j2 --target tach
    scripts/peers/ab_tach.py --before /tmp/tach-before/build/tach --after build/tach \
        --model build/golden/distilbert-base-random --batches 1,8

Each round runs both binaries once per batch size (the order flips every round); a run is
`tach classify --repeat N` on full rows of random ids, and its figure is tach's own median. With
--train a run is a full fine-tuning step instead (`tach profile --train --overhead-steps N`, the
median of its steps with the profiler off, as scripts/peers/train_peers.py times tach).
Reported: the median over rounds for each binary and after/before (< 1: the change is faster).
Development only: the machine must be otherwise idle.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--before", required=True)
ap.add_argument("--after", required=True)
ap.add_argument("--model", required=True)
ap.add_argument("--batches", default="1,8")
ap.add_argument("--seq-len", type=int, default=128)
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--threads", type=int, default=os.cpu_count())
ap.add_argument("--reps", type=int, default=0, help="timed forwards per run (default: 64/batch, 3 to 20)")
ap.add_argument("--train", action="store_true", help="time a training step (full fine-tuning) instead of a forward")
a = ap.parse_args()

vocab = json.load(open(os.path.join(a.model, "config.json")))["vocab_size"]
rng = random.Random(0)
for B in [int(b) for b in a.batches.split(",")]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for _ in range(B):
            f.write(" ".join(str(rng.randrange(1000, vocab)) for _ in range(a.seq_len)) + "\n")
        ids_file = f.name
    reps = a.reps or max(3, min(20, 64 // B))

    def run(binary):
        if a.train:
            out = subprocess.run([binary, "profile", "--train", "-m", a.model, "-b", str(B), "-s", str(a.seq_len), "-t",
                                  str(a.threads), "--overhead-steps", "3", "--profiler-output-dir", "/tmp/tach-ab-train"],
                                 check=True, capture_output=True, text=True)
            return float(re.search(r"medians\): ([0-9.]+) ms off", out.stdout).group(1)) / 1e3
        out = subprocess.run([binary, "classify", "--model", a.model, "--ids-file", ids_file, "--json", "--threads",
                              str(a.threads), "--warmup", "2", "--repeat", str(reps)],
                             check=True, capture_output=True, text=True)
        return json.loads(out.stdout)["timing"]["median"]

    times = {"before": [], "after": []}
    for r in range(a.rounds):
        for name in (["before", "after"] if r % 2 == 0 else ["after", "before"]):
            times[name].append(run(a.before if name == "before" else a.after))
    os.unlink(ids_file)
    mb, ma = statistics.median(times["before"]), statistics.median(times["after"])
    print(f"batch {B:3d}: before {mb * 1e3:8.2f} ms ({min(times['before']) * 1e3:.2f}..{max(times['before']) * 1e3:.2f}), "
          f"after {ma * 1e3:8.2f} ms ({min(times['after']) * 1e3:.2f}..{max(times['after']) * 1e3:.2f}), "
          f"after/before {ma / mb:.3f}", flush=True)
