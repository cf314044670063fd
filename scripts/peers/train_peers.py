#!/usr/bin/env python3
"""A training step on tach against PyTorch eager (and torch.compile where it works on the CPU):
the same checkpoint, the same shapes, alternating engines over several rounds.

    ~/tach-ref/bin/python scripts/golden/make_encoder_fixtures.py --base build/golden
    ~/tach-ref/bin/python scripts/peers/train_peers.py --model build/golden/distilbert-base-random \
        --batch 8 32 --seq 128 --rounds 3

A step is: forward with the cross-entropy loss, backward, clipping at global norm 1.0 and an AdamW
update (lr 5e-5), as transformers' Trainer runs it by default and as tach's training step does, in f32,
dropout as config.json, on full rows of random token ids (no padding, so neither engine can skip
work the other does). tach's figure is the median of steps timed with its profiler off (`tach
profile --train --overhead-steps N`, the "ms off" median); PyTorch's the median of N timed steps
after two warm-up steps. Each round runs every engine once per shape; the table gives the median
over rounds and the ratio. Development only.
"""
import argparse, json, os, re, statistics, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--tach", default="build/tach")
ap.add_argument("--model", default="build/golden/distilbert-base-random")
ap.add_argument("--batch", type=int, nargs="+", default=[8, 32])
ap.add_argument("--seq", type=int, default=128)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--steps", type=int, default=5)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--compile", action="store_true", help="also torch.compile (inductor); slow to compile")
ap.add_argument("--method", default="full", choices=["full", "lora"],
                help="lora: PEFT LoRA (r 8, alpha 8, every linear of the layers, head saved) on both sides")
ap.add_argument("--tach-variants", nargs="+", default=None,
                help="tach runs to time, each METHOD[+ckpt] (e.g. lora qlora lora+ckpt; default: --method); the "
                     "first is the ratios' base; +ckpt adds --gradient-checkpointing")
ap.add_argument("--no-torch", action="store_true", help="time tach's variants only")
ap.add_argument("--compile-rounds", type=int, default=1,
                help="rounds that include torch.compile (each compiles afresh: minutes on 2 cores)")
a = ap.parse_args()

TORCH_STEP = r'''
import sys, time, statistics, torch
from transformers import AutoModelForSequenceClassification
torch.set_num_threads(int(sys.argv[4])); torch.manual_seed(0)
B, T, steps, compiled, method = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5]), sys.argv[6] == "1", sys.argv[7]
m = AutoModelForSequenceClassification.from_pretrained(sys.argv[1]).float()
if method == "lora":
    from peft import LoraConfig, get_peft_model
    targets = {"distilbert": ["q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"], "bert": ["query", "key", "value", "dense"],
               "qwen2": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}[m.config.model_type]
    m = get_peft_model(m, LoraConfig(r=8, lora_alpha=8, lora_dropout=0.0, target_modules=targets, task_type="SEQ_CLS"))
m.train()
params = [p for p in m.parameters() if p.requires_grad]
ids = torch.randint(1000, m.config.vocab_size, (B, T)); mask = torch.ones(B, T, dtype=torch.long)
labels = torch.randint(0, m.config.num_labels, (B,))
opt = torch.optim.AdamW(params, lr=5e-5)
def step():
    opt.zero_grad(set_to_none=True)
    m(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
if compiled:
    step = torch.compile(step)
t0 = time.perf_counter()
for _ in range(2): step()
warm = time.perf_counter() - t0
times = []
for _ in range(steps):
    t0 = time.perf_counter(); step(); times.append(time.perf_counter() - t0)
print(statistics.median(times) * 1e3, warm)
'''


def torch_ms(B, compiled):
    out = subprocess.run([sys.executable, "-c", TORCH_STEP, a.model, str(B), str(a.seq), str(a.threads), str(a.steps),
                          "1" if compiled else "0", a.method], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed")
    ms, warm = out.stdout.strip().splitlines()[-1].split()
    return float(ms)


def tach_ms(B, variant):
    method, _, extra = variant.partition("+")
    out = subprocess.run([a.tach, "profile", "--train", "--method", method, "-m", a.model, "-b", str(B), "-s", str(a.seq), "-t",
                          str(a.threads), "--overhead-steps", str(a.steps), "--profiler-output-dir", "/tmp/tach-train-peers"]
                         + (["--gradient-checkpointing"] if extra == "ckpt" else []),
                         capture_output=True, text=True, check=True)
    m = re.search(r"medians\): ([0-9.]+) ms off", out.stdout)
    return float(m.group(1))


variants = a.tach_variants or [a.method]
engines = [f"tach {v}" if a.tach_variants else "tach" for v in variants]
engines += ([] if a.no_torch else ["torch eager"] + (["torch.compile"] if a.compile else []))
results = {(e, B): [] for e in engines for B in a.batch}
broken = {}
for r in range(a.rounds):
    for B in a.batch:
        for e in engines:
            if e in broken or (e == "torch.compile" and r >= a.compile_rounds):
                continue
            try:
                ms = tach_ms(B, variants[engines.index(e)]) if e.startswith("tach") else torch_ms(B, e == "torch.compile")
            except Exception as ex:  # torch.compile may not work on this CPU or toolchain
                broken[e] = str(ex)
                continue
            results[(e, B)].append(ms)
            print(f"round {r + 1} batch {B:3d} {e:14s} {ms:9.1f} ms/step", flush=True)
print()
print(f"training step ({a.method}), {os.path.basename(a.model)}, seq {a.seq}, f32, {a.threads} threads, median over {a.rounds} rounds"
      + (f" ({a.compile_rounds} for torch.compile)" if a.compile else ""))
for B in a.batch:
    base = statistics.median(results[(engines[0], B)])
    line = f"  batch {B:3d}: {engines[0]} {base:8.1f} ms"
    for e in engines[1:]:
        if results[(e, B)]:
            ms = statistics.median(results[(e, B)])
            line += f", {e} {ms:8.1f} ms ({ms / base:.2f}x {engines[0]}'s time)"
    print(line)
for e, why in broken.items():
    print(f"  {e}: did not run ({why})")
