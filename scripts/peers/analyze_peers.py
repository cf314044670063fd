#!/usr/bin/env python3
"""tach analyze against Holistic Trace Analysis on the same torch.profiler trace, alternating.

Writes a CPU inference trace with torch.profiler (every option on; STEPS steps, ~114 KB of JSON
per step), then runs, ROUNDS times in turn: `tach analyze TRACE` and HTA's TraceAnalysis with its
temporal breakdown (which fails on a trace without GPU kernels: its parse is what is timed then),
each as its own process under /usr/bin/time for the wall time, the CPU time (user + system) and
the peak RSS.

usage: ~/tach-ref/bin/python scripts/peers/analyze_peers.py TACH [STEPS=400] [ROUNDS=3]
         [--traces DIR]  analyse the traces in DIR (e.g. HTA's GPU test traces) instead of writing one
         [--keep DIR]    write the trace into DIR and keep it (a 1 GB trace is long to write)
Each round prints the load average before it: on a shared machine the figures are upper bounds.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HTA = """
import sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
try:
    a.get_temporal_breakdown(visualize=False)
except Exception as e:
    print("temporal breakdown:", type(e).__name__, e, file=sys.stderr)
"""

TRACE = """
import sys, torch
sys.path.insert(0, sys.argv[3])
from make_torch_traces import Classifier
from torch.profiler import profile, ProfilerActivity
torch.set_num_threads(1)
model = Classifier().eval()
with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                              with_stack=True, with_flops=True) as prof:
    for i in range(int(sys.argv[2])):
        with torch.profiler.record_function(f"ProfilerStep#{i}"):
            model(torch.randn(4, 16, 32))
prof.export_chrome_trace(sys.argv[1])
"""


def timed(cmd):
    r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M %U %S"] + cmd, capture_output=True, text=True)
    if r.returncode != 0 and "temporal breakdown:" not in r.stderr:
        print(f"{cmd[0]} exited {r.returncode}: {r.stderr[-2000:]}", file=sys.stderr)
    m = re.search(r"TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)", r.stderr)
    return float(m.group(1)), int(m.group(2)) / 1024, float(m.group(3)) + float(m.group(4))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tach")
    parser.add_argument("steps", nargs="?", type=int, default=400)
    parser.add_argument("rounds", nargs="?", type=int, default=3)
    parser.add_argument("--traces", help="a directory of traces to analyse instead of writing one")
    parser.add_argument("--keep", help="write the trace into this directory and keep it")
    args = parser.parse_args()
    tach = os.path.abspath(args.tach)
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden")
    with tempfile.TemporaryDirectory() as d:
        traces = args.traces or args.keep or os.path.join(d, "traces")
        if not args.traces:
            os.makedirs(traces, exist_ok=True)
            trace = os.path.join(traces, "rank0.pt.trace.json")
            subprocess.run([sys.executable, "-c", TRACE, trace, str(args.steps), golden], check=True,
                           capture_output=True)
        files = [os.path.join(traces, f) for f in sorted(os.listdir(traces)) if ".json" in f]
        print(f"traces: {', '.join(os.path.basename(f) for f in files)}: "
              f"{sum(os.path.getsize(f) for f in files) / 1e6:.1f} MB as stored")
        baseline = timed([tach, "--version"])
        print(f"tach --version: {baseline[0]:.2f} s wall, {baseline[2]:.2f} s CPU, {baseline[1]:.0f} MiB "
              "(the executable's own floor)")
        for r in range(args.rounds):
            load = open("/proc/loadavg").read().split()[:3]
            t = timed([tach, "analyze", traces, "-o", os.path.join(d, f"run{r}")])
            h = timed([sys.executable, "-c", HTA, traces])
            print(f"round {r + 1} (load {' '.join(load)}): tach {t[0]:.2f} s wall {t[2]:.2f} s CPU {t[1]:.0f} MiB   "
                  f"HTA {h[0]:.2f} s wall {h[2]:.2f} s CPU {h[1]:.0f} MiB   {h[0] / t[0]:.1f}x faster (wall), "
                  f"{h[2] / t[2]:.1f}x less CPU, {t[1] / h[1]:.3f} of HTA's peak memory", flush=True)


if __name__ == "__main__":
    main()
