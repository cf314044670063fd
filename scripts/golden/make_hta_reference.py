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

With --real HTA_CHECKOUT: real traces from HTA's own test data (tests/data of a checkout of
github.com/facebookresearch/HolisticTraceAnalysis, MIT licence; see REAL_COMMIT) are copied, as they
are, into tests/fixtures/analyze/hta_real/<case>/, and HTA run on each case that has GPU events
saves its numbers beside that directory in <case>.hta.json (outside it, so that `tach analyze
<case>/` reads traces only): per rank the temporal breakdown, the communication/
computation overlap, the summed time of each kernel type, every kernel's calls and summed time,
the kernel launch statistics and the idle time by cause. HTA's rounding of ns-resolution times
is turned off (HTA_DISABLE_NS_ROUNDING=1, its own switch): by default it moves every event's start
up and its end down to whole µs (a workaround for torch's overlapping events, pytorch#122425),
which takes up to 2 µs off each kernel; off, HTA keeps the times as written, as tach does.
"""
import argparse
import json
import os
import random
import shutil

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


def ranks_case():
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


REAL_OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures", "analyze", "hta_real")
REAL_COMMIT = "f4d0062c382f42bd8a74838bcdad1916c7d5d2da"
# case: (files copied from the checkout's tests/data, whether HTA's numbers are saved)
REAL_CASES = {
    # Two ranks of 128 (world_size 128, NCCL) of a training job, events sampled by HTA's authors.
    "sampled_ranks": (["trace_filter/sampled_rank-0.json.gz", "trace_filter/sampled_rank-1.json.gz"], True),
    # An A100 training step with NCCL (rank 0 of 2), ac2g and fwdbwd flows, cudaLaunchKernelExC.
    "nccl_a100": (["nccl_parser_config/nccl_data.json.gz"], True),
    # AlexNet on an A100 (rank 0), with cuda_sync events.
    "alexnet_a100": (["critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"], True),
    # A V100 trace written with ns resolution (fractional µs at epoch scale).
    "v100_ns": (["ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"], True),
    # ROCm 6.2 on an MI250: hipLaunchKernel, hipExtModuleLaunchKernel; no distributedInfo.
    "rocm_mi250": (["amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"], True),
    # No distributedInfo at all; distributedInfo without a rank; a CPU-only rank 34 of 300 (gloo).
    "no_distributed_info": (["distributed_info_unavailable/distributed_info_not_found.json.gz"], False),
    "rank_not_found": (["rank_unavailable/rank_not_found.json.gz"], False),
    "cpu_only": (["cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"], False),
    # kineto of 2022: categories Kernel and Runtime, "external id" in lower case.
    "kineto_2022": (["trace_file_list/inference_rank_1.json.gz"], False),
}


def without_cuda_sync(case_dir, tmp):
    """case_dir's traces less their cuda_sync events, in tmp; None when they have none.

    HTA counts every event with a stream as GPU time, cuda_sync's "Context Sync" and "Stream Wait
    Event" spans too (type OTHER, by the "Sync" in their names): they are the host waiting, drawn
    on the GPU's lanes, and can stretch the window (AlexNet's ends on an 881 µs Context Sync after
    the last kernel). tach's breakdown counts kernels, copies and sets only, so HTA is run on the
    same events."""
    import gzip
    dropped = False
    for f in os.listdir(case_dir):
        with gzip.open(os.path.join(case_dir, f), "rt") as fh:
            trace = json.load(fh)
        kept = [e for e in trace["traceEvents"] if e.get("cat") != "cuda_sync"]
        dropped |= len(kept) != len(trace["traceEvents"])
        trace["traceEvents"] = kept
        with gzip.open(os.path.join(tmp, f), "wt") as fh:
            json.dump(trace, fh)
    return tmp if dropped else None


def hta_numbers(case_dir):
    """HTA's analyses of every rank in case_dir, as tests/test_analyze_real.cc reads them."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        filtered = without_cuda_sync(case_dir, tmp)
        return hta_numbers_of(filtered or case_dir), filtered is not None


def hta_numbers_of(case_dir):
    from hta.utils.utils import get_kernel_type
    analysis = TraceAnalysis(trace_dir=case_dir)
    ranks = sorted(analysis.t.traces.keys())
    breakdown = analysis.get_temporal_breakdown(visualize=False)
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    launches = analysis.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    sym = analysis.t.symbol_table.get_sym_table()
    out = []
    for rank in ranks:
        df = analysis.t.get_trace(rank)
        gpu = df[df["stream"].ne(-1)].copy()
        gpu["kernel"] = gpu["name"].apply(lambda i: sym[i])
        gpu["type"] = gpu["kernel"].apply(get_kernel_type)
        kernels = gpu.groupby("kernel")["dur"].agg(["count", "sum"]).reset_index()
        row = breakdown[breakdown["rank"] == rank].to_dict(orient="records")[0]
        ov = overlap[overlap["rank"] == rank]["comp_comm_overlap_pctg"]
        idle = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)[0]
        ldf = launches.get(rank)
        out.append({
            "rank": int(rank),
            "temporal_breakdown": row,
            "comm_comp_overlap_pct": float(ov.iloc[0]) if len(ov) and (gpu["type"] == "COMMUNICATION").any()
            else None,
            "kernel_types": {t: float(v) for t, v in gpu.groupby("type")["dur"].sum().items()},
            "kernels": {k: {"calls": int(c), "sum": float(su)}
                        for k, c, su in zip(kernels["kernel"], kernels["count"], kernels["sum"])},
            # HTA 0.5 joins CUDA's calls only: none on ROCm.
            "launch_stats": None if ldf is None or len(ldf) == 0 else {
                "launches": len(ldf), "cpu_duration": float(ldf["cpu_duration"].sum()),
                "gpu_duration": float(ldf["gpu_duration"].sum()), "launch_delay": float(ldf["launch_delay"].sum())},
            "idle_time_breakdown": {c: float(idle[idle["idle_category"] == c]["idle_time"].sum())
                                    for c in ("host_wait", "kernel_wait", "other")},
        })
    return out


def real_cases(checkout):
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    for case, (files, with_hta) in REAL_CASES.items():
        case_dir = os.path.join(REAL_OUT, case)
        os.makedirs(case_dir, exist_ok=True)
        for f in files:
            shutil.copyfile(os.path.join(checkout, "tests", "data", f), os.path.join(case_dir, os.path.basename(f)))
        if not with_hta:
            continue
        ranks, sync_dropped = hta_numbers(case_dir)
        reference = {"source": f"github.com/facebookresearch/HolisticTraceAnalysis@{REAL_COMMIT} tests/data",
                     "hta": "0.5, HTA_DISABLE_NS_ROUNDING=1" + (", cuda_sync events left out" if sync_dropped else ""),
                     "ranks": ranks}
        with open(os.path.join(REAL_OUT, case + ".hta.json"), "w") as f:
            json.dump(reference, f, indent=1, default=float, sort_keys=True)
        print(case, json.dumps([{k: r[k] for k in ("rank", "temporal_breakdown", "comm_comp_overlap_pct")}
                                for r in reference["ranks"]], default=float))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--real", metavar="HTA_CHECKOUT", help="copy HTA's real test traces and save HTA's numbers")
    args = parser.parse_args()
    if args.real:
        real_cases(args.real)
    else:
        ranks_case()


if __name__ == "__main__":
    main()
