#!/usr/bin/env python3
"""tach's training step on CUDA against PyTorch's on the same GPU, same weights, same shapes,
alternating engines over rounds: the speed targets of CUDA training.

    python3 scripts/peers/gpu_train_peers.py --tach /tmp/tach-pack/bin/tach --json-out train_peers.json
    (everything: about 7 minutes on an H200, 3 of them compiling max-autotune; within 200 s, the rest
    recorded as left out: --engines eager,compile,tach --budget-s 200, as scripts/gpu/check.sh's
    TRAIN_PEERS=1 runs it)

Workloads (sequence classification, 2 labels, full rows of random ids, no padding):
  distilbert   DistilBERT-base, full fine-tuning, batch 32 x 128
  llama-full   a Llama-3.2-1B-sized model (seeded random weights), full fine-tuning, batch 8 x 512
  llama-lora   the same, LoRA r 16 (alpha 16) on every linear of the layers through peft, head trained
  llama-qlora  the same on an NF4 base: tach's QLoRA; PyTorch's peer needs bitsandbytes (skipped,
               saying so, where it is not installed or on the CPU)
Engines: torch-eager; torch-compile (mode default) and torch-compile-max-autotune (on the
workloads of --compile-workloads, DistilBERT by default); tach (`tach bench --train --device D
--dtype bf16`, --exec eager) and tach-fused (the same with --exec fused: fused kernels; AdamW is
one multi-tensor launch in both). Every step: forward with the loss under bf16 autocast (f32 master weights, as tach's
--dtype bf16), backward, clipping at global norm 1.0, AdamW (fused in PyTorch, lr 5e-5,
weight decay 0: tach's defaults). Dropout at the config's rates on both sides.

Method: each PyTorch engine lives in its own process (model, optimizer and compiled graphs kept
between rounds; set up in parallel, compiling outside the timing). Each round runs every engine
once, in an order rotated per round: W warm-up steps then N timed steps (each ending with a device
sync; the round's figure is their median) for PyTorch, one `tach bench --train --warmup W --runs N`
point for tach (its median step). Reported per engine: step ms (median over rounds, min..max),
tokens/s, peak memory (torch.cuda.max_memory_allocated over a round's steps; tach's allocator peak;
on the CPU each process's peak RSS), energy per step (NVML's total-energy counter of the GPU, whole
board, read after each timed step through ctypes on libnvidia-ml.so.1: the energy between its first
and last moves over the steps, divided by the steps between them; tach's from its point's energy;
"unavailable: why" where it is not, as on the CPU), MFU: model FLOPs per step (counted on PyTorch's forward, see
train_peer_engines.training_flops) over the step time and a bf16 GEMM ceiling measured here
(torch.matmul, square, best of the sizes). tach's ids are its own seeded random ids of the same
shape (timing does not depend on the ids). An engine that fails (tach without a CUDA kernel for an
op, a compile error, out of memory) is recorded as failed with its message.

--device cpu --tiny runs the same on tiny models on the CPU (the test of this script).
"""
import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_peer_engines as engines  # noqa: E402

WORKLOADS = {"distilbert": ("distilbert", "full"), "llama-full": ("llama", "full"),
             "llama-lora": ("llama", "lora"), "llama-qlora": ("llama", "qlora")}
ENGINE_NAMES = {"eager": "torch-eager", "compile": "torch-compile", "max-autotune": "torch-compile-max-autotune",
                "tach": "tach", "tach-fused": "tach-fused"}
# tach's engines: its --exec (eager: an op per kernel; fused: the fused kernels); AdamW is one
# multi-tensor launch in both, the gradient norm one more.
TACH_EXECS = {"tach": "eager", "tach-fused": "fused"}
COMPILED = ("torch-compile", "torch-compile-max-autotune")

# Llama 3.2 1B's config.json (tach's preset llama-3.2-1b) with a 2-label classification head.
LLAMA_1B = {"architectures": ["LlamaForSequenceClassification"], "attention_bias": False, "attention_dropout": 0.0,
            "bos_token_id": 128000, "eos_token_id": 128001, "pad_token_id": 128004, "head_dim": 64,
            "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
            "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama", "num_attention_heads": 32,
            "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
            "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"},
            "rope_theta": 500000.0, "tie_word_embeddings": True, "vocab_size": 128256, "num_labels": 2}
