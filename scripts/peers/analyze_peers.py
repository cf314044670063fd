#!/usr/bin/env python3
"""tach analyze against Holistic Trace Analysis on the same torch.profiler trace, alternating.

Writes a CPU inference trace with torch.profiler (every option on; STEPS steps, ~114 KB of JSON
per step), then runs, ROUNDS times in turn: `tach analyze TRACE` and HTA's TraceAnalysis with its
temporal breakdown (which fails on a trace without GPU kernels: its parse is what is timed then),
each as its own process under /usr/bin/time for the wall time, the CPU time (user + system) and
the peak RSS.

usage: ~/tach-ref/bin/python scripts/peers/analyze_peers.py TACH [STEPS=400] [ROUNDS=3]
"""
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
    m = re.search(r"TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)", r.stderr)
    return float(m.group(1)), int(m.group(2)) / 1024, float(m.group(3)) + float(m.group(4))


def main():
    tach = os.path.abspath(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden")
    with tempfile.TemporaryDirectory() as d:
        traces = os.path.join(d, "traces")
        os.makedirs(traces)
        trace = os.path.join(traces, "rank0.pt.trace.json")
        subprocess.run([sys.executable, "-c", TRACE, trace, str(steps), golden], check=True, capture_output=True)
        print(f"trace: {os.path.getsize(trace) / 1e6:.1f} MB, {steps} steps")
        baseline = timed([tach, "--version"])
        print(f"tach --version: {baseline[0]:.2f} s wall, {baseline[2]:.2f} s CPU, {baseline[1]:.0f} MiB "
              "(the executable's own floor)")
        for r in range(rounds):
            t = timed([tach, "analyze", trace, "-o", os.path.join(d, f"run{r}")])
            h = timed([sys.executable, "-c", HTA, traces])
            print(f"round {r + 1}: tach {t[0]:.2f} s wall {t[2]:.2f} s CPU {t[1]:.0f} MiB   "
                  f"HTA {h[0]:.2f} s wall {h[2]:.2f} s CPU {h[1]:.0f} MiB   {h[0] / t[0]:.1f}x faster (wall)")


if __name__ == "__main__":
    main()
