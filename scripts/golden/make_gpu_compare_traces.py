#!/usr/bin/env python3
"""Real torch.profiler GPU traces of two runs for `tach analyze A B` and the roofline's memory side.

One transformer block's forward under torch.no_grad() on a CUDA GPU, profiled through
torch.profiler's schedule (ten steps unprofiled, then 12 profiled) with record_shapes, twice:
  gpu_compare/f32/   in float32
  gpu_compare/bf16/  the same block and input in bfloat16
The elementwise ops (add, gelu) move far more bytes than they compute and are memory-bound on any
GPU; the bf16 run moves half the bytes.

Run on a machine with a CUDA GPU:  python3 scripts/golden/make_gpu_compare_traces.py OUT_DIR
(the committed files were written on an NVIDIA H200; OUT_DIR defaults to tests/fixtures/analyze).
"""
import gzip
import os
import shutil
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

STEPS = 12


class Block(torch.nn.Module):
    def __init__(self, d, heads=8):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def run(directory, dtype):
    torch.manual_seed(0)
    model = Block(1024).cuda().to(dtype).eval()
    x = torch.randn(16, 512, 1024, device="cuda", dtype=dtype)
    written = []

    def on_ready(prof):
        path = os.path.join(directory, f"block.{len(written)}.pt.trace.json")
        prof.export_chrome_trace(path)
        with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
            shutil.copyfileobj(f, g)
        os.remove(path)
        written.append(path + ".gz")

    sched = schedule(wait=10, warmup=1, active=STEPS, repeat=1)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                                  on_trace_ready=on_ready, record_shapes=True) as prof:
        for _ in range(10 + 1 + STEPS):
            model(x)
            torch.cuda.synchronize()
            prof.step()
    return written


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "tests",
                                                               "fixtures", "analyze")
    for name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        directory = os.path.join(out, "gpu_compare", name)
        os.makedirs(directory, exist_ok=True)
        for f in run(directory, dtype):
            print(f, os.path.getsize(f), torch.cuda.get_device_name(), file=sys.stderr)


if __name__ == "__main__":
    main()
