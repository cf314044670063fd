#!/usr/bin/env python3
"""tach vs PyTorch eager on a Qwen2.5-0.5B-sized sequence classifier, same weights and inputs, same
run, in f32 and bf16 (scripts/golden/make_qwen2_fixtures.py --base writes the checkpoints).

For each dtype and batch size: R rounds; in each round tach and PyTorch each run W warm-up and N
timed forwards (alternating which goes first); a round's figure is the median of its N. Reported:
the median over rounds, the min..max over rounds, the ratio torch/tach (> 1: tach faster), and
tach's bf16 speed-up over its own f32. ONNX Runtime is left out here: exporting a 0.5B decoder
to ONNX is a project of its own (the encoder peers include it).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import Qwen2ForSequenceClassification

from encoder_peers import timed  # the same timing loop as the encoder peers (this folder)

TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}




def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="build/golden", help="holds qwen2.5-0.5b-random-{f32,bf16}")
    ap.add_argument("--tach", default="build/tach")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json-out")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"machine: {os.cpu_count()} logical cores; threads per engine: {args.threads}; torch {torch.__version__}")
    results = {}
    rng = np.random.default_rng(0)
    for dtype in args.dtypes.split(","):
        path = os.path.join(args.models, f"qwen2.5-0.5b-random-{dtype}")
        model = Qwen2ForSequenceClassification.from_pretrained(path, torch_dtype=TORCH_DTYPES[dtype]).eval()
        for B in [int(b) for b in args.batches.split(",")]:
            ids = rng.integers(0, 151643, size=(B, args.seq_len), dtype=np.int64)
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                for row in ids:
                    f.write(" ".join(map(str, row)) + "\n")
                ids_file = f.name
            reps = 5 if B == 1 else 3
            warm = 1
            tids = torch.from_numpy(ids)
            tmask = torch.ones_like(tids)

            def run_torch():
                with torch.no_grad():
                    return model(input_ids=tids, attention_mask=tmask).logits

            def run_tach():
                out = subprocess.run([args.tach, "classify", "--model", path, "--ids-file", ids_file, "--json",
                                      "--dtype", dtype, "--threads", str(args.threads), "--warmup", str(warm),
                                      "--repeat", str(reps)], check=True, capture_output=True, text=True)
                return json.loads(out.stdout)

            ref = run_torch().float().numpy()
            t = np.array([r["logits"] for r in run_tach()["rows"]])
            scale = np.abs(ref).max() + 1e-6
            print(f"\n{dtype} batch {B} x {args.seq_len}: max |logit diff| / max |logit| vs torch {dtype}: "
                  f"{np.abs(t - ref).max() / scale:.2e}")
            rounds = {"tach": [], "torch": []}
            for r in range(args.rounds):
                order = ["tach", "torch"] if r % 2 == 0 else ["torch", "tach"]
                for name in order:
                    if name == "tach":
                        rounds["tach"].append(run_tach()["timing"]["median"])
                    else:
                        rounds["torch"].append(timed(run_torch, warm, reps))
            os.unlink(ids_file)
            med = {k: statistics.median(v) for k, v in rounds.items()}
            results[f"{dtype}/b{B}"] = {"rounds": rounds, "median_s": med}
            for k in ("tach", "torch"):
                v = rounds[k]
                print(f"  {k:6s} {med[k]*1e3:9.1f} ms/batch  (rounds {min(v)*1e3:.1f}..{max(v)*1e3:.1f})  "
                      f"{B / med[k]:7.2f} samples/s")
            print(f"  ratio  torch/tach {med['torch'] / med['tach']:.2f}x   (> 1: tach faster)")
        del model
    for B in [int(b) for b in args.batches.split(",")]:
        if f"f32/b{B}" in results and f"bf16/b{B}" in results:
            f32 = results[f"f32/b{B}"]["median_s"]["tach"]
            bf16 = results[f"bf16/b{B}"]["median_s"]["tach"]
            print(f"tach bf16 vs tach f32, batch {B}: {f32 / bf16:.2f}x")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
