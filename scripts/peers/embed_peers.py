#!/usr/bin/env python3
"""tach embed vs sentence-transformers' encode: the same model, the same texts, the same run.

Each round runs tach (the CLI, `tach embed --json`, whose tokenize_s + forward_s are the encode
work; model loading is excluded on both sides) and SentenceTransformer.encode (wall clock of the
call, model loaded beforehand), in an order rotated per round. Reported: per engine the median
over rounds of texts/s, min..max, the ratio tach/peer (> 1: tach is faster), and the least
cosine similarity between the two engines' vectors. Threads: both get --threads.

    scripts/peers/embed_peers.py --model ~/.cache/tach-models/all-MiniLM-L6-v2 \
        --texts ../shared/data/sst2/dev.tsv --rounds 3
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--texts", required=True, help="a .tsv/.csv with a 'text' column, or one text per line")
    ap.add_argument("--tach", default="build/tach")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.texts.endswith((".tsv", ".csv")):
        with open(a.texts, encoding="utf-8", newline="") as f:
            texts = [r["text"] for r in csv.DictReader(f, delimiter="\t" if a.texts.endswith(".tsv") else ",")]
    else:
        texts = open(a.texts, encoding="utf-8").read().splitlines()
    st = SentenceTransformer(a.model, device="cpu")
    st.encode(texts[:64], batch_size=a.batch_size)  # warm-up
    rates = {"tach": [], "sentence-transformers": []}
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "v.npy")
        ref = None
        for r in range(a.rounds):
            order = ["tach", "sentence-transformers"] if r % 2 == 0 else ["sentence-transformers", "tach"]
            for eng in order:
                if eng == "tach":
                    p = subprocess.run([a.tach, "embed", "-m", a.model, "-f", a.texts, "--json", "-o", out,
                                        "-b", str(a.batch_size), "-t", str(a.threads)],
                                       check=True, capture_output=True, text=True)
                    t = json.loads(p.stdout)["timing"]
                    rates[eng].append(len(texts) / (t["tokenize_s"] + t["forward_s"]))
                else:
                    t0 = time.perf_counter()
                    ref = st.encode(texts, batch_size=a.batch_size, convert_to_numpy=True)
                    rates[eng].append(len(texts) / (time.perf_counter() - t0))
        got = np.load(out)
    cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
    print(f"{len(texts)} texts, batch {a.batch_size}, {a.threads} threads, {a.rounds} rounds (medians; min..max)")
    for eng, v in rates.items():
        print(f"  {eng:22s} {statistics.median(v):8.1f} texts/s  ({min(v):.1f}..{max(v):.1f})")
    print(f"  tach / sentence-transformers: {statistics.median(rates['tach']) / statistics.median(rates['sentence-transformers']):.2f}x")
    print(f"  least cosine(tach, sentence-transformers): {cos.min():.8f}; largest |difference| {np.abs(got - ref).max():.2e}")


if __name__ == "__main__":
    sys.exit(main())
