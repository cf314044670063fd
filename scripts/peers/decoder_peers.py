#!/usr/bin/env python3
"""Decoder prefill and decode: tach vs PyTorch eager vs ONNX Runtime on the same causal LM (same
weights, same token ids), in one run. scripts/golden/make_decoder_fixtures.py --base writes
Llama-3.2-1B- and Qwen3-0.6B-sized checkpoints with random weights (f32).

Prefill (batch 1 and 8, seq 128 by default): the forward over the prompt and the LM head at each
row's last position (tach: generate -n 1's time to first token; PyTorch: model(ids,
logits_to_keep=1) and the argmax; ONNX Runtime: the same module exported with torch.onnx's
dynamo exporter). Decode (batch 1): a 32-token prompt, then 32 greedy tokens; the median time per
new token (tach: generate's time_per_output_token; PyTorch: one forward with its DynamicCache
per token). Each round runs every engine once, alternating the order; a round's figure is the
median of its timed runs; reported: the median over rounds, the min..max, and the ratios
(> 1: tach faster). The first tokens are checked to agree before anything is timed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import transformers as tf

from encoder_peers import timed  # the same timing loop as the encoder peers (this folder)


class Prefill(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        return self.m(input_ids=ids, use_cache=False, logits_to_keep=1).logits[:, -1]


def export_onnx(model, path, seq_len):
    if os.path.exists(path):
        return
    ids = torch.randint(0, 100, (2, seq_len))
    prog = torch.onnx.export(Prefill(model), (ids,), None, input_names=["ids"], output_names=["logits"],
                             dynamic_shapes=({0: torch.export.Dim("b"), 1: torch.export.Dim("t", min=2)},),
                             dynamo=True, opset_version=18)
    prog.save(path, external_data=True)


def tach_generate(args, path, ids, new_tokens):
    cmd = [args.tach, "generate", "-m", path, "-n", str(new_tokens), "--ignore-eos", "--json", "--warmup", "1",
           "--threads", str(args.threads)]
    for row in ids:
        cmd += ["--ids", " ".join(map(str, row))]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def report(name, rounds, unit_scale, unit, per):
    med = {k: statistics.median(v) for k, v in rounds.items()}
    for k, v in rounds.items():
        print(f"  {k:6s} {med[k] * unit_scale:9.1f} {unit}  (rounds {min(v) * unit_scale:.1f}..{max(v) * unit_scale:.1f})"
              f"  {per / med[k]:8.2f} {'samples' if per > 1 or 'prefill' in name else 'tokens'}/s")
    for peer in [k for k in rounds if k != "tach"]:
        print(f"  ratio  {peer}/tach {med[peer] / med['tach']:.2f}x   (> 1: tach faster)")
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="checkpoint directories (config.json + model.safetensors)")
    ap.add_argument("--tach", default="build/tach")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--decode-prompt", type=int, default=32)
    ap.add_argument("--decode-tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"machine: {os.cpu_count()} logical cores; threads per engine: {args.threads}; torch {torch.__version__}, "
          f"transformers {tf.__version__}")
    rng = np.random.default_rng(0)
    results = {}
    for path in args.models:
        name = os.path.basename(os.path.normpath(path))
        model = tf.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        V = model.config.vocab_size
        sess = None
        if not args.no_ort:
            import onnxruntime as ort
            onnx_path = os.path.join(path, "prefill.onnx")
            t0 = time.time()
            export_onnx(model, onnx_path, args.seq_len)
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            so.inter_op_num_threads = 1
            sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
            print(f"{name}: ONNX export and session {time.time() - t0:.0f} s")
        for B in [int(b) for b in args.batches.split(",")]:
            ids = rng.integers(0, V, size=(B, args.seq_len), dtype=np.int64)
            tids = torch.from_numpy(ids)

            def run_torch():
                with torch.no_grad():
                    return Prefill(model)(tids).argmax(-1)

            def run_ort():
                return sess.run(None, {"ids": ids})[0].argmax(-1)

            first = tach_generate(args, path, ids, 1)
            want = run_torch().tolist()
            got = [r[0] for r in first["tokens"]]
            print(f"\n{name} prefill, batch {B} x {args.seq_len}: first tokens tach {got}, torch {want}" +
                  (f", onnxruntime {run_ort().tolist()}" if sess else ""))
            assert got == want, "tach's first tokens differ from PyTorch's"
            rounds = {"tach": [], "torch": []} | ({"ort": []} if sess else {})
            reps = 3 if B == 1 else 1
            for r in range(args.rounds):
                order = list(rounds)
                order = order[r % len(order):] + order[:r % len(order)]
                for engine in order:
                    if engine == "tach":
                        rounds["tach"].append(tach_generate(args, path, ids, 1)["time_to_first_token_ms"] / 1e3)
                    elif engine == "torch":
                        rounds["torch"].append(timed(run_torch, 1, reps))
                    else:
                        rounds["ort"].append(timed(run_ort, 1, reps))
            results[f"{name}/prefill/b{B}"] = {"rounds": rounds,
                                               "median_s": report("prefill", rounds, 1e3, "ms/batch", B)}

        # Decode at batch 1.
        prompt = rng.integers(0, V, size=(1, args.decode_prompt), dtype=np.int64)
        N = args.decode_tokens

        def torch_decode():
            with torch.no_grad():
                ids = torch.from_numpy(prompt)
                out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
                cache, tok = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
                steps, tokens = [], [int(tok)]
                for _ in range(N - 1):
                    t0 = time.perf_counter()
                    out = model(input_ids=tok, past_key_values=cache, use_cache=True)
                    cache, tok = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
                    steps.append(time.perf_counter() - t0)
                    tokens.append(int(tok))
                return statistics.median(steps), tokens

        g = tach_generate(args, path, prompt, N)
        _, torch_tokens = torch_decode()
        print(f"\n{name} decode, batch 1, prompt {args.decode_prompt}, {N} new tokens: tokens equal: "
              f"{g['tokens'][0] == torch_tokens}")
        rounds = {"tach": [], "torch": []}
        spreads = []  # tach's p90/p10 per round
        for r in range(args.rounds):
            for engine in (["tach", "torch"] if r % 2 == 0 else ["torch", "tach"]):
                if engine == "tach":
                    t = tach_generate(args, path, prompt, N)["time_per_output_token_ms"]
                    rounds["tach"].append(t["median"] / 1e3)
                    spreads.append(t["p90"] / t["p10"])
                else:
                    rounds["torch"].append(torch_decode()[0])
        med = report("decode", rounds, 1e3, "ms/token", 1)
        # The bandwidth limit tach generate reports: weight and cache bytes per step over the
        # measured memory bandwidth; the fraction is limit / median.
        lim = g["decode_limit"]
        print(f"  bandwidth limit {lim['limit_ms']:.2f} ms/token ({lim['weight_bytes_per_step'] / 1e9:.3f} GB weights "
              f"+ {lim['cache_bytes_per_step'] / 1e6:.1f} MB cache over {lim['memory_bytes_per_s'] / 1e9:.1f} GB/s): "
              f"tach's median at {100 * lim['limit_ms'] / 1e3 / med['tach']:.1f}%, PyTorch's at "
              f"{100 * lim['limit_ms'] / 1e3 / med['torch']:.1f}%; tach p90/p10 per round "
              f"{', '.join(f'{s:.2f}' for s in spreads)}")
        results[f"{name}/decode"] = {"rounds": rounds, "median_s": med, "limit": lim, "tach_p90_over_p10": spreads}
        del model, sess
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
