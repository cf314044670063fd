#!/usr/bin/env python3
"""tach vs PyTorch eager vs ONNX Runtime on one encoder checkpoint, same inputs, same run.

For each batch size: R rounds; in each round tach, PyTorch and ORT each run W warm-up and N
timed forwards (in an order rotated per round); a round's figure is the median of its N.
Reported: the median over rounds, the min..max over rounds, and ratios peer/tach (> 1 means
tach is faster). Threads: all engines get --threads (default: all cores).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification


def export_onnx(model, path, seq_len):
    if os.path.exists(path):
        return
    ids = torch.ones(1, seq_len, dtype=torch.long)
    mask = torch.ones(1, seq_len, dtype=torch.long)
    torch.onnx.export(model, (ids, mask), path, input_names=["input_ids", "attention_mask"],
                      output_names=["logits"], dynamic_axes={"input_ids": {0: "b", 1: "t"},
                                                             "attention_mask": {0: "b", 1: "t"},
                                                             "logits": {0: "b"}},
                      opset_version=17, dynamo=False)


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json + model.safetensors)")
    ap.add_argument("--tach", default="build/tach")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json-out", help="write all round figures here")
    args = ap.parse_args()

    import onnxruntime as ort
    torch.set_num_threads(args.threads)
    model = AutoModelForSequenceClassification.from_pretrained(args.model, torch_dtype=torch.float32).eval()
    # One export per length: some models (ModernBERT's windowed masks) bake the length into the graph.
    onnx_path = os.path.join(args.model, f"model-s{args.seq_len}.onnx")
    export_onnx(model, onnx_path, args.seq_len)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])

    print(f"machine: {os.cpu_count()} logical cores; threads per engine: {args.threads}")
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}, model {args.model}, seq {args.seq_len}")
    results = {}
    rng = np.random.default_rng(0)
    for B in [int(b) for b in args.batches.split(",")]:
        ids = rng.integers(1000, model.config.vocab_size, size=(B, args.seq_len), dtype=np.int64)
        mask = np.ones_like(ids)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            for row in ids:
                f.write(" ".join(map(str, row)) + "\n")
            ids_file = f.name
        reps = max(3, min(20, 64 // B))
        warm = 2
        tids, tmask = torch.from_numpy(ids), torch.from_numpy(mask)

        def run_torch():
            with torch.no_grad():
                return model(input_ids=tids, attention_mask=tmask).logits

        def run_ort():
            return sess.run(["logits"], {"input_ids": ids, "attention_mask": mask})[0]

        def run_tach():
            out = subprocess.run([args.tach, "classify", "--model", args.model, "--ids-file", ids_file, "--json",
                                  "--threads", str(args.threads), "--warmup", str(warm), "--repeat", str(reps)],
                                 check=True, capture_output=True, text=True)
            return json.loads(out.stdout)

        # Agreement first: the three must compute the same function.
        ref = run_torch().numpy()
        o = run_ort()
        t = np.array([r["logits"] for r in run_tach()["rows"]])
        scale = np.abs(ref).max() + 1e-6
        print(f"\nbatch {B}: max |logit diff| / max|logit|: tach {np.abs(t - ref).max() / scale:.2e}, "
              f"ort {np.abs(o - ref).max() / scale:.2e}")

        rounds = {"tach": [], "torch": [], "ort": []}
        engines = ["tach", "torch", "ort"]
        for r in range(args.rounds):
            for name in engines[r % 3:] + engines[:r % 3]:
                if name == "tach":
                    rounds["tach"].append(run_tach()["timing"]["median"])
                elif name == "torch":
                    rounds["torch"].append(timed(run_torch, warm, reps))
                else:
                    rounds["ort"].append(timed(run_ort, warm, reps))
        os.unlink(ids_file)
        med = {k: statistics.median(v) for k, v in rounds.items()}
        results[B] = {"rounds": rounds, "median_s": med}
        for k in engines:
            v = rounds[k]
            print(f"  {k:6s} {med[k]*1e3:9.2f} ms/batch  (rounds {min(v)*1e3:.2f}..{max(v)*1e3:.2f})  "
                  f"{B / med[k]:8.2f} samples/s")
        print(f"  ratio  torch/tach {med['torch'] / med['tach']:.2f}x   ort/tach {med['ort'] / med['tach']:.2f}x"
              f"   (> 1: tach faster)")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
