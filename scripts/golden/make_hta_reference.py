#!/usr/bin/env python3
"""HTA's own numbers for the GPU breakdowns, on traces in torch's layout, for `tach analyze`.

No GPU trace from a real run is committed yet, so this checks that tach reads HTA's definitions
as HTA does: two ranks of seeded random kernels (computation, NCCL, copies, sets, a Sync kernel)
on three streams, overlapping at random, with the runtime calls that launched them. Holistic Trace
Analysis (pip install HolisticTraceAnalysis, 0.5) runs on them and its temporal breakdown,
communication/computation overlap and kernel launch statistics are saved beside them. HTA keeps only the kernels launched
before the last ProfilerStep starts (the last step may be cut short), which tach does too.

Run in the development virtualenv:  ~/tach-ref/bin/python scripts/golden/make_hta_reference.py
Output: tests/fixtures/analyze/hta_ranks/{rank0,rank1}.pt.trace.json and hta.json
"""
import json
import os
import random

from hta.trace_analysis import TraceAnalysis

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "analyze", "hta_ranks")
NAMES = [
    ("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"),
    ("kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>"),
    ("kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"),
    ("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"),
    ("gpu_memset", "Memset (Device)"),
    ("kernel", "cross_device_reduce_Sync_kernel"),
]


def rank_trace(rank, rng):
    events, t, corr, taken = [], 1000.0, 1, set()
    for step in range(3):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": t, "dur": 400.0, "args": {"External id": corr}})
        corr += 1
        for _ in range(60):
            cat, name = rng.choice(NAMES)
            stream = 7 if "nccl" not in name else 20
            if cat != "kernel":
                stream = 9
            # Whole µs: HTA floors ts and dur to µs, tach keeps ns; whole µs compare the definitions.
            # Distinct starts per stream: HTA orders a stream's kernels with pandas' unstable sort,
            # so kernels starting together would be ordered at random.
            start = float(round(t + rng.uniform(0, 380)))
            while (stream, start) in taken:
                start += 1.0
            taken.add((stream, start))
            dur = float(round(rng.uniform(1, 15)))
            # The launching call: from 0 to 150 µs before the kernel, 1 to 80 µs long (so some calls
            # outlast their kernels, some exceed HTA's cutoffs, and some end after the kernel starts).
            call_dur = float(round(rng.uniform(1, 80)))
            call_start = start - float(round(rng.uniform(0, 150)))
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": call_start, "dur": call_dur, "args": {"External id": corr, "correlation": corr}})
            events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur,
                           "args": {"External id": corr, "correlation": corr, "device": 0, "stream": stream}})
            corr += 1
        t += 400.0
    return {"schemaVersion": 1, "deviceProperties": [],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}, "traceEvents": events}


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(50)
    for rank in (0, 1):
        with open(os.path.join(OUT, f"rank{rank}.pt.trace.json"), "w") as f:
            json.dump(rank_trace(rank, rng), f)
    analysis = TraceAnalysis(trace_dir=OUT)
    breakdown = analysis.get_temporal_breakdown(visualize=False)
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    launches = analysis.get_cuda_kernel_launch_stats(ranks=[0, 1], visualize=False)
    idle = {}
    for rank in (0, 1):
        df = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)[0]
        idle[rank] = {cat: float(df[df["idle_category"] == cat]["idle_time"].sum())
                      for cat in ("host_wait", "kernel_wait", "other")}
    reference = {"temporal_breakdown": breakdown.to_dict(orient="records"),
                 "comm_comp_overlap": overlap.to_dict(orient="records"),
                 "launch_stats": [{"rank": rank, "launches": len(df), "cpu_duration": df["cpu_duration"].sum(),
                                   "gpu_duration": df["gpu_duration"].sum(), "launch_delay": df["launch_delay"].sum(),
                                   "shorter_than_launch": int((df["gpu_duration"] < df["cpu_duration"]).sum()),
                                   "runtime_outliers": int((df["cpu_duration"] > 50).sum()),
                                   "delay_outliers": int((df["launch_delay"] > 100).sum())}
                                  for rank, df in sorted(launches.items())],
                 "idle_time_breakdown": [dict(rank=rank, **idle[rank]) for rank in (0, 1)]}
    with open(os.path.join(OUT, "hta.json"), "w") as f:
        json.dump(reference, f, indent=1, default=float)
    print(json.dumps(reference, indent=1, default=float))


if __name__ == "__main__":
    main()
