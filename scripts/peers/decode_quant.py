#!/usr/bin/env python3
"""Batch-1 decoding with quantized weights against f32, in one run: tach generate --dtype f32,
int8, nf4 (and bf16 where this CPU has a bf16 GEMM) on the same causal LM and prompt.

Speed: R rounds; in each, every dtype runs `tach generate --json` once (order rotated per round:
one warm-up generation, then a timed one of --new-tokens tokens); a round's figure is the median
time per output token. Reported: the median over rounds, tokens/s, the ratio to f32, the p90/p10
of each round, and the bandwidth limit tach reports (weight and cache bytes per step over the
measured memory bandwidth) with the median's fraction of it.

Quality: greedy-token agreement with f32 (the share of generated positions equal, and the first
position that differs), and the next-token cross-entropy on a fixed text (the first --loss-tokens
tokens of SST-2's dev sentences through the Qwen2.5 tokenizer), from tach's own LM logits
(tach.Model.lm_logits, the Python module in build/python).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np


def generate(args, dtype, prompt):
    out = subprocess.run([args.tach, "generate", "-m", args.model, "--ids", " ".join(map(str, prompt)), "-n",
                          str(args.new_tokens), "--ignore-eos", "--json", "--dtype", dtype, "--warmup", "1"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def fixed_text_ids(args):
    sys.path.insert(0, args.python)
    import tach
    tok = tach.Tokenizer(args.tokenizer)
    ids = []
    with open(args.text) as f:
        next(f)  # header
        for line in f:
            ids += tok.encode(line.split("\t")[0], add_special_tokens=False)["ids"]
            if len(ids) >= args.loss_tokens:
                break
    return ids[:args.loss_tokens]


def loss(args, dtype, ids):
    sys.path.insert(0, args.python)
    import tach
    model = tach.load_model(args.model, dtype=dtype)
    logits = model.lm_logits([ids])[0].astype(np.float64)  # [T, V]
    logits -= logits.max(-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return float(-np.mean(logp[np.arange(len(ids) - 1), ids[1:]]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a causal LM (or decoder with tied embeddings) checkpoint directory")
    ap.add_argument("--tach", default="build/tach")
    ap.add_argument("--python", default="build/python", help="where the tach Python module was built")
    ap.add_argument("--dtypes", default="f32,int8,nf4")
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tokenizer", default="../shared/tokenizers/qwen2.5")
    ap.add_argument("--text", default="../shared/data/sst2/dev.tsv")
    ap.add_argument("--loss-tokens", type=int, default=256)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    dtypes = args.dtypes.split(",")
    rng = np.random.default_rng(0)
    prompt = [int(i) for i in rng.integers(0, 151643, size=args.prompt_len)]

    first = {d: generate(args, d, prompt) for d in dtypes}
    ref = first["f32"]["tokens"][0]
    rounds = {d: [] for d in dtypes}
    spread = {d: [] for d in dtypes}
    fraction = {d: [] for d in dtypes}
    for r in range(args.rounds):
        for d in dtypes[r % len(dtypes):] + dtypes[:r % len(dtypes)]:
            g = generate(args, d, prompt)
            t = g["time_per_output_token_ms"]
            rounds[d].append(t["median"])
            spread[d].append(t["p90"] / t["p10"])
            fraction[d].append(g["decode_limit"]["median_fraction_of_limit"])
    ids = fixed_text_ids(args)
    losses = {d: loss(args, d, ids) for d in dtypes}

    print(f"model {args.model}; prompt {args.prompt_len} random ids (seed 0), {args.new_tokens} new tokens, "
          f"batch 1; {args.rounds} rounds")
    results = {}
    f32 = statistics.median(rounds["f32"])
    for d in dtypes:
        med = statistics.median(rounds[d])
        toks = first[d]["tokens"][0]
        same = sum(a == b for a, b in zip(toks, ref))
        diverge = next((i for i, (a, b) in enumerate(zip(toks, ref)) if a != b), None)
        lim = first[d]["decode_limit"]
        print(f"  {d:5s} {med:8.2f} ms/token (rounds {min(rounds[d]):.2f}..{max(rounds[d]):.2f}) "
              f"{1e3 / med:7.2f} tokens/s  {f32 / med:5.2f}x f32   p90/p10 max {max(spread[d]):.2f}   "
              f"limit {lim['limit_ms']:.2f} ms ({lim['weight_bytes_per_step'] / 1e9:.3f} GB/step), median at "
              f"{100 * statistics.median(fraction[d]):.1f}%   greedy tokens equal to f32 {same}/{len(ref)}"
              f" (first difference at {diverge})   loss {losses[d]:.4f} ({losses[d] - losses['f32']:+.4f})")
        results[d] = {"ms_per_token_rounds": rounds[d], "median_ms": med, "p90_over_p10": spread[d],
                      "fraction_of_limit": fraction[d], "limit": lim, "tokens_equal": same,
                      "first_difference": diverge, "loss": losses[d]}
    print(f"  loss: next-token cross-entropy over the first {len(ids)} tokens of {args.text}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
