#!/usr/bin/env python3
"""int8 dynamic quantization: tach --dtype int8 against tach f32 and ONNX Runtime's quantize_dynamic
model of the same weights, in one run; then accuracy on a labelled set, f32 and int8 on both.

Speed (--model): for each batch size, R rounds; in each round tach f32, tach int8, ORT f32 and
ORT int8 each run W warm-up and N timed forwards (order rotated per round); a round's figure is
the median of its N; reported: the median over rounds, the min..max, and the ratios.
ORT's int8 model: onnxruntime.quantization.quantize_dynamic(weight_type=QInt8, per_channel=True),
the recipe Hugging Face Optimum's dynamic quantization uses on CPUs: int8 weights per output
channel, u8 activations per tensor computed at run time.

Accuracy (--accuracy-model DIR --dev TSV): tach eval --dtype f32,int8 on the dev set, and ORT f32
and int8 on the same texts tokenized by transformers' tokenizer (truncated to --eval-len).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from encoder_peers import export_onnx, timed  # same export and timing loop as the f32 peers


def quantized(onnx_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    out = onnx_path.replace(".onnx", "-int8.onnx")
    if not os.path.exists(out):
        quantize_dynamic(onnx_path, out, weight_type=QuantType.QInt8, per_channel=True)
    return out


def session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def speed(args):
    model = AutoModelForSequenceClassification.from_pretrained(args.model, torch_dtype=torch.float32).eval()
    onnx_path = os.path.join(args.model, f"model-s{args.seq_len}.onnx")
    export_onnx(model, onnx_path, args.seq_len)
    sess = {"ort-f32": session(onnx_path, args.threads), "ort-int8": session(quantized(onnx_path), args.threads)}
    rng = np.random.default_rng(0)
    results = {}
    for B in [int(b) for b in args.batches.split(",")]:
        ids = rng.integers(1000, model.config.vocab_size, size=(B, args.seq_len), dtype=np.int64)
        mask = np.ones_like(ids)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            for row in ids:
                f.write(" ".join(map(str, row)) + "\n")
            ids_file = f.name
        reps, warm = max(3, min(20, 64 // B)), 2

        def run_tach(dtype):
            out = subprocess.run([args.tach, "classify", "--model", args.model, "--ids-file", ids_file, "--json",
                                  "--threads", str(args.threads), "--warmup", str(warm), "--repeat", str(reps),
                                  "--dtype", dtype], check=True, capture_output=True, text=True)
            return json.loads(out.stdout)

        def run_ort(name):
            return sess[name].run(["logits"], {"input_ids": ids, "attention_mask": mask})[0]

        with torch.no_grad():
            ref = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)).logits.numpy()
        scale = np.abs(ref).max() + 1e-6
        diffs = {"tach-f32": np.array([r["logits"] for r in run_tach("f32")["rows"]]),
                 "tach-int8": np.array([r["logits"] for r in run_tach("int8")["rows"]]),
                 "ort-f32": run_ort("ort-f32"), "ort-int8": run_ort("ort-int8")}
        print(f"\nbatch {B}: max |logit - torch f32| / max|logit|: " +
              ", ".join(f"{k} {np.abs(v - ref).max() / scale:.2e}" for k, v in diffs.items()))
        engines = ["tach-f32", "tach-int8", "ort-f32", "ort-int8"]
        rounds = {k: [] for k in engines}
        for r in range(args.rounds):
            for name in engines[r % 4:] + engines[:r % 4]:
                if name.startswith("tach"):
                    rounds[name].append(run_tach(name[5:])["timing"]["median"])
                else:
                    rounds[name].append(timed(lambda: run_ort(name), warm, reps))
        os.unlink(ids_file)
        med = {k: statistics.median(v) for k, v in rounds.items()}
        results[B] = {"rounds": rounds, "median_s": med}
        for k in engines:
            print(f"  {k:9s} {med[k]*1e3:9.2f} ms/batch  (rounds {min(rounds[k])*1e3:.2f}..{max(rounds[k])*1e3:.2f})"
                  f"  {B / med[k]:8.2f} samples/s")
        print(f"  tach int8 vs tach f32 {med['tach-f32'] / med['tach-int8']:.2f}x   "
              f"vs ORT int8 {med['ort-int8'] / med['tach-int8']:.2f}x   ORT int8 vs ORT f32 "
              f"{med['ort-f32'] / med['ort-int8']:.2f}x   (> 1: the first is faster)")
    return results


def accuracy(args):
    out = {}
    with tempfile.TemporaryDirectory() as runs:
        subprocess.run([args.tach, "eval", "-m", args.accuracy_model, "-d", args.dev, "--dtype", "f32,int8",
                        "-s", str(args.eval_len), "--runs-dir", runs, "--run-id", "e"],
                       check=True, capture_output=True, text=True)
        for r in json.load(open(os.path.join(runs, "e", "accuracy.json")))["results"]:
            out["tach-" + r["dtype"]] = r["accuracy"]
    with open(args.dev) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    texts, labels = [r["text"] for r in rows], np.array([int(r["label"]) for r in rows])
    model = AutoModelForSequenceClassification.from_pretrained(args.accuracy_model, torch_dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(args.accuracy_model)
    onnx_path = os.path.join(args.accuracy_model, f"model-s{args.eval_len}.onnx")
    export_onnx(model, onnx_path, args.eval_len)
    for name, path in (("ort-f32", onnx_path), ("ort-int8", quantized(onnx_path))):
        s, preds = session(path, args.threads), []
        for i in range(0, len(texts), 32):
            enc = tok(texts[i:i + 32], truncation=True, max_length=args.eval_len, padding=True, return_tensors="np")
            logits = s.run(["logits"], {"input_ids": enc["input_ids"].astype(np.int64),
                                        "attention_mask": enc["attention_mask"].astype(np.int64)})[0]
            preds.append(logits.argmax(-1))
        out[name] = float((np.concatenate(preds) == labels).mean())
    print(f"\naccuracy on {args.dev} ({len(texts)} examples): " + ", ".join(f"{k} {v:.4f}" for k, v in out.items()))
    print(f"  int8 - f32: tach {100 * (out['tach-int8'] - out['tach-f32']):+.2f} points, "
          f"ORT {100 * (out['ort-int8'] - out['ort-f32']):+.2f} points")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="checkpoint for speed (config.json + model.safetensors)")
    ap.add_argument("--accuracy-model", help="a fine-tuned classifier for accuracy")
    ap.add_argument("--dev", help="its labelled dev set (TSV with text and label columns)")
    ap.add_argument("--eval-len", type=int, default=128)
    ap.add_argument("--tach", default="build/tach")
    ap.add_argument("--batches", default="8,32")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json-out")
    args = ap.parse_args()
    import onnxruntime
    print(f"machine: {os.cpu_count()} logical cores; threads per engine: {args.threads}; torch {torch.__version__}, "
          f"onnxruntime {onnxruntime.__version__}")
    results = {}
    if args.model:
        results["speed"] = speed(args)
    if args.accuracy_model:
        results["accuracy"] = accuracy(args)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