LLAMA_TINY = LLAMA_1B | {"head_dim": 16, "hidden_size": 64, "intermediate_size": 128, "max_position_embeddings": 256,
                         "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
                         "vocab_size": 2000, "pad_token_id": 1, "bos_token_id": 2, "eos_token_id": 3,
                         "rope_scaling": LLAMA_1B["rope_scaling"] | {"original_max_position_embeddings": 64}}
DISTILBERT_TINY = {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 64, "vocab_size": 2000,
                   "max_position_embeddings": 64}


def parse_shape(text):
    b, _, s = text.partition("x")
    return int(b), int(s)


def make_checkpoint(root, family, tiny, device):
    """DIR with config.json and model.safetensors: seeded random weights, written once, read by
    every engine. Llama's are written in bf16 (half the bytes; both sides keep f32 master copies of
    the same values)."""
    import torch
    path = os.path.join(root, f"{family}-{'tiny' if tiny else 'base'}")
    if os.path.exists(os.path.join(path, "model.safetensors")):
        return path
    torch.manual_seed(0)
    if family == "distilbert":
        from transformers import DistilBertConfig, DistilBertForSequenceClassification
        DistilBertForSequenceClassification(DistilBertConfig(num_labels=2, **(DISTILBERT_TINY if tiny else {}))
                                            ).save_pretrained(path)
    else:
        from transformers import LlamaConfig, LlamaForSequenceClassification
        with torch.device(device if device != "cpu" else "cpu"):  # initializing 1.2B on the GPU: seconds
            model = LlamaForSequenceClassification(LlamaConfig.from_dict(LLAMA_TINY if tiny else LLAMA_1B))
        model.to(torch.bfloat16).save_pretrained(path)
        del model
    return path


def bf16_gemm_ceiling(device, tiny):
    import torch
    sizes = [256] if tiny else ([4096, 8192] if device != "cpu" else [1024])
    best = 0.0
    for n in sizes:
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
        for _ in range(3):
            a @ b
        sync()
        reps = 20 if device != "cpu" else 3
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        sync()
        best = max(best, 2 * n ** 3 * reps / (time.perf_counter() - t0))
        del a, b
    if device != "cpu":
        torch.cuda.empty_cache()
    return {"flops_per_s": best, "how": f"torch.matmul, bf16, square n in {sizes}, the best"}


def start_workers(names, spec):
    ctx = multiprocessing.get_context("spawn")
    workers = {}
    for name in names:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=engines.torch_worker, args=(child, spec | {"engine": name}), daemon=True)
        proc.start()
        child.close()
        workers[name] = (proc, parent)
    return workers


def receive(worker, timeout):
    """The worker's next message, or ("error", why) when it died or said nothing in time."""
    proc, conn = worker
    try:
        if conn.poll(timeout):
            return conn.recv()
    except (EOFError, OSError):
        proc.join(5)
        return ("error", f"the worker process ended (exit code {proc.exitcode}) without a result", "")
    return ("error", f"no answer within {timeout:.0f} s", "")


def stop(worker):
    proc, conn = worker
    try:
        conn.send(("stop",))
    except OSError:
        pass
    proc.join(15)
    if proc.is_alive():
        proc.kill()
        proc.join(5)


def left_s(args):
    """Seconds left of --budget-s (infinite without one)."""
    return args.budget_s - (time.monotonic() - args.started) if args.budget_s else float("inf")


