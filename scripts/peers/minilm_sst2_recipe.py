#!/usr/bin/env python3
"""The MiniLM SST-2 fine-tuning recipe (../shared/models/README.md) on tach and on PyTorch,
alternating per seed on one machine: dev accuracy, median step time and training wall time.

    ~/tach-ref/bin/python scripts/peers/minilm_sst2_recipe.py --tach build/tach \
        --model ~/.cache/tach-models/all-MiniLM-L6-v2 --sst2 ../shared/data/sst2 --seeds 0 1 2

The recipe: SST-2 train's first 8,000 sentences in file order, 1 epoch, batch 32, padded and
truncated to 64 tokens, dropout as config.json, AdamW lr 5e-5 with torch's defaults (weight
decay 0.01 on every parameter), no warm-up, no schedule, no clipping; dev (872) truncated to 128.
PyTorch runs the reference script shipped beside the model README (finetune_reference.py).
Development only.
"""
import argparse, csv, glob, json, os, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--tach", default="build/tach")
ap.add_argument("--model", default=os.path.expanduser("~/.cache/tach-models/all-MiniLM-L6-v2"))
ap.add_argument("--sst2", default="../shared/data/sst2")
ap.add_argument("--reference", default="../shared/models/finetune_reference.py")
ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
ap.add_argument("--samples", type=int, default=8000)
ap.add_argument("--method", default="full", choices=["full", "lora", "qlora"],
                help="lora/qlora: r 8, alpha 16 on query and value, the head trained, lr 5e-4 (the README's LoRA "
                     "row); PyTorch runs peft's LoRA for both (the reference has no QLoRA)")
ap.add_argument("--engines", nargs="+", default=["tach", "torch"])
a = ap.parse_args()
LORA = a.method != "full"
METHOD_ARGS = (["--method", a.method, "--lora-r", "8", "--lora-alpha", "16", "--lora-target-modules", "query,value",
                "--modules-to-save", "classifier"] if LORA else [])


def run_tach(seed, runs):
    t0 = time.perf_counter()
    subprocess.run([a.tach, "train", "-m", a.model, "-d", f"{a.sst2}/train.tsv", "--eval-dataset", f"{a.sst2}/dev.tsv",
                    "--max-samples", str(a.samples), "--no-shuffle", "-b", "32", "--padding", "max_length", "-s", "64",
                    "--eval-max-length", "128", "--epochs", "1", "--lr", "5e-4" if LORA else "5e-5", "--weight-decay", "0.01",
                    "--decay-scope", "all", "--max-grad-norm", "0", "--schedule", "constant", "--seed", str(seed),
                    "--threads", "2", "--runs-dir", runs, "--run-id", f"seed{seed}", "--no-progress"] + METHOD_ARGS,
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    run = os.path.join(runs, f"seed{seed}")
    rows = list(csv.DictReader(open(os.path.join(run, "epoch_results.csv"))))
    steps = [json.loads(l)["metrics"] for l in open(os.path.join(run, "steps.jsonl"))]
    step_ms = [m["step_ms"] for m in steps if "step_ms" in m]
    summary = json.load(open(os.path.join(run, "summary.json")))
    return {"dev_accuracy": float(rows[-1]["eval_accuracy"]), "step_ms_median": statistics.median(step_ms[3:]),
            "train_s": summary["train_seconds"], "process_s": wall}


def run_torch(seed):
    out = subprocess.run([sys.executable, a.reference, a.model, a.sst2, "--seed", str(seed), "--samples",
                          str(a.samples), "--method", "lora" if LORA else "full"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


results = {"tach": [], "torch": []}
print(f"method: {a.method}", flush=True)
with tempfile.TemporaryDirectory() as runs:
    for seed in a.seeds:
        for engine in a.engines:
            r = run_tach(seed, runs) if engine == "tach" else run_torch(seed)
            results[engine].append(r)
            print(f"seed {seed} {engine:5s}: dev accuracy {r['dev_accuracy']:.4f}, median step "
                  f"{r['step_ms_median']:.0f} ms, training {r['train_s']:.0f} s", flush=True)
print()
for engine in ("tach", "torch"):
    rs = results[engine]
    if not rs:
        continue
    acc = [r["dev_accuracy"] for r in rs]
    print(f"{engine:5s}: dev accuracy mean {statistics.mean(acc):.4f} (seeds {', '.join(f'{x:.4f}' for x in acc)}), "
          f"median step {statistics.median(r['step_ms_median'] for r in rs):.0f} ms, "
          f"training {statistics.median(r['train_s'] for r in rs):.0f} s (median over seeds)")
if not results["tach"] or not results["torch"]:
    print(json.dumps(results))
    sys.exit(0)
ta = statistics.mean(r["dev_accuracy"] for r in results["tach"])
pa = statistics.mean(r["dev_accuracy"] for r in results["torch"])
ts = statistics.median(r["step_ms_median"] for r in results["tach"])
ps = statistics.median(r["step_ms_median"] for r in results["torch"])
print(f"accuracy difference (tach - torch): {100 * (ta - pa):+.2f} points; step time ratio torch/tach: {ps / ts:.2f}x")
print(json.dumps({"tach": results["tach"], "torch": results["torch"]}))
