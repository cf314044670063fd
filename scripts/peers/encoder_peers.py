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

--fill-mask M1,M2,... (with --head masked-lm and --tokenizer) times the fill-mask task: B texts of
--seq-len tokens (whole-word vocabulary entries, so that each word is one token) with M masks each.
PyTorch and ONNX Runtime run what transformers' FillMaskPipeline runs, their forward to the logits
[B, T, V] on those ids (the pipeline then reads the mask rows). tach's figure is `tach fill-mask
-b B --repeat N`'s median run: the B texts tokenized, one forward at the masks alone (its last
layer and masked-LM head for the masked rows only) and the top-k predictions, so tach's figure
holds work the peers' does not. Beside it, tach's full masked-LM forward (`tach bench --head
masked-lm`'s median, the logits at every token) is timed in the same rounds. The agreement check
compares tach's top-k tokens and scores with PyTorch's softmax at the masks.

PyTorch and ONNX Runtime are built and timed by tach's engine workers' own code (tach.engines:
the model, the ONNX export and its cache, the timing loop), the code `tach bench --engine` runs in
its worker processes; here it runs in this process. The export is cached in --onnx-cache.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tach.engines._requests import Inputs, Load  # noqa: E402  (the engines' own code, from this checkout)
from tach.engines.onnxruntime_engine import OnnxRuntimeEngine  # noqa: E402
from tach.engines.torch_engine import TASKS, TorchEngine  # noqa: E402

# --head -> the engines' task. none: the bare body on every token (tach --head none): what every
# per-token head runs before its head, without the sequence classifier's shortcut (its last layer
# for the first token only).
HEADS = {"sequence-classification": "sequence-classification", "masked-lm": "masked-lm",
         "token-classification": "token-classification", "question-answering": "question-answering",
         "none": "feature-extraction"}


def engine_outputs(engine, names):
    """The engine's outputs on its current inputs, stacked on a last axis: [B, ..., len(names)]."""
    out = engine.op_outputs()["outputs"]
    return np.stack([np.array(out[n]["data"], dtype=np.float32).reshape(out[n]["shape"]) for n in names], -1)


def timed(engine, warmup, reps):
    """The median seconds of `reps` calls after `warmup`, each timed by the engine (as its worker times)."""
    if warmup:
        engine.op_time(warmup)
    return statistics.median(engine.op_time(reps)["ns"]) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json + model.safetensors)")
    ap.add_argument("--tach", default="build/tach")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--head", default="sequence-classification", choices=sorted(HEADS))
    ap.add_argument("--fill-mask", help="comma-separated masks per text (e.g. 1,4): time the fill-mask task "
                    "(needs --head masked-lm and --tokenizer)")
    ap.add_argument("--tokenizer", help="the tokenizer directory for --fill-mask (its vocabulary the model's)")
    ap.add_argument("--top-k", type=int, default=5, help="--fill-mask: predictions per mask")
    ap.add_argument("--json-out", help="write all round figures here")
    ap.add_argument("--onnx-cache", default=os.path.expanduser("~/.cache/tach/onnx"),
                    help="where the ONNX export is kept (one per model content, head and dtype)")
    args = ap.parse_args()
    if args.fill_mask:
        if args.head != "masked-lm" or not args.tokenizer:
            ap.error("--fill-mask needs --head masked-lm and --tokenizer")
        return fill_mask_main(args)

    task = HEADS[args.head]
    outputs = list(TASKS[task][1])
    per_token = args.head != "sequence-classification"
    load = Load(model=os.path.abspath(args.model), task=task, dtype="f32", device="cpu", threads=args.threads,
                cache_dir=args.onnx_cache)
    torch_engine, ort_engine = TorchEngine(), OnnxRuntimeEngine()
    torch_engine.op_load(load)
    setup = ort_engine.op_load(load)["setup"]
    versions = {**ort_engine.versions(), **torch_engine.versions()}  # torch as torch reports itself
    vocab_size = torch_engine.model.config.vocab_size

    print(f"machine: {os.cpu_count()} logical cores; threads per engine: {args.threads}")
    print(f"torch {versions['torch']}, onnxruntime {versions['onnxruntime']}, model {args.model}, seq {args.seq_len}; "
          "ONNX export " + ("cached" if setup["cached"] else f"made in {setup['seconds']:.1f} s"))
    results = {}
    rng = np.random.default_rng(0)
    for B in [int(b) for b in args.batches.split(",")]:
        low = 1000 if vocab_size > 2000 else 5  # past the special tokens
        ids = rng.integers(low, vocab_size, size=(B, args.seq_len), dtype=np.int64)
        mask = np.ones_like(ids)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            for row in ids:
                f.write(" ".join(map(str, row)) + "\n")
            ids_file = f.name
        reps = max(3, min(20, 64 // B))
        warm = 2
        for engine in (torch_engine, ort_engine):
            engine.op_inputs(Inputs(ids.tolist(), mask.tolist()))

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
        ref = engine_outputs(torch_engine, outputs)[:1 if per_token else None]
        o = engine_outputs(ort_engine, outputs)[:ref.shape[0]]
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
                    rounds["torch"].append(timed(torch_engine, warm, reps))
                else:
                    rounds["ort"].append(timed(ort_engine, warm, reps))
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


def fill_mask_texts(tokenizer, B, T, masks, rng):
    """B texts that tokenize to T ids each ([CLS] and [SEP] included), `masks` of them the mask token,
    spread over the text; and their ids as the tokenizer gives them."""
    vocab = tokenizer.get_vocab()
    words = sorted(w for w in vocab if w.isascii() and w.isalpha() and w.islower() and len(w) > 2)
    texts = []
    for _ in range(B):
        row = [words[i] for i in rng.integers(0, len(words), size=T - 2)]
        for m in range(masks):
            row[(m + 1) * (T - 2) // (masks + 1)] = tokenizer.mask_token
        texts.append(" ".join(row))
    enc = tokenizer(texts)
    ids = enc["input_ids"]
    assert all(len(r) == T for r in ids), "a text did not tokenize to --seq-len ids"
    return texts, np.array(ids, dtype=np.int64)


def fill_mask_main(args):
    import torch
    from transformers import AutoTokenizer

    load = Load(model=os.path.abspath(args.model), task="masked-lm", dtype="f32", device="cpu",
                threads=args.threads, cache_dir=args.onnx_cache)
    torch_engine, ort_engine = TorchEngine(), OnnxRuntimeEngine()
    torch_engine.op_load(load)
    setup = ort_engine.op_load(load)["setup"]
    versions = {**ort_engine.versions(), **torch_engine.versions()}
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    mask_counts = [int(m) for m in args.fill_mask.split(",")]
    print(f"machine: {os.cpu_count()} logical cores; threads per engine: {args.threads}")
    print(f"torch {versions['torch']}, onnxruntime {versions['onnxruntime']}, model {args.model}, seq {args.seq_len}; "
          "ONNX export " + ("cached" if setup["cached"] else f"made in {setup['seconds']:.1f} s"))
    rng = np.random.default_rng(0)
    results = {}
    for B in [int(b) for b in args.batches.split(",")]:
        reps = max(3, min(20, 64 // B))
        warm = 2
        cases = {m: fill_mask_texts(tokenizer, B, args.seq_len, m, rng) for m in mask_counts}
        # The peers' work does not depend on the masks: one set of ids for them.
        ids = cases[mask_counts[0]][1]
        for engine in (torch_engine, ort_engine):
            engine.op_inputs(Inputs(ids.tolist(), np.ones_like(ids).tolist()))

        def run_fill_mask(texts, warmup=warm, repeat=reps):
            cmd = [args.tach, "fill-mask", "--model", args.model, "-k", args.tokenizer, "--json", "-b", str(B),
                   "--top-k", str(args.top_k), "--threads", str(args.threads), "--warmup", str(warmup),
                   "--repeat", str(repeat)]
            for t in texts:
                cmd += ["--text", t]
            return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

        def bench_full():
            with tempfile.TemporaryDirectory() as runs:
                subprocess.run([args.tach, "bench", "--model", args.model, "-b", str(B), "-s", str(args.seq_len),
                                "-t", str(args.threads), "--warmup", str(warm), "--runs", str(reps), "--no-progress",
                                "--runs-dir", runs, "--run-id", "peers", "--no-tensorboard"],
                               check=True, capture_output=True, text=True)
                with open(os.path.join(runs, "peers", "results.jsonl")) as f:
                    return json.loads(f.readline())["batch_latency_ms"]["median"] / 1e3

        # Agreement: tach's predictions against PyTorch's softmax at the masks, every text and mask.
        for m, (texts, case_ids) in cases.items():
            got = run_fill_mask(texts, 0, 1)
            with torch.no_grad():
                logits = torch_engine.model(input_ids=torch.from_numpy(case_ids),
                                            attention_mask=torch.ones_like(torch.from_numpy(case_ids))).logits
            worst, same = 0.0, True
            for b, r in enumerate(got["results"]):
                assert r["input_ids"] == case_ids[b].tolist(), "tach tokenized a text differently"
                for mask in r["masks"]:
                    probs = torch.softmax(logits[b, mask["position"]].double(), -1)
                    top = torch.topk(probs, args.top_k)
                    same &= [p["token"] for p in mask["predictions"]] == top.indices.tolist()
                    worst = max(worst, max(abs(p["score"] - float(probs[p["token"]])) for p in mask["predictions"]))
            print(f"\nbatch {B}, {m} mask(s) per text: top-{args.top_k} tokens "
                  f"{'equal' if same else 'DIFFER'}, max |score diff| {worst:.1e}")

        names = [f"tach fill-mask {m}" for m in mask_counts] + ["tach full", "torch", "ort"]
        rounds = {k: [] for k in names}
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                if name == "torch":
                    rounds[name].append(timed(torch_engine, warm, reps))
                elif name == "ort":
                    rounds[name].append(timed(ort_engine, warm, reps))
                elif name == "tach full":
                    rounds[name].append(bench_full())
                else:
                    rounds[name].append(run_fill_mask(cases[int(name.split()[-1])][0])["timing"]["fill_s"])
        med = {k: statistics.median(v) for k, v in rounds.items()}
        results[B] = {"rounds": rounds, "median_s": med}
        for k in names:
            v = rounds[k]
            print(f"  {k:17s} {med[k]*1e3:9.2f} ms/batch  (rounds {min(v)*1e3:.2f}..{max(v)*1e3:.2f})  "
                  f"torch/it {med['torch'] / med[k]:.2f}x  ort/it {med['ort'] / med[k]:.2f}x")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