def run_workload(args, name, checkpoint, ceiling):
    family, method = WORKLOADS[name]
    batch, seq = parse_shape(args.distilbert_shape if family == "distilbert" else args.llama_shape)
    steps = args.steps or (10 if family == "distilbert" else 5)
    spec = {"checkpoint": checkpoint, "device": args.device, "method": method, "batch": batch, "seq": seq,
            "threads": args.threads, "lora_r": args.lora_r, "lora_alpha": args.lora_alpha, "tach_dtype": args.tach_dtype}
    wanted = [ENGINE_NAMES[e] for e in args.engines.split(",")]
    torch_names = [e for e in wanted if e not in TACH_EXECS and (e not in COMPILED or name in args.compile_workloads.split(","))]
    tach_names = [e for e in TACH_EXECS if e in wanted]
    out = {"status": "ran", "model": os.path.basename(checkpoint), "method": method, "batch": batch, "seq": seq,
           "tokens_per_step": batch * seq, "warmup_steps": args.warmup, "timed_steps": steps, "engines": {}}
    if method == "qlora" and torch_names:
        why = qlora_peer_missing(args.device)
        if why:
            for e in torch_names:
                out["engines"][e] = {"status": "skipped", "message": why}
            torch_names = []
    print(f"\n{name}: {out['model']}, {method}, batch {batch} x {seq}: setting up {', '.join(torch_names) or 'no PyTorch engine'}",
          flush=True)
    t0 = time.monotonic()
    workers = start_workers(torch_names, spec)
    rounds, peaks, info, failed, energies = {}, {}, {}, {}, {}
    for e, w in workers.items():
        setup_left, budget_left = args.setup_timeout - (time.monotonic() - t0), left_s(args)
        msg = receive(w, max(1.0, min(setup_left, budget_left)))
        if msg[0] == "ready":
            info[e] = msg[1]
            print(f"  {e} ready after {msg[1]['setup_s']:.1f} s", flush=True)
            continue
        if msg[1].startswith("no answer") and budget_left < setup_left:  # cut short by the run, not failed
            failed[e] = {"status": "skipped", "message": f"not ready (loading or compiling) {time.monotonic() - t0:.0f} s "
                                                         f"into its setup when the run's --budget-s {args.budget_s:.0f} "
                                                         "was spent"}
        elif msg[1].startswith("no answer"):
            failed[e] = {"status": "failed", "message": f"not ready (loading or compiling) within --setup-timeout "
                                                        f"{args.setup_timeout:.0f} s"}
        else:
            failed[e] = {"status": "failed", "message": f"setting up: {msg[1]}", "traceback": msg[2]}
        print(f"  {e} {failed[e]['status']}: {failed[e]['message']}", flush=True)
        stop(w)
    tach_runs, tach_dir = {}, tempfile.mkdtemp(prefix="tach-train-peers-")
    order = [e for e in torch_names if e in info] + tach_names
    # Without a PyTorch engine there is nothing to alternate with: one round.
    n_rounds = args.rounds if len(order) > 1 else 1
    for r in range(n_rounds):
        if r and left_s(args) <= 0:
            out["rounds_note"] = f"{r} of {n_rounds} rounds: the run's --budget-s {args.budget_s:.0f} was spent"
            break
        for e in order[r % len(order):] + order[:r % len(order)] if order else []:
            if e in failed:
                continue
            if e in TACH_EXECS:
                res = engines.tach_point(args.tach, spec | {"exec": TACH_EXECS[e]}, args.warmup, steps, tach_dir,
                                         args.round_timeout)
                if res["status"] != "ok":
                    failed[e] = res | {"message": f"round {r + 1}: {res['message']}"}
                    print(f"  round {r + 1} {e} failed: {res['message']}", flush=True)
                    continue
                tach_runs.setdefault(e, []).append(res)
                rounds.setdefault(e, []).append(res["step_s"])
                peaks[e] = max(peaks.get(e, 0), res["peak_bytes"])
                energies.setdefault(e, []).append(res["energy"])
            else:
                workers[e][1].send(("time", args.warmup, steps))
                msg = receive(workers[e], args.round_timeout)
                if msg[0] != "times":
                    failed[e] = {"status": "failed", "message": f"round {r + 1}: {msg[1]}", "traceback": msg[2]}
                    print(f"  round {r + 1} {e} failed: {msg[1]}", flush=True)
                    stop(workers[e])
                    continue
                rounds.setdefault(e, []).append(statistics.median(msg[1]))
                peaks[e] = max(peaks.get(e, 0), msg[2])
                energies.setdefault(e, []).append(msg[3])
            print(f"  round {r + 1} {e:28s} {rounds[e][-1] * 1e3:9.2f} ms/step", flush=True)
    for w in workers.values():
        stop(w)
    shutil.rmtree(tach_dir, ignore_errors=True)
    flops = next((i["flops_per_step"] for i in info.values()), None)
    if flops is None and tach_runs:
        flops = next(iter(tach_runs.values()))[0]["own"].get("model_flops_per_step")
    out["model_flops_per_step"] = flops
    out["flops_counted_by"] = "PyTorch's forward (training_flops)" if info else ("tach's own count" if flops else None)
    for e in torch_names + tach_names:
        if e in failed:
            out["engines"][e] = failed[e] | ({"step_ms_rounds_before": [t * 1e3 for t in rounds[e]]} if rounds.get(e) else {})
            continue
        med = statistics.median(rounds[e])
        row = {"status": "ok", "step_ms": med * 1e3, "step_ms_rounds": [t * 1e3 for t in rounds[e]],
               "tokens_per_s": batch * seq / med, "peak_memory_bytes": peaks[e],
               "mfu": flops / med / ceiling["flops_per_s"] if flops and ceiling else None}
        row |= energy_row(energies.get(e, []))
        if e in TACH_EXECS:
            row |= {"command": tach_runs[e][-1]["command"], "tach_reports": tach_runs[e][-1]["own"]}
        else:
            row |= info[e]
        out["engines"][e] = row
    if out["engines"].get("tach", {}).get("status") == "ok":
        base = out["engines"]["tach"]["step_ms"]
        for e, row in out["engines"].items():
            if e != "tach" and row.get("status") == "ok":  # tach-fused too: against tach's eager step
                row["time_over_tach"] = row["step_ms"] / base
    out["wall_s"] = time.monotonic() - t0
    return out


