#!/usr/bin/env python3
"""tach on CUDA against PyTorch eager, torch.compile and ONNX Runtime's CUDA provider, same
weights, same inputs, same run: the speed targets of the CUDA backend.

Runs on a machine with an NVIDIA GPU (scripts/gpu/check.sh calls it with the packed tach).
Weights: DistilBERT-base and a Qwen2.5-0.5B-sized decoder with seeded random weights, written
once with save_pretrained (safetensors), so that every engine reads the same files.

  encoder: DistilBERT-base, sequence 128, batch 1 and 32, f32 and bf16. Latency per batch.
  decoder: batch 1, a 128-token prompt, 64 greedy tokens, f32 and bf16. Time per output token,
           and the memory-bandwidth limit (weight bytes read per token over the measured
           device-to-device bandwidth, from `tach info --ceilings`).

Method: R rounds; in each round every engine runs W warm-ups and N timed calls, in an order
rotated per round; a round's figure is the median of its N (wall clock after
torch.cuda.synchronize for the peers; tach's own median for tach). Reported: the median over
rounds, min..max over rounds, and peer/tach ratios (> 1: tach faster).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from transformers import DistilBertConfig, DistilBertForSequenceClassification, Qwen2Config, Qwen2ForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tach.engines._requests import Inputs, Load  # noqa: E402  (the engines' own code, from this checkout)
from tach.engines.onnxruntime_engine import OnnxRuntimeEngine  # noqa: E402
from tach.engines.torch_engine import TorchCompileEngine, TorchEngine  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
DEVICE = "cuda:0"  # the encoder engines' device


def make_checkpoints(root):
    enc, dec = os.path.join(root, "distilbert-base"), os.path.join(root, "qwen2-0.5b-sized")
    torch.manual_seed(0)
    if not os.path.exists(os.path.join(enc, "model.safetensors")):
        DistilBertForSequenceClassification(DistilBertConfig(num_labels=2)).save_pretrained(enc)
    if not os.path.exists(os.path.join(dec, "model.safetensors")):
        cfg = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                          num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                          rope_theta=1e6, tie_word_embeddings=True, rms_norm_eps=1e-6)
        Qwen2ForCausalLM(cfg).save_pretrained(dec)
    return enc, dec


def report(title, rounds, unit_scale=1e3, unit="ms"):
    med = {k: statistics.median(v) for k, v in rounds.items() if v}
    print(title)
    for k, v in rounds.items():
        if v:
            print(f"  {k:14s} {med[k]*unit_scale:9.3f} {unit}  (rounds {min(v)*unit_scale:.3f}..{max(v)*unit_scale:.3f})")
    for k in med:
        if k != "tach":
            print(f"  ratio {k}/tach {med[k] / med['tach']:.2f}x")
    return med


def engine_timed(engine, warmup, reps):
    """The median seconds of `reps` calls after `warmup`, each timed by the engine as its worker times
    it (torch.cuda.synchronize inside the timed region)."""
    engine.op_time(warmup)
    return statistics.median(engine.op_time(reps)["ns"]) / 1e9


def encoder(args, path):
    """PyTorch eager, torch.compile and ONNX Runtime's CUDA provider built and timed by tach's engine
    workers' own code (tach.engines), the code `tach bench --engine` runs."""
    out = {}
    task = "sequence-classification"
    ort_engine = OnnxRuntimeEngine()
    has_ort = DEVICE in ort_engine.devices()
    if has_ort:
        ort_engine.op_load(Load(model=path, task=task, dtype="f32", device=DEVICE,
                                cache_dir=os.path.join(args.root, "onnx")))
    rng = np.random.default_rng(0)
    for dt in args.dtypes.split(","):
        eager, compiled = TorchEngine(), TorchCompileEngine()
        for engine in (eager, compiled):
            engine.op_load(Load(model=path, task=task, dtype=dt, device=DEVICE))
        for B in [int(b) for b in args.batches.split(",")]:
            ids = rng.integers(1000, 30522, size=(B, args.seq_len), dtype=np.int64)
            mask = np.ones_like(ids)
            peers = [eager, compiled] + ([ort_engine] if has_ort and dt == "f32" else [])
            for engine in peers:
                engine.op_inputs(Inputs(ids.tolist(), mask.tolist()))
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write("\n".join(" ".join(map(str, r)) for r in ids) + "\n")
                ids_file = f.name
            reps, warm = max(10, 200 // B), 5

            def run_tach():
                res = subprocess.run([args.tach, "classify", "--model", path, "--device", DEVICE.split(":")[0],
                                      "--dtype", dt, "--ids-file", ids_file, "--json", "--warmup", str(warm),
                                      "--repeat", str(reps)], check=True, capture_output=True, text=True)
                return json.loads(res.stdout)

            logits = eager.op_outputs()["outputs"]["logits"]
            ref = np.array(logits["data"]).reshape(logits["shape"])
            got = np.array([r["logits"] for r in run_tach()["rows"]])
            print(f"\nDistilBERT-base {dt}, batch {B}, seq {args.seq_len}: max |logit diff| / max |logit| "
                  f"tach vs torch {np.abs(got - ref).max() / (np.abs(ref).max() + 1e-6):.2e}")
            compiled.op_prepare()  # compiles outside the timing
            engines = {"tach": lambda: run_tach()["timing"]["median"],
                       "torch-eager": lambda: engine_timed(eager, warm, reps),
                       "torch-compile": lambda: engine_timed(compiled, warm, reps)}
            if has_ort and dt == "f32":
                engines["ort-cuda"] = lambda: engine_timed(ort_engine, warm, reps)
            rounds = {k: [] for k in engines}
            names = list(engines)
            for r in range(args.rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    rounds[name].append(engines[name]())
            os.unlink(ids_file)
            out[f"distilbert/{dt}/b{B}"] = {"rounds": rounds, "median_s": report(f"  latency per batch", rounds)}
    return out


def decoder(args, path, bandwidth):
    out = {}
    prompt = np.random.default_rng(1).integers(0, 151643, size=(1, 128)).tolist()
    weight_bytes_f32 = sum(p.numel() for p in Qwen2ForCausalLM.from_pretrained(path).parameters()) * 4
    for dt in args.dtypes.split(","):
        model = Qwen2ForCausalLM.from_pretrained(path, torch_dtype=DTYPES[dt]).eval().cuda()
        ids = torch.tensor(prompt).cuda()

        def torch_per_token():
            with torch.no_grad():
                o = model(input_ids=ids, use_cache=True)
                past, nxt = o.past_key_values, o.logits[:, -1].argmax(-1, keepdim=True)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(args.new_tokens - 1):
                    o = model(input_ids=nxt, past_key_values=past, use_cache=True)
                    past, nxt = o.past_key_values, o.logits[:, -1].argmax(-1, keepdim=True)
                torch.cuda.synchronize()
                return (time.perf_counter() - t0) / (args.new_tokens - 1)

        def tach_per_token(*extra):
            res = subprocess.run([args.tach, "generate", "--model", path, "--device", "cuda", "--dtype", dt,
                                  "--ids", " ".join(map(str, prompt[0])), "-n", str(args.new_tokens), "--ignore-eos",
                                  "--warmup", "1", "--json", *extra], check=True, capture_output=True, text=True)
            return json.loads(res.stdout)["time_per_output_token_ms"]["median"] * 1e-3

        # tach's steps replayed from a captured CUDA graph (its default) and launched kernel by kernel.
        engines = {"tach": tach_per_token, "tach-no-graphs": lambda: tach_per_token("--no-cuda-graphs"),
                   "torch-eager": torch_per_token}
        torch_per_token()  # warm-up
        rounds = {name: [] for name in engines}
        names = list(engines)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:  # order rotated per round
                rounds[name].append(engines[name]())
        print(f"\nQwen2.5-0.5B-sized decode {dt}, batch 1, prompt 128, {args.new_tokens} tokens")
        med = report("  time per output token", rounds)
        # tach keeps f32 weights in memory for f32 compute and bf16 copies for bf16 (the GEMMs' inputs).
        bytes_per_token = weight_bytes_f32 if dt == "f32" else weight_bytes_f32 // 2
        if bandwidth:
            limit_s = bytes_per_token / bandwidth
            print(f"  bandwidth limit {limit_s*1e3:.3f} ms/token ({bytes_per_token/1e9:.2f} GB of weights at "
                  f"{bandwidth/1e12:.2f} TB/s): tach at {limit_s / med['tach'] * 100:.0f}% of it")
        out[f"qwen2/{dt}"] = {"rounds": rounds, "median_s": med}
    return out


def measured_bandwidth(tach):
    res = subprocess.run([tach, "info", "--ceilings"], capture_output=True, text=True)
    m = re.search(r"cuda:0 .*memory (\d+) GB/s", res.stdout)
    return float(m.group(1)) * 1e9 if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tach", default=".gpu/bin/tach")
    ap.add_argument("--root", default="/tmp/tach-gpu-peers", help="where the checkpoints are written")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["encoder", "decoder"], help="one half only")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    enc, dec = make_checkpoints(args.root)
    results = {}
    if args.only != "decoder":
        results.update(encoder(args, enc))
    if args.only != "encoder":
        results.update(decoder(args, dec, measured_bandwidth(args.tach)))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
