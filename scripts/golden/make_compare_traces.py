#!/usr/bin/env python3
"""Real torch.profiler traces of two runs for `tach analyze A B` (the comparison) and the roofline's
memory side.

Two CPU inference runs of a small transformer block under torch.no_grad(), each profiled through
torch.profiler's schedule and tensorboard_trace_handler (gzip) with record_shapes and with_flops,
two profiling cycles of 12 steps each, after ten unprofiled ones:
  compare/base/   width 64
  compare/wide/   width 256 (the same model four times wider: a different configuration)
Two cycles of one run are the same run measured twice (no change to find); base/ against wide/ is
a real change. Beside each run, `<run>/key_averages.json`: torch's own rows (by name and by input
shapes) for each cycle, and the wall time of each step as the loop measured it.

Run in the development virtualenv:  ~/tach-ref/bin/python scripts/golden/make_compare_traces.py
Output: tests/fixtures/analyze/compare/{base,wide}/ (small: few steps, no stacks or memory events).
"""
import glob
import json
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "analyze", "compare")
STEPS_PER_CYCLE = 12


class Block(torch.nn.Module):
    def __init__(self, d, heads=4):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def rows(averages):
    return [{"key": e.key, "count": e.count, "self_cpu_time_total": e.self_cpu_time_total,
             "cpu_time_total": e.cpu_time_total, "flops": e.flops,
             "input_shapes": str(e.input_shapes) if e.input_shapes else ""} for e in averages]


def run(directory, worker, d):
    torch.manual_seed(0)
    model = Block(d).eval()
    x = torch.randn(8, 32, d)
    cycles, handler = [], tensorboard_trace_handler(directory, worker_name=worker, use_gzip=True)

    def on_ready(prof):
        before = set(glob.glob(os.path.join(directory, "*.pt.trace.json.gz")))
        handler(prof)
        (written,) = set(glob.glob(os.path.join(directory, "*.pt.trace.json.gz"))) - before
        # The handler names files <worker>.<time in ns>; the cycle number keeps the names stable.
        os.replace(written, os.path.join(directory, f"{worker}.{len(cycles)}.pt.trace.json.gz"))
        cycles.append({"by_name": rows(prof.key_averages()),
                       "by_shape": rows(prof.key_averages(group_by_input_shape=True))})

    # Ten steps unprofiled first: a process's first steps are slower (allocator, caches), and users
    # skip them the same way.
    sched = schedule(wait=10, warmup=1, active=STEPS_PER_CYCLE, repeat=2)
    walls = []
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], schedule=sched, on_trace_ready=on_ready,
                                  record_shapes=True, with_flops=True) as prof:
        for _ in range(10 + 1 + STEPS_PER_CYCLE + 10 + 1 + STEPS_PER_CYCLE):
            start = time.perf_counter()
            model(x)
            walls.append((time.perf_counter() - start) * 1e3)
            prof.step()
    with open(os.path.join(directory, "key_averages.json"), "w") as f:
        json.dump({"torch": torch.__version__, "width": d, "step_ms": walls, "cycles": cycles}, f,
                  separators=(",", ":"))


def main():
    torch.set_num_threads(1)
    for name, d in (("base", 64), ("wide", 256)):
        directory = os.path.join(OUT, name)
        os.makedirs(directory, exist_ok=True)
        for old in glob.glob(os.path.join(directory, "*")):
            os.remove(old)
        run(directory, name, d)
        for f in sorted(os.listdir(directory)):
            print(os.path.join(name, f), os.path.getsize(os.path.join(directory, f)), file=sys.stderr)


if __name__ == "__main__":
    main()