def energy_row(rounds):
    """J per step: the median over the rounds that measured it, with the last source (why not,
    where none did)."""
    measured = [r["j_per_step"] for r in rounds if r.get("j_per_step") is not None]
    source = next((r["source"] for r in reversed(rounds) if r.get("j_per_step") is not None),
                  rounds[-1]["source"] if rounds else "unavailable: no round ran")
    return {"energy_j_per_step": statistics.median(measured) if measured else None,
            "energy_j_per_step_rounds": measured, "energy_source": source}


def qlora_peer_missing(device):
    if device == "cpu":
        return "PyTorch's QLoRA peer (bitsandbytes' NF4 layers) trains on CUDA only: not run on the CPU"
    try:
        import bitsandbytes  # noqa: F401
    except Exception as e:  # ImportError, or its own errors loading CUDA libraries
        return f"bitsandbytes is not importable here ({type(e).__name__}: {e}): no PyTorch QLoRA peer"
    return None


def print_table(name, w):
    if w["status"] != "ran":
        print(f"\n{name}: {w['status']}: {w['message']}")
        return
    print(f"\n{name}: {w['model']} {w['method']}, batch {w['batch']} x {w['seq']}, bf16 autocast"
          + (f", {w['model_flops_per_step'] / 1e12:.3f} TFLOP/step" if w.get("model_flops_per_step") else ""))
    for e, row in w["engines"].items():
        if row["status"] != "ok":
            print(f"  {e:28s} {row['status']}: {row['message']}")
            continue
        r = row["step_ms_rounds"]
        mfu = f"{row['mfu'] * 100:5.1f}%" if row.get("mfu") is not None else "  n/a"
        ratio = f"  {row['time_over_tach']:.2f}x tach's time" if "time_over_tach" in row else ""
        precision = (row.get("tach_reports") or {}).get("precision") or "bf16"
        ratio += "" if precision.startswith("bf16") else f"  (tach's precision: {precision})"
        joules = row.get("energy_j_per_step")
        energy = f"{joules:8.3f} J/step" if joules is not None else "  J/step n/a"
        print(f"  {e:28s} {row['step_ms']:9.2f} ms ({min(r):.2f}..{max(r):.2f})  {row['tokens_per_s']:10.0f} tok/s  "
              f"peak {row['peak_memory_bytes'] / 2**30:6.2f} GiB  {energy}  MFU {mfu}{ratio}")
    why = sorted({row["energy_source"] for row in w["engines"].values()
                  if row["status"] == "ok" and row.get("energy_j_per_step") is None})
    for reason in why:
        print(f"  energy {reason}")


