#!/usr/bin/env python3
"""Real torch.profiler traces and torch's own key_averages() beside each, for `tach analyze`.

Runs two small CPU sessions with every option on (record_shapes, profile_memory, with_stack,
with_flops) through torch.profiler's schedule and tensorboard_trace_handler (gzip), as users run
them:
  train/    a training loop: DataLoader, forward, backward, AdamW, a gloo all_reduce of one rank
            (so the trace carries distributedInfo); two profiling cycles
  infer/    an inference loop under torch.no_grad(); one cycle, no distributed group
Beside each `<worker>.<n>.pt.trace.json.gz` goes `<same>.key_averages.json`: torch's rows for
the same cycle, by name, by (name, input shapes) and by (name, top 5 stack entries).

Run in the development virtualenv:  ~/tach-ref/bin/python scripts/golden/make_torch_traces.py
Output: tests/fixtures/analyze/{train,infer}/ (kept small: few steps, a small model).
"""
import glob
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "analyze")


def rows(averages):
    out = []
    for e in averages:
        out.append({
            "key": e.key,
            "count": e.count,
            "self_cpu_time_total": e.self_cpu_time_total,
            "cpu_time_total": e.cpu_time_total,
            "self_device_time_total": e.self_device_time_total,
            "device_time_total": e.device_time_total,
            "flops": e.flops,
            "self_cpu_memory_usage": e.self_cpu_memory_usage,
            "cpu_memory_usage": e.cpu_memory_usage,
            "input_shapes": str(e.input_shapes) if e.input_shapes else "",
            "stack": list(e.stack or []),
            "is_user_annotation": bool(getattr(e, "is_user_annotation", False)),
        })
    return out


class Handler:
    """tensorboard_trace_handler, then key_averages() saved beside the file it wrote."""

    def __init__(self, directory, worker):
        self.directory = directory
        self.worker = worker
        self.cycle = 0
        self.inner = tensorboard_trace_handler(directory, worker_name=worker, use_gzip=True)

    def __call__(self, prof):
        before = set(glob.glob(os.path.join(self.directory, "*.pt.trace.json.gz")))
        self.inner(prof)
        (written,) = set(glob.glob(os.path.join(self.directory, "*.pt.trace.json.gz"))) - before
        # The handler names files <worker>.<time in ns>; a cycle number keeps the names stable.
        name = os.path.join(self.directory, f"{self.worker}.{self.cycle}.pt.trace.json.gz")
        os.replace(written, name)
        reference = {
            "torch": torch.__version__,
            "by_name": rows(prof.key_averages()),
            "by_shape": rows(prof.key_averages(group_by_input_shape=True)),
            # group_by_stack_n gives the by-name rows: torch 2.x keeps no stack on trace events.
        }
        with open(name.replace(".pt.trace.json.gz", ".key_averages.json"), "w") as f:
            json.dump(reference, f, separators=(",", ":"))
        self.cycle += 1


class Block(torch.nn.Module):
    def __init__(self, d=32, heads=2):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Classifier(torch.nn.Module):
    def __init__(self, d=32, classes=4):
        super().__init__()
        self.block = Block(d)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.block(x).mean(dim=1))


def options(directory, worker, sched):
    return dict(activities=[ProfilerActivity.CPU], schedule=sched,
                on_trace_ready=Handler(directory, worker), record_shapes=True,
                profile_memory=True, with_stack=True, with_flops=True)


def train(directory):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.manual_seed(0)
    model = Classifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8, 32), torch.randint(0, 4, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    with profile(**options(directory, "trainer", sched)) as prof:
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            optimizer.step()
            prof.step()
    dist.destroy_process_group()


def infer(directory):
    torch.manual_seed(1)
    model = Classifier().eval()
    sched = schedule(wait=1, warmup=1, active=3, repeat=1)
    with torch.no_grad(), profile(**options(directory, "server", sched)) as prof:
        for _ in range(6):
            model(torch.randn(4, 16, 32))
            torch.mm(torch.randn(16, 24), torch.randn(24, 8))
            prof.step()


def main():
    torch.set_num_threads(1)
    for name, run in (("train", train), ("infer", infer)):
        directory = os.path.join(OUT, name)
        os.makedirs(directory, exist_ok=True)
        for old in glob.glob(os.path.join(directory, "*")):
            os.remove(old)
        run(directory)
        for f in sorted(os.listdir(directory)):
            print(os.path.join(name, f), os.path.getsize(os.path.join(directory, f)), file=sys.stderr)


if __name__ == "__main__":
    main()
