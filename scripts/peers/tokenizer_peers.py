#!/usr/bin/env python3
"""tach vs Hugging Face `tokenizers` (Rust) on the same texts, same run, alternating.

Datasets: SST-2 train (67,349 sentences) and the IMDB sample (1,000 reviews), with
bert-base-uncased (special tokens added) and Qwen2.5 (none). Both engines run as
subprocesses that encode the whole list with encode_batch: 1 thread (tokenizers:
RAYON_NUM_THREADS=1), then all threads. Each subprocess does 1 untimed and N timed passes
and reports its median; R rounds alternate the engines; reported is the median over rounds
(range), tokens/s and the ratio tach/tokenizers (> 1: tach faster). Load times are reported
from the same subprocesses.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

HF_CHILD = r'''
import json, sys, time
from tokenizers import Tokenizer
path, texts_file, repeat, special = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
texts = [json.loads(l)["text"] for l in open(texts_file, encoding="utf-8") if l.strip()]
t0 = time.perf_counter(); tok = Tokenizer.from_file(path); load = time.perf_counter() - t0
tok.encode_batch(texts, add_special_tokens=special)
secs = []
for _ in range(repeat):
    a = time.perf_counter(); enc = tok.encode_batch(texts, add_special_tokens=special); secs.append(time.perf_counter() - a)
n = sum(len(e.ids) for e in enc)
med = sorted(secs)[len(secs) // 2]
print(json.dumps({"tokens": n, "median_s": med, "tokens_per_s": n / med, "load_s": load}))
'''


def load_texts(shared, name):
    if name == "sst2-train":
        with open(os.path.join(shared, "data/sst2/train.tsv"), encoding="utf-8") as f:
            rows = f.read().split("\n")[1:]
        return [r.split("\t")[0] for r in rows if r]
    with open(os.path.join(shared, "data/imdb/sample.csv"), encoding="utf-8-sig", newline="") as f:
        return [row["text"] for row in csv.DictReader(f)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    ap.add_argument("--bench", default="build/bench/tach_bench_tokenizer")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import tokenizers
    print(f"tokenizers {tokenizers.__version__}; {os.cpu_count()} logical cores")
    for dataset in ["sst2-train", "imdb"]:
        texts = load_texts(args.shared, dataset)
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
            texts_file = f.name
        for name, special in [("bert-base-uncased", True), ("qwen2.5", False)]:
            path = os.path.join(args.shared, "tokenizers", name, "tokenizer.json")
            for threads in [1, os.cpu_count()]:
                res = {"tach": [], "hf": []}
                for r in range(args.rounds):
                    for eng in (["tach", "hf"] if r % 2 == 0 else ["hf", "tach"]):
                        if eng == "tach":
                            cmd = [args.bench, path, texts_file, "--threads", str(threads), "--repeat", str(args.repeat)]
                            if not special:
                                cmd.append("--no-special")
                            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                        else:
                            env = dict(os.environ, RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true")
                            out = subprocess.run([sys.executable, "-c", HF_CHILD, path, texts_file, str(args.repeat),
                                                  "1" if special else "0"], check=True, capture_output=True,
                                                 text=True, env=env).stdout
                        res[eng].append(json.loads(out))
                t_med = statistics.median(x["median_s"] for x in res["tach"])
                h_med = statistics.median(x["median_s"] for x in res["hf"])
                ntok = res["tach"][0]["tokens"]
                same = ntok == res["hf"][0]["tokens"]
                print(f"{dataset:10s} {name:18s} threads {threads}: {len(texts)} texts, {ntok} tokens "
                      f"({'same count' if same else 'COUNTS DIFFER'})\n"
                      f"  tach       {t_med:8.3f} s ({min(x['median_s'] for x in res['tach']):.3f}.."
                      f"{max(x['median_s'] for x in res['tach']):.3f})  {ntok / t_med / 1e6:6.2f} M tokens/s  "
                      f"load {statistics.median(x['load_s'] for x in res['tach']):.3f} s\n"
                      f"  tokenizers {h_med:8.3f} s ({min(x['median_s'] for x in res['hf']):.3f}.."
                      f"{max(x['median_s'] for x in res['hf']):.3f})  {ntok / h_med / 1e6:6.2f} M tokens/s  "
                      f"load {statistics.median(x['load_s'] for x in res['hf']):.3f} s\n"
                      f"  ratio tokenizers/tach {h_med / t_med:.2f}x (> 1: tach faster)")
        os.unlink(texts_file)


if __name__ == "__main__":
    sys.exit(main())
