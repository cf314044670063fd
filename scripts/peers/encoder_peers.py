#!/usr/bin/env python3
"""tach vs PyTorch eager vs ONNX Runtime on one encoder checkpoint, same inputs, same run.

For each batch size: R rounds; in each round tach, PyTorch and ORT each run W warm-up and N
timed forwards (in an order rotated per round); a round's figure is the median of its N.
Reported: the median over rounds, the min..max over rounds, and ratios peer/tach (> 1 means
tach is faster). Threads: all engines get --threads (default: all cores).

--head picks the checkpoint's head as transformers' AutoModelFor... class (default a sequence
classifier). For a per-token head (masked LM, token classification, question answering) tach's
figure is tach bench's median batch latency on the same shape (its forward is the head's
token_logits; classify --json would print [B, T, V] numbers), and the agreement check runs on the
first row through tach classify --json. --head none times the bare body on every token (AutoModel's
last_hidden_state; tach bench --head none), the baseline for the per-token heads: the sequence
classifier's own figure is smaller by its last layer run for the first token only. tach prints no
hidden states, so for it the agreement check is left to the golden tests.
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
from transformers import (AutoModel, AutoModelForMaskedLM, AutoModelForQuestionAnswering,
                          AutoModelForSequenceClassification, AutoModelForTokenClassification)

HEADS = {"sequence-classification": (AutoModelForSequenceClassification, ["logits"]),
         "masked-lm": (AutoModelForMaskedLM, ["logits"]),
         "token-classification": (AutoModelForTokenClassification, ["logits"]),
         "question-answering": (AutoModelForQuestionAnswering, ["start_logits", "end_logits"]),
         # The bare body on every token (tach --head none): what every per-token head runs before
         # its head, without the sequence classifier's shortcut (its last layer for the first token only).
         "none": (AutoModel, ["last_hidden_state"])}


def export_onnx(model, path, seq_len, outputs):
    if os.path.exists(path):
        return
    ids = torch.ones(1, seq_len, dtype=torch.long)
    mask = torch.ones(1, seq_len, dtype=torch.long)
    axes = {"input_ids": {0: "b", 1: "t"}, "attention_mask": {0: "b", 1: "t"}}
    axes.update({name: {0: "b"} for name in outputs})
    class ByName(torch.nn.Module):
        # Inputs and outputs by name: the models' positional parameters differ (BertModel's tracing
        # passes use_cache twice when called positionally).
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask)
            return tuple(out[name] for name in outputs)

    # eval(): export puts the module back in the mode it had, and would leave the model training.
    torch.onnx.export(ByName().eval(), (ids, mask), path, input_names=["input_ids", "attention_mask"],
                      output_names=outputs, dynamic_axes=axes, opset_version=17, dynamo=False)


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
    ap.add_argument("--head", default="sequence-classification", choices=sorted(HEADS))
    ap.add_argument("--json-out", help="write all round figures here")
    args = ap.parse_args()

    import onnxruntime as ort
    torch.set_num_threads(args.threads)
    auto_class, outputs = HEADS[args.head]
    per_token = args.head != "sequence-classification"
    model = auto_class.from_pretrained(args.model, torch_dtype=torch.float32).eval()
    # One export per length: some models (ModernBERT's windowed masks) bake the length into the graph.
    onnx_path = os.path.join(args.model, f"model-{args.head}-s{args.seq_len}.onnx")
    export_onnx(model, onnx_path, args.seq_len, outputs)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])

    print(f"machine: {os.cpu_count()} logical cores; threads per engine: {args.threads}")
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}, model {args.model}, seq {args.seq_len}")
    results = {}
    rng = np.random.default_rng(0)
    for B in [int(b) for b in args.batches.split(",")]:
        low = 1000 if model.config.vocab_size > 2000 else 5  # past the special tokens
        ids = rng.integers(low, model.config.vocab_size, size=(B, args.seq_len), dtype=np.int64)
        mask = np.ones_like(ids)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            for row in ids:
                f.write(" ".join(map(str, row)) + "\n")
            ids_file = f.name
        reps = max(3, min(20, 64 // B))
        warm = 2
        tids, tmask = torch.from_numpy(ids), torch.from_numpy(mask)

        def run_torch(rows=None):
            with torch.no_grad():
                out = model(input_ids=tids[:rows], attention_mask=tmask[:rows])
                return torch.stack([out[name] for name in outputs], -1)

        def run_ort():
            return np.stack(sess.run(outputs, {"input_ids": ids, "attention_mask": mask}), -1)

        def run_tach(ids_path=ids_file, repeat=reps):
            out = subprocess.run([args.tach, "classify", "--model", args.model, "--ids-file", ids_path, "--json",
                                  "--threads", str(args.threads), "--warmup", str(warm), "--repeat", str(repeat)],
                                 check=True, capture_output=True, text=True)
            return json.loads(out.stdout)

        def bench_tach():
            # tach bench's median batch latency on the same shape: its forward is the head's.
            with tempfile.TemporaryDirectory() as runs:
                subprocess.run([args.tach, "bench", "--model", args.model, "-b", str(B), "-s", str(args.seq_len),
                                "-t", str(args.threads), "--warmup", str(warm), "--runs", str(reps), "--no-progress",
                                "--runs-dir", runs, "--run-id", "peers", "--no-tensorboard"] +
                               (["--head", "none"] if args.head == "none" else []),
                               check=True, capture_output=True, text=True)
                with open(os.path.join(runs, "peers", "results.jsonl")) as f:
                    point = json.loads(f.readline())
                return point["batch_latency_ms"]["median"] / 1e3

        # Agreement first: the three must compute the same function (a per-token head: on row 0).
        ref = run_torch(1 if per_token else None).numpy()
        o = run_ort()[:ref.shape[0]]
        if args.head == "none":
            t = None  # tach prints no hidden states (see above)
        elif per_token:
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write(" ".join(map(str, ids[0])) + "\n")
            row = run_tach(f.name, 1)["rows"][0]
            os.unlink(f.name)
            t = np.stack([np.array(row[name]) for name in outputs], -1)[None]
        else:
            t = np.array([r["logits"] for r in run_tach()["rows"]])[..., None]
        scale = np.abs(ref).max() + 1e-6
        tach_diff = "n/a" if t is None else f"{np.abs(t - ref).max() / scale:.2e}"
        print(f"\nbatch {B}: max |output diff| / max|output|: tach {tach_diff}, ort {np.abs(o - ref).max() / scale:.2e}")

        rounds = {"tach": [], "torch": [], "ort": []}
        engines = ["tach", "torch", "ort"]
        for r in range(args.rounds):
            for name in engines[r % 3:] + engines[:r % 3]:
                if name == "tach":
                    rounds["tach"].append(bench_tach() if per_token else run_tach()["timing"]["median"])
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