def machine(args):
    import torch
    import transformers
    try:
        import peft
        peft_version = peft.__version__
    except ImportError:
        peft_version = None
    m = {"device": args.device, "cpu": engines.cpu_name(), "cores": os.cpu_count(), "python": sys.version.split()[0],
         "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft_version}
    if args.device != "cpu":
        m |= {"gpu": torch.cuda.get_device_name(torch.device(args.device)), "driver": engines.gpu_driver(),
              "cuda_runtime": torch.version.cuda, "gpu_memory_bytes": torch.cuda.get_device_properties(
                  torch.device(args.device)).total_memory}
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tach", default="build/tach", help="the tach binary (default build/tach)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    ap.add_argument("--tiny", action="store_true", help="tiny models and batch 2 x 16 (the CPU test)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)}")
    ap.add_argument("--engines", default=",".join(ENGINE_NAMES), help=f"comma-separated, of {', '.join(ENGINE_NAMES)}")
    ap.add_argument("--compile-workloads", default="distilbert",
                    help="workloads that get the torch.compile engines (default distilbert)")
    ap.add_argument("--distilbert-shape", default=None, help="BATCHxSEQ (default 32x128; tiny 2x16)")
    ap.add_argument("--llama-shape", default=None, help="BATCHxSEQ (default 8x512; tiny 2x16)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2, help="warm-up steps per engine per round")
    ap.add_argument("--steps", type=int, default=0, help="timed steps per engine per round (default 10; Llama 5)")
    ap.add_argument("--tach-dtype", default="bf16", choices=["bf16", "f32"],
                    help="tach's --dtype: bf16 (autocast, as PyTorch's side; default) or f32 (where tach's bf16 "
                         "path fails: its figure then is not like for like, its row says its precision)")
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--lora-alpha", type=float, default=16)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads of every engine (0: each one's default)")
    ap.add_argument("--setup-timeout", type=float, default=420,
                    help="seconds for a workload's PyTorch engines to load and compile (default 420: max-autotune "
                         "compiled DistilBERT's step in 190 s on an H200 with 16 cores)")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="past this many seconds from the start, start no further round or workload (each left out "
                         "is recorded as such); 0 = no limit")
    ap.add_argument("--round-timeout", type=float, default=180, help="seconds for one engine's round")
    ap.add_argument("--root", default=os.path.join(tempfile.gettempdir(), "tach-train-peers"),
                    help="where the checkpoints are written (kept between runs)")
    ap.add_argument("--json-out", help="write the results here")
    args = ap.parse_args()
    for w in args.workloads.split(","):
        if w not in WORKLOADS:
            ap.error(f"--workloads: unknown workload '{w}' (one of {', '.join(WORKLOADS)})")
    for e in args.engines.split(","):
        if e not in ENGINE_NAMES:
            ap.error(f"--engines: unknown engine '{e}' (one of {', '.join(ENGINE_NAMES)})")
    args.distilbert_shape = args.distilbert_shape or ("2x16" if args.tiny else "32x128")
    args.llama_shape = args.llama_shape or ("2x16" if args.tiny else "8x512")
    import torch
    if args.device != "cpu" and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: PyTorch sees no CUDA device here (use --device cpu --tiny on a machine without one)")
    t0 = args.started = time.monotonic()
    results = {"schema": "tach.train_peers/1", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "command": sys.argv, "machine": machine(args),
               "tach": {"binary": args.tach, "version": engines.tach_version(args.tach)},
               "settings": {"precision": "bf16 autocast, f32 master weights and AdamW state",
                            "optimizer": f"AdamW (PyTorch fused) lr {engines.LR}, weight decay 0, clip {engines.CLIP}",
                            "tach_dtype": args.tach_dtype,
                            "lora": {"r": args.lora_r, "alpha": args.lora_alpha, "dropout": 0.0},
                            "rounds": args.rounds},
               "workloads": {}}
    print(f"torch {torch.__version__} on {results['machine'].get('gpu', results['machine']['cpu'])}", flush=True)
    results["ceiling"] = bf16_gemm_ceiling(args.device, args.tiny)
    print(f"bf16 GEMM ceiling {results['ceiling']['flops_per_s'] / 1e12:.3g} TFLOP/s", flush=True)
    os.makedirs(args.root, exist_ok=True)
    checkpoints = {}
    for name in args.workloads.split(","):
        family = WORKLOADS[name][0]
        if left_s(args) <= 0:
            results["workloads"][name] = {"status": "skipped",
                                          "message": f"not started: the run's --budget-s {args.budget_s:.0f} was spent"}
            continue
        if family not in checkpoints:
            checkpoints[family] = make_checkpoint(args.root, family, args.tiny, args.device)
        results["workloads"][name] = run_workload(args, name, checkpoints[family], results["ceiling"])
        results["wall_s"] = time.monotonic() - t0
        write_json(args.json_out, results)  # after each workload: a run cut off later keeps what it measured
    results["wall_s"] = time.monotonic() - t0
    for name, w in results["workloads"].items():
        print_table(name, w)
    print(f"\n{results['wall_s']:.0f} s in all")
    write_json(args.json_out, results)
    if args.json_out:
        print(f"results: {args.json_out}")
    return 0


def write_json(path, results):
    if path:
        with open(path + ".part", "w") as f:
            json.dump(results, f, indent=1)
        os.replace(path + ".part", path)


if __name__ == "__main__":
    sys.exit(main())
