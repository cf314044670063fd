#!/usr/bin/env python3
"""tach on CUDA against PyTorch (eager, torch.compile default and max-autotune, SDPA) and ONNX
Runtime's CUDA provider, same weights, same inputs, same run: every target of the GPU inference
table.

    python3 scripts/peers/gpu_peers.py --tach /tmp/tach-pack/bin/tach --json-out peers.json
    (scripts/gpu/check.sh runs it with PEERS=1; PEERS_CASES picks the cases)

Weights: seeded random weights of each model's real sizes, written once with save_pretrained
(safetensors) under --root, so that every engine reads the same files. Cases (--cases):

  distilbert   DistilBERT-base, sequence 128, batch 1 and 32, f32 and bf16: tach, torch eager,
               torch.compile (mode default) and mode "max-autotune" (each compiled outside the
               timing, its compile time reported apart; max-autotune in a worker process of its own
               under --compile-timeout, since it compiles for minutes), ONNX Runtime CUDA (f32).
  tf32         DistilBERT-base batch 32 x 128 f32 with TF32 off on both sides and on on both:
               tach and tach --allow-tf32 against torch eager with
               torch.backends.cuda.matmul.allow_tf32 False and True.
  llama-prefill  a Llama-3.2-1B-sized causal LM (transformers' LlamaConfig at its sizes), prefill of
               8 x 512 in bf16 (the forward and the LM head at each row's last token: tach bench's
               point, transformers' forward with logits_to_keep=1), with each side's share of the bf16
               GEMM ceiling (`tach info --ceilings`) over tach's FLOPs per batch.
  modernbert   ModernBERT-base-sized sequence classifier, batch 1 at 1024, 2048, 4096 and 8192
               tokens in bf16: tach against PyTorch with attn_implementation="sdpa"; time per length.
  decode       a Qwen2.5-0.5B-sized decoder, batch 1, a 128-token prompt, 64 greedy tokens, f32 and
               bf16: tach (CUDA graphs, and kernel by kernel) against torch eager; time per output
               token and the memory-bandwidth limit.
  quantized    int8 and nf4 decoding: tach refuses them on CUDA (they quantize for the CPU), so
               their rows say "not supported on CUDA" with tach's own message.

Method: R rounds; in each round every engine runs W warm-ups and N timed calls, in an order
rotated per round; a round's figure is the median of its N (wall clock after a device
synchronisation for the peers, inside tach.engines' timed calls; tach's own median for tach).
Reported: the median over rounds, min..max over rounds, and peer/tach ratios (> 1: tach faster).
An engine that fails (a compile error, out of memory, past its time limit) is recorded as failed
with its message and left out of later rounds; the other engines go on.

--smoke runs every case on tiny models on the CPU in seconds (the test of this script, with the
development virtualenv); --dry-run prints the plan and writes the JSON's header, building nothing.
"""
import argparse
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))  # tach.engines: the engine workers' own code
sys.path.insert(0, HERE)

CASES = ("distilbert", "tf32", "llama-prefill", "modernbert", "decode", "quantized")
# The peers --skip can leave out (torch eager is every case's reference: it always runs).
ENGINES = ("torch-compile", "torch-compile-max-autotune", "ort-cuda", "torch-sdpa")

# Real sizes, and the tiny ones --smoke runs on the CPU.
DISTILBERT = {"num_labels": 2}
DISTILBERT_TINY = {"num_labels": 2, "dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 64, "vocab_size": 2000,
                   "max_position_embeddings": 64}
QWEN2 = {"vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
         "num_attention_heads": 14, "num_key_value_heads": 2, "max_position_embeddings": 32768, "rope_theta": 1e6,
         "tie_word_embeddings": True, "rms_norm_eps": 1e-6}
# nf4 quantizes in blocks of 64: the tiny sizes are multiples of it.
QWEN2_TINY = QWEN2 | {"vocab_size": 2000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                      "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 256}
# Llama 3.2 1B's config.json (tach's preset llama-3.2-1b).
LLAMA_1B = {"attention_bias": False, "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64,
            "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 131072,
            "mlp_bias": False, "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
            "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
            "rope_theta": 500000.0, "tie_word_embeddings": True, "vocab_size": 128256}
LLAMA_TINY = LLAMA_1B | {"head_dim": 16, "hidden_size": 64, "intermediate_size": 128, "max_position_embeddings": 256,
                         "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
                         "vocab_size": 2000, "bos_token_id": 1, "eos_token_id": 2,
                         "rope_scaling": LLAMA_1B["rope_scaling"] | {"original_max_position_embeddings": 64}}
# answerdotai/ModernBERT-base's sizes (tach's preset modernbert-base), with a 2-label classifier.
MODERNBERT = {"vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152, "num_hidden_layers": 22,
              "num_attention_heads": 12, "max_position_embeddings": 8192, "global_attn_every_n_layers": 3,
              "local_attention": 128, "num_labels": 2, "pad_token_id": 50283}
MODERNBERT_TINY = MODERNBERT | {"vocab_size": 2000, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3,
                                "num_attention_heads": 2, "max_position_embeddings": 256, "local_attention": 16,
                                "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1,
                                "sep_token_id": 2}


def settings(args):
    """The shapes every case runs at: the targets, or --smoke's tiny ones."""
    if args.smoke:
        return {"device": "cpu", "distilbert_batches": [1, 2], "seq_len": 16, "tf32_batch": 2, "dtypes": ["f32"],
                "llama_shape": [2, 16], "modernbert_lengths": [32, 64], "prompt_len": 16, "new_tokens": 4,
                "reps": 3, "warmup": 1}
    return {"device": "cuda:0", "distilbert_batches": [1, 32], "seq_len": 128, "tf32_batch": 32,
            "dtypes": ["f32", "bf16"], "llama_shape": [8, 512], "modernbert_lengths": [1024, 2048, 4096, 8192],
            "prompt_len": 128, "new_tokens": 64, "reps": 0, "warmup": 5}


def reps_for(s, rows):
    """Timed calls per round: about 200 rows' worth, at least 10 (--smoke: its own few)."""
    return s["reps"] or max(10, 200 // rows)


# --- checkpoints ---------------------------------------------------------------------------------

def checkpoint(root, name, build):
    """The directory of a model saved once by build() (random weights, seeded); reused later."""
    path = os.path.join(root, name)
    if not os.path.exists(os.path.join(path, "model.safetensors")):
        import torch
        torch.manual_seed(0)
        build().save_pretrained(path)
    return path


def make_checkpoint(args, case):
    import transformers as tf
    tiny = args.smoke
    suffix = "-tiny" if tiny else ""
    if case in ("distilbert", "tf32"):
        cfg = tf.DistilBertConfig(**(DISTILBERT_TINY if tiny else DISTILBERT))
        return checkpoint(args.root, "distilbert-base" + suffix, lambda: tf.DistilBertForSequenceClassification(cfg))
    if case == "llama-prefill":
        cfg = tf.LlamaConfig(**(LLAMA_TINY if tiny else LLAMA_1B))
        return checkpoint(args.root, "llama-3.2-1b-sized" + suffix, lambda: tf.LlamaForCausalLM(cfg))
    if case == "modernbert":
        cfg = tf.ModernBertConfig(**(MODERNBERT_TINY if tiny else MODERNBERT))
        return checkpoint(args.root, "modernbert-base-sized" + suffix,
                          lambda: tf.ModernBertForSequenceClassification(cfg))
    cfg = tf.Qwen2Config(**(QWEN2_TINY if tiny else QWEN2))
    return checkpoint(args.root, "qwen2.5-0.5b-sized" + suffix, lambda: tf.Qwen2ForCausalLM(cfg))


# --- timing --------------------------------------------------------------------------------------

def alternate(engines, rounds):
    """Every engine once per round, the order rotated per round. engines: name -> callable returning
    seconds. An engine that raises is recorded as failed (its message) and left out of later rounds."""
    times = {name: [] for name in engines}
    failed = {}
    names = list(engines)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if name in failed:
                continue
            try:
                times[name].append(engines[name]())
            except Exception as e:  # noqa: BLE001  (any engine's failure is a result, not the run's end)
                failed[name] = f"{type(e).__name__}: {str(e).strip()[-600:]}"
    return times, failed


def summarize(times, failed, title, unit_scale=1e3, unit="ms"):
    """Each engine's median over rounds and range, and its ratio to tach's; printed and returned."""
    rows = {}
    print(title, flush=True)
    base = statistics.median(times["tach"]) if times.get("tach") else None
    for name, t in times.items():
        if name in failed:
            rows[name] = {"status": "failed", "message": failed[name]}
            print(f"  {name:28s} failed: {failed[name][:300]}")
            continue
        if not t:
            continue
        med = statistics.median(t)
        rows[name] = {"status": "ok", "median_s": med, "min_s": min(t), "max_s": max(t), "rounds_s": t}
        ratio = f"  {med / base:.2f}x tach's time" if base and name != "tach" else ""
        rows[name]["time_over_tach"] = med / base if base and name != "tach" else None
        print(f"  {name:28s} {med * unit_scale:10.3f} {unit}  (rounds {min(t) * unit_scale:.3f}.."
              f"{max(t) * unit_scale:.3f}){ratio}")
    return rows


def sync(torch, device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def torch_timed(torch, device, call, warmup, reps):
    """The median seconds of `reps` calls after `warmup`, each with a device synchronisation."""
    with torch.no_grad():
        for _ in range(warmup):
            call()
        sync(torch, device)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            call()
            sync(torch, device)
            ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def engine_timed(engine, warmup, reps):
    """tach.engines' own timed calls (synchronised inside each), their median in seconds."""
    engine.op_time(warmup)
    return statistics.median(engine.op_time(reps)["ns"]) / 1e9


# --- tach's side ---------------------------------------------------------------------------------

class TachRefused(Exception):
    """tach exited non-zero: its message (a usage error or a refusal) is the result."""


def run_tach(args, cmd, timeout=900):
    res = subprocess.run([args.tach, *cmd], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        lines = [ln for ln in (res.stderr or res.stdout).strip().splitlines() if ln.strip()]
        raise TachRefused(f"tach {cmd[0]} exited {res.returncode}: " + (lines[-1] if lines else "no message"))
    return res.stdout


def tach_device(s):
    return "cuda" if s["device"].startswith("cuda") else "cpu"


def tach_classify(args, s, path, dt, ids_file, warm, reps, *extra):
    out = run_tach(args, ["classify", "--model", path, "--device", tach_device(s), "--dtype", dt, "--ids-file",
                          ids_file, "--json", "--warmup", str(warm), "--repeat", str(reps), *extra])
    return json.loads(out)


def tach_bench_point(args, s, path, dt, batch, seq, warm, reps, *extra):
    """One `tach bench` point (its own run directory): the results.jsonl line."""
    with tempfile.TemporaryDirectory(dir=args.root) as runs:
        run_tach(args, ["bench", "-m", path, "--device", tach_device(s), "--dtype", dt, "-b", str(batch), "-s",
                        str(seq), "--warmup", str(warm), "--runs", str(reps), "--decode-tokens", "0",
                        "--energy-window", "0", "--no-progress", "--no-tensorboard", "--format", "jsonl",
                        "--runs-dir", runs, "--run-id", "point", *extra])
        with open(os.path.join(runs, "point", "results.jsonl")) as f:
            point = json.loads(f.readline())
    if point["status"] != "ok":
        raise TachRefused(f"tach bench's point {point['status']}: {point.get('reason', '')}")
    return point


def write_ids(rows):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(" ".join(map(str, r)) for r in rows) + "\n")
        return f.name


# --- the max-autotune worker -----------------------------------------------------------------------

def compile_worker(conn, spec):
    """A PyTorch engine in a process of its own (spawned): torch.compile(mode=spec["mode"]) over
    tach.engines' model, answering ("prepare",) with the first call's seconds (the compile) and
    ("time", warmup, reps) with the median seconds, until ("stop",)."""
    try:
        from tach.engines._requests import Inputs, Load
        from tach.engines.torch_engine import TorchEngine
        engine = TorchEngine()
        engine.op_load(Load(model=spec["model"], task="sequence-classification", dtype=spec["dtype"],
                            device=spec["device"]))
        engine.forward = engine.torch.compile(engine.model, mode=spec["mode"])
        engine.op_inputs(Inputs(spec["ids"], spec["mask"]))
        conn.send(("ready",))
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                return
            if msg[0] == "prepare":
                conn.send(("ok", engine.op_prepare()["first_call_s"]))
            elif msg[0] == "time":
                conn.send(("ok", engine_timed(engine, msg[1], msg[2])))
    except Exception as e:  # noqa: BLE001  (reported to the parent as this engine's failure)
        conn.send(("error", f"{type(e).__name__}: {e}"))


class CompileWorker:
    """The parent's end: every answer within `timeout` seconds, else the worker is killed and the
    engine fails with that reason (a compile past its limit costs this engine, not the run)."""

    def __init__(self, spec, timeout):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=compile_worker, args=(child, spec), daemon=True)
        self.proc.start()
        child.close()
        self.timeout = timeout
        self.started = time.monotonic()
        self.receive()  # loaded

    def receive(self):
        left = self.timeout - (time.monotonic() - self.started)
        if left <= 0 or not self.conn.poll(left):
            self.proc.kill()  # mid-compile: nothing to wait for
            self.proc.join(5)
            raise TimeoutError(f"past the --compile-timeout of {self.timeout:g} s")
        try:
            msg = self.conn.recv()
        except EOFError:
            raise RuntimeError(f"the worker process ended (exit code {self.proc.exitcode})") from None
        if msg[0] == "error":
            raise RuntimeError(msg[1])
        return msg[1] if len(msg) > 1 else None

    def ask(self, *msg):
        self.started = time.monotonic()
        self.conn.send(msg)
        return self.receive()

    def stop(self):
        try:
            self.conn.send(("stop",))
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


# --- cases ---------------------------------------------------------------------------------------

def distilbert_case(args, s, path):
    """tach against torch eager, torch.compile (default and max-autotune) and ONNX Runtime CUDA."""
    import numpy as np
    from tach.engines._requests import Inputs, Load
    from tach.engines.torch_engine import TorchCompileEngine, TorchEngine
    device, out, rng = s["device"], {}, np.random.default_rng(0)
    ort = None
    if "ort-cuda" not in args.skip and device.startswith("cuda"):
        from tach.engines.onnxruntime_engine import OnnxRuntimeEngine
        ort = OnnxRuntimeEngine()
        if device in ort.devices():
            ort.op_load(Load(model=path, task="sequence-classification", dtype="f32", device=device,
                             cache_dir=os.path.join(args.root, "onnx")))
        else:
            ort = None
    vocab = DISTILBERT_TINY["vocab_size"] if args.smoke else 30522
    for dt in s["dtypes"]:
        eager = TorchEngine()
        eager.op_load(Load(model=path, task="sequence-classification", dtype=dt, device=device))
        compiled = None
        if "torch-compile" not in args.skip:
            compiled = TorchCompileEngine()
            compiled.op_load(Load(model=path, task="sequence-classification", dtype=dt, device=device))
        for B in s["distilbert_batches"]:
            ids = rng.integers(min(1000, vocab // 2), vocab, size=(B, s["seq_len"]), dtype=np.int64)
            mask = np.ones_like(ids)
            reps, warm = reps_for(s, B), s["warmup"]
            ids_file = write_ids(ids)
            key = f"distilbert/{dt}/b{B}"
            row = {"batch": B, "seq_len": s["seq_len"], "dtype": dt, "compile_s": {}}
            engines = {"tach": lambda: tach_classify(args, s, path, dt, ids_file, warm, reps)["timing"]["median"]}
            for e in (eager, compiled) + ((ort,) if ort and dt == "f32" else ()):
                if e is not None:
                    e.op_inputs(Inputs(ids.tolist(), mask.tolist()))
            logits = eager.op_outputs()["outputs"]["logits"]
            ref = np.array(logits["data"]).reshape(logits["shape"])
            try:
                got = np.array([r["logits"] for r in tach_classify(args, s, path, dt, ids_file, 0, 1)["rows"]])
                row["max_logit_diff_over_max_logit"] = float(np.abs(got - ref).max() / (np.abs(ref).max() + 1e-6))
            except TachRefused as e:
                row["tach_check"] = str(e)
            engines["torch-eager"] = lambda: engine_timed(eager, warm, reps)
            if compiled is not None:
                row["compile_s"]["torch-compile"] = compiled.op_prepare()["first_call_s"]  # outside the timing
                engines["torch-compile"] = lambda: engine_timed(compiled, warm, reps)
            worker = None
            if "torch-compile-max-autotune" not in args.skip:
                try:
                    worker = CompileWorker({"model": path, "dtype": dt, "device": device, "mode": "max-autotune",
                                            "ids": ids.tolist(), "mask": mask.tolist()}, args.compile_timeout)
                    row["compile_s"]["torch-compile-max-autotune"] = worker.ask("prepare")
                    engines["torch-compile-max-autotune"] = lambda: worker.ask("time", warm, reps)
                except Exception as e:  # noqa: BLE001
                    row["max_autotune"] = {"status": "failed", "message": f"{type(e).__name__}: {e}"}
                    print(f"  torch-compile-max-autotune failed: {e}", flush=True)
                    worker = None
            if ort and dt == "f32":
                engines["ort-cuda"] = lambda: engine_timed(ort, warm, reps)
            times, failed = alternate(engines, args.rounds)
            if worker:
                worker.stop()
            os.unlink(ids_file)
            print(f"\nDistilBERT-base {dt}, batch {B}, seq {s['seq_len']}; compile (first call) s: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in row["compile_s"].items()))
            row["engines"] = summarize(times, failed, "  latency per batch")
            if "max_autotune" in row:
                row["engines"]["torch-compile-max-autotune"] = row.pop("max_autotune")
            out[key] = row
    return out


def tf32_case(args, s, path):
    """DistilBERT batch 32 x 128 f32, TF32 off on both sides and on on both."""
    import numpy as np
    import torch
    from tach.engines._requests import Inputs, Load
    from tach.engines.torch_engine import TorchEngine
    device, B = s["device"], s["tf32_batch"]
    vocab = DISTILBERT_TINY["vocab_size"] if args.smoke else 30522
    ids = np.random.default_rng(2).integers(min(1000, vocab // 2), vocab, size=(B, s["seq_len"]), dtype=np.int64)
    eager = TorchEngine()
    eager.op_load(Load(model=path, task="sequence-classification", dtype="f32", device=device))
    eager.op_inputs(Inputs(ids.tolist(), np.ones_like(ids).tolist()))
    ids_file = write_ids(ids)
    reps, warm = reps_for(s, B), s["warmup"]
    row = {"batch": B, "seq_len": s["seq_len"], "dtype": "f32"}

    def torch_with(tf32):
        def call():
            torch.backends.cuda.matmul.allow_tf32 = tf32  # process-wide: set before each engine's turn
            try:
                return engine_timed(eager, warm, reps)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False
        return call

    # How far TF32 moves the logits on each side, against each side's strict f32.
    torch.backends.cuda.matmul.allow_tf32 = True
    ref_tf32 = np.array(eager.op_outputs()["outputs"]["logits"]["data"])
    torch.backends.cuda.matmul.allow_tf32 = False
    ref_f32 = np.array(eager.op_outputs()["outputs"]["logits"]["data"])
    row["torch_tf32_logit_change"] = float(np.abs(ref_tf32 - ref_f32).max())
    try:
        got = np.array([r["logits"] for r in tach_classify(args, s, path, "f32", ids_file, 0, 1, "--allow-tf32")["rows"]])
        row["tach_tf32_vs_torch_tf32_max_diff"] = float(np.abs(got.reshape(-1) - ref_tf32).max())
    except TachRefused as e:
        row["tach_tf32"] = str(e)  # on a CPU: refused, as it must be
    engines = {"tach": lambda: tach_classify(args, s, path, "f32", ids_file, warm, reps)["timing"]["median"],
               "tach-tf32": lambda: tach_classify(args, s, path, "f32", ids_file, warm, reps,
                                                  "--allow-tf32")["timing"]["median"],
               "torch-eager": torch_with(False), "torch-eager-tf32": torch_with(True)}
    times, failed = alternate(engines, args.rounds)
    os.unlink(ids_file)
    print(f"\nDistilBERT-base f32, batch {B}, seq {s['seq_len']}: TF32 off (tach, torch-eager) and on (-tf32)")
    row["engines"] = summarize(times, failed, "  latency per batch")
    ok = row["engines"]
    if ok.get("tach-tf32", {}).get("status") == "ok" and ok.get("torch-eager-tf32", {}).get("status") == "ok":
        row["torch_tf32_over_tach_tf32"] = ok["torch-eager-tf32"]["median_s"] / ok["tach-tf32"]["median_s"]
        print(f"  ratio torch-eager-tf32/tach-tf32 {row['torch_tf32_over_tach_tf32']:.2f}x")
    return {"tf32/distilbert/f32/b" + str(B): row}


def llama_prefill_case(args, s, path, ceilings):
    """Prefill of a Llama-3.2-1B-sized model, bf16: tach bench's point against transformers."""
    import inspect

    import numpy as np
    import torch
    import transformers as tf
    from tach.engines.torch_engine import dtype_keyword
    device, (B, T) = s["device"], s["llama_shape"]
    model = tf.LlamaForCausalLM.from_pretrained(path, **{dtype_keyword(): torch.bfloat16}).eval().to(device)
    vocab = model.config.vocab_size
    ids = torch.tensor(np.random.default_rng(3).integers(min(1000, vocab // 2), vocab - 1000 if vocab > 2000 else vocab,
                                                         size=(B, T)), device=device)
    params = inspect.signature(model.forward).parameters
    keep = {"logits_to_keep": 1} if "logits_to_keep" in params else (
        {"num_logits_to_keep": 1} if "num_logits_to_keep" in params else {})
    reps, warm = reps_for(s, B), s["warmup"]
    flops = {}

    def run_tach():
        p = tach_bench_point(args, s, path, "bf16", B, T, warm, reps)
        flops["per_batch"] = p["flops_per_batch"]
        return p["batch_latency_ms"]["median"] / 1e3

    engines = {"tach": run_tach, "torch-eager": lambda: torch_timed(torch, device, lambda: model(input_ids=ids, **keep),
                                                                    warm, reps)}
    times, failed = alternate(engines, args.rounds)
    print(f"\nLlama-3.2-1B-sized prefill bf16, batch {B} x {T} (LM head at the last token: {bool(keep)})")
    row = {"batch": B, "seq_len": T, "dtype": "bf16", "torch_logits_last_token_only": bool(keep),
           "engines": summarize(times, failed, "  latency per batch")}
    ceiling = (ceilings or {}).get("bf16_flops_per_s")
    row["flops_per_batch"] = flops.get("per_batch")
    row["bf16_ceiling_flops_per_s"] = ceiling
    for name, e in row["engines"].items():
        if e["status"] == "ok" and ceiling and flops.get("per_batch"):
            e["fraction_of_bf16_ceiling"] = flops["per_batch"] / e["median_s"] / ceiling
            print(f"  {name:28s} {100 * e['fraction_of_bf16_ceiling']:5.1f}% of the bf16 GEMM ceiling "
                  f"({ceiling / 1e12:.1f} TFLOP/s) at tach's {flops['per_batch'] / 1e12:.3f} TFLOP per batch")
    del model
    return {f"llama-prefill/bf16/b{B}x{T}": row}


def modernbert_case(args, s, path):
    """ModernBERT-base-sized at long lengths, batch 1, bf16: tach against PyTorch's SDPA attention."""
    import numpy as np
    import torch
    import transformers as tf
    from tach.engines.torch_engine import dtype_keyword
    device = s["device"]
    dt = "f32" if args.smoke else "bf16"  # bf16 on the CPU is slow emulation on most CPUs: not the test's point
    model = tf.ModernBertForSequenceClassification.from_pretrained(
        path, attn_implementation="sdpa", **{dtype_keyword(): torch.float32 if dt == "f32" else torch.bfloat16})
    model = model.eval().to(device)
    vocab, out = model.config.vocab_size, {}
    for T in s["modernbert_lengths"]:
        ids = np.random.default_rng(T).integers(min(1000, vocab // 2), vocab - 500 if vocab > 2000 else vocab,
                                                size=(1, T), dtype=np.int64)
        ids_file = write_ids(ids)
        ids_t = torch.tensor(ids, device=device)
        mask_t = torch.ones_like(ids_t)
        reps, warm = reps_for(s, 32), s["warmup"]  # long rows: as few calls as a batch of 32
        engines = {"tach": lambda: tach_classify(args, s, path, dt, ids_file, warm, reps)["timing"]["median"]}
        if "torch-sdpa" not in args.skip:
            engines["torch-sdpa"] = lambda: torch_timed(
                torch, device, lambda: model(input_ids=ids_t, attention_mask=mask_t), warm, reps)
        times, failed = alternate(engines, args.rounds)
        os.unlink(ids_file)
        print(f"\nModernBERT-base-sized {dt}, batch 1 x {T}")
        out[f"modernbert/{dt}/b1x{T}"] = {"batch": 1, "seq_len": T, "dtype": dt,
                                          "engines": summarize(times, failed, "  latency per sequence")}
    del model
    return out


def decode_case(args, s, path, bandwidth):
    """Batch-1 greedy decoding: time per output token, against the memory-bandwidth limit."""
    import numpy as np
    import torch
    import transformers as tf
    from tach.engines.torch_engine import dtype_keyword
    device, n, out = s["device"], s["new_tokens"], {}
    vocab = QWEN2_TINY["vocab_size"] if args.smoke else 151643
    prompt = np.random.default_rng(1).integers(0, vocab, size=(1, s["prompt_len"])).tolist()
    weight_bytes_f32 = None
    for dt in s["dtypes"]:
        model = tf.Qwen2ForCausalLM.from_pretrained(path, **{dtype_keyword(): DTYPES(torch)[dt]}).eval().to(device)
        weight_bytes_f32 = weight_bytes_f32 or sum(p.numel() for p in model.parameters()) * 4
        ids = torch.tensor(prompt, device=device)

        def torch_per_token():
            with torch.no_grad():
                o = model(input_ids=ids, use_cache=True)
                past, nxt = o.past_key_values, o.logits[:, -1].argmax(-1, keepdim=True)
                sync(torch, device)
                t0 = time.perf_counter()
                for _ in range(n - 1):
                    o = model(input_ids=nxt, past_key_values=past, use_cache=True)
                    past, nxt = o.past_key_values, o.logits[:, -1].argmax(-1, keepdim=True)
                sync(torch, device)
                return (time.perf_counter() - t0) / (n - 1)

        def tach_per_token(*extra):
            res = run_tach(args, ["generate", "--model", path, "--device", tach_device(s), "--dtype", dt, "--ids",
                                  " ".join(map(str, prompt[0])), "-n", str(n), "--ignore-eos", "--warmup", "1",
                                  "--json", *extra])
            return json.loads(res)["time_per_output_token_ms"]["median"] * 1e-3

        engines = {"tach": tach_per_token, "torch-eager": torch_per_token}
        if device.startswith("cuda"):  # tach's steps replayed from a CUDA graph (its default), and kernel by kernel
            engines["tach-no-graphs"] = lambda: tach_per_token("--no-cuda-graphs")
        torch_per_token()  # warm-up
        times, failed = alternate(engines, args.rounds)
        print(f"\nQwen2.5-0.5B-sized decode {dt}, batch 1, prompt {s['prompt_len']}, {n} tokens")
        row = {"dtype": dt, "prompt_len": s["prompt_len"], "new_tokens": n,
               "engines": summarize(times, failed, "  time per output token")}
        # tach keeps f32 weights for f32 compute and bf16 copies for bf16 (the GEMMs' inputs).
        bytes_per_token = weight_bytes_f32 if dt == "f32" else weight_bytes_f32 // 2
        if bandwidth and row["engines"].get("tach", {}).get("status") == "ok":
            limit_s = bytes_per_token / bandwidth
            row["bandwidth_limit_s"] = limit_s
            row["tach_fraction_of_limit"] = limit_s / row["engines"]["tach"]["median_s"]
            print(f"  bandwidth limit {limit_s * 1e3:.3f} ms/token ({bytes_per_token / 1e9:.2f} GB of weights at "
                  f"{bandwidth / 1e12:.2f} TB/s): tach at {100 * row['tach_fraction_of_limit']:.0f}% of it")
        out[f"decode/{dt}"] = row
        del model
    return out


def quantized_case(args, s, path):
    """int8 and nf4 decoding: tach quantizes for the CPU and refuses them on CUDA, so each row is
    tach's own answer: the refusal's message, or (on a CPU) its time per token."""
    out = {}
    for dt in ("int8", "nf4"):
        row = {"dtype": dt, "device": tach_device(s)}
        try:
            res = json.loads(run_tach(args, ["generate", "--model", path, "--device", tach_device(s), "--dtype", dt,
                                             "--prompt-len", str(s["prompt_len"]), "-n", str(s["new_tokens"]),
                                             "--ignore-eos", "--warmup", "0", "--json"]))
            row |= {"status": "ok", "tach_time_per_token_s": res["time_per_output_token_ms"]["median"] * 1e-3}
            print(f"\n{dt} decode on {tach_device(s)}: tach {row['tach_time_per_token_s'] * 1e3:.3f} ms per token")
        except TachRefused as e:
            row |= {"status": f"not supported on {tach_device(s).upper()}", "message": str(e)}
            print(f"\n{dt} decode: not supported on {tach_device(s).upper()} ({e})")
        out[f"quantized/{dt}"] = row
    return out


def DTYPES(torch):  # noqa: N802  (a table, built once torch is imported)
    return {"f32": torch.float32, "bf16": torch.bfloat16}


# --- the machine and its ceilings ----------------------------------------------------------------

def parse_ceilings(text, device="cuda:0"):
    """`tach info --ceilings`' figures for a GPU (TFLOP/s per precision, GB/s), or the CPU's line
    (GFLOP/s) for "cpu"; None where the text has none."""
    if device == "cpu":
        m = re.search(r"ceilings\s+GEMM f32 ([\d.]+) GFLOP/s, GEMM bf16 ([\d.]+) GFLOP/s.*memory ([\d.]+) GB/s", text)
        return {"f32_flops_per_s": float(m.group(1)) * 1e9, "bf16_flops_per_s": float(m.group(2)) * 1e9,
                "memory_bytes_per_s": float(m.group(3)) * 1e9} if m else None
    m = re.search(re.escape(device) + r"\s+GEMM f32 ([\d.]+) TFLOP/s, tf32 ([\d.]+), bf16 ([\d.]+), f16 ([\d.]+) "
                  r"TFLOP/s, memory ([\d.]+) GB/s", text)
    if not m:
        return None
    f32, tf32, bf16, f16, mem = (float(g) for g in m.groups())
    return {"f32_flops_per_s": f32 * 1e12, "tf32_flops_per_s": tf32 * 1e12, "bf16_flops_per_s": bf16 * 1e12,
            "f16_flops_per_s": f16 * 1e12, "memory_bytes_per_s": mem * 1e9}


def measured_ceilings(args, s):
    """The GPU's, measured now by `tach info --ceilings`; --smoke's CPU: none (measuring takes the
    machine for seconds), so the shares of a ceiling are left out and say so."""
    if args.smoke:
        return None
    res = subprocess.run([args.tach, "info", "--ceilings"], capture_output=True, text=True, timeout=300)
    return parse_ceilings(res.stdout, "cuda:0")


def machine(args, s):
    import torch
    import transformers
    import train_peer_engines as tpe
    m = {"device": s["device"], "cpu": tpe.cpu_name(), "cores": os.cpu_count(), "python": sys.version.split()[0],
         "torch": torch.__version__, "transformers": transformers.__version__}
    try:
        import onnxruntime
        m["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        m["onnxruntime"] = None
    if s["device"].startswith("cuda") and torch.cuda.is_available():
        m |= {"gpu": torch.cuda.get_device_name(0), "driver": tpe.gpu_driver(), "cuda_runtime": torch.version.cuda,
              "gpu_memory_bytes": torch.cuda.get_device_properties(0).total_memory}
    return m


def write_json(path, results):
    if path:
        with open(path + ".part", "w") as f:
            json.dump(results, f, indent=1)
        os.replace(path + ".part", path)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tach", default=".gpu/bin/tach", help="the tach binary (default .gpu/bin/tach)")
    ap.add_argument("--root", default=os.path.join(tempfile.gettempdir(), "tach-gpu-peers"),
                    help="where the checkpoints are written (kept between runs)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)} (default all)")
    ap.add_argument("--skip", default="", help=f"engines left out, comma-separated, of {', '.join(ENGINES)} "
                                               "(e.g. torch-compile-max-autotune: minutes of compiling)")
    ap.add_argument("--compile-timeout", type=float, default=600,
                    help="seconds for torch.compile mode max-autotune to load and compile one shape, and for each of "
                         "its rounds (default 600); past it the engine is recorded as failed and the run goes on")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="every case on tiny models on the CPU, in seconds (the test)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and write the JSON header; build nothing")
    ap.add_argument("--only", choices=["encoder", "decoder"],
                    help="the former halves: encoder = distilbert,tf32,modernbert; decoder = decode,llama-prefill,quantized")
    ap.add_argument("--json-out", help="write the results here (after each case, so a run cut short keeps them)")
    args = ap.parse_args(argv)
    if args.only:
        args.cases = ("distilbert,tf32,modernbert" if args.only == "encoder" else "decode,llama-prefill,quantized")
    args.cases = [c for c in args.cases.split(",") if c]
    for c in args.cases:
        if c not in CASES:
            ap.error(f"--cases: unknown case '{c}' (one of {', '.join(CASES)})")
    args.skip = [e for e in args.skip.split(",") if e]
    for e in args.skip:
        if e not in ENGINES:
            ap.error(f"--skip: unknown engine '{e}' (one of {', '.join(ENGINES)})")
    if args.rounds < 1:
        ap.error("--rounds must be 1 or more")
    if args.compile_timeout <= 0:
        ap.error("--compile-timeout must be positive (seconds)")
    return args


def main(argv=None):
    args = parse_args(argv)
    s = settings(args)
    results = {"schema": "tach.gpu_peers/1", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "command": sys.argv, "settings": s | {"rounds": args.rounds, "cases": args.cases, "skip": args.skip,
                                                     "compile_timeout_s": args.compile_timeout, "smoke": args.smoke},
               "cases": {}}
    import train_peer_engines as tpe
    results["tach"] = {"binary": args.tach, "version": tpe.tach_version(args.tach)}
    print(f"cases: {', '.join(args.cases)}; engines left out: {', '.join(args.skip) or 'none'}; {args.rounds} rounds; "
          f"{'tiny models on the CPU' if args.smoke else 'real sizes on cuda:0'}", flush=True)
    if args.dry_run:
        results["dry_run"] = True
        write_json(args.json_out, results)
        return 0
    import torch
    if s["device"].startswith("cuda") and not torch.cuda.is_available():
        print("PyTorch sees no CUDA device here (--smoke runs the cases tiny on the CPU)", file=sys.stderr)
        return 2
    if args.smoke:
        torch.set_num_threads(1)  # a test on a shared machine: one core for PyTorch
    results["machine"] = machine(args, s)
    print(f"torch {torch.__version__} on {results['machine'].get('gpu', results['machine']['cpu'])}", flush=True)
    os.makedirs(args.root, exist_ok=True)
    ceilings = measured_ceilings(args, s)
    results["ceilings"] = ceilings if ceilings else {"status": "not measured (--smoke: the CPU's would take seconds)"
                                                     if args.smoke else "tach info --ceilings gave none for cuda:0"}
    t_start = time.monotonic()
    for case in args.cases:
        t0 = time.monotonic()
        try:
            path = make_checkpoint(args, case)
            if case == "distilbert":
                got = distilbert_case(args, s, path)
            elif case == "tf32":
                got = tf32_case(args, s, path)
            elif case == "llama-prefill":
                got = llama_prefill_case(args, s, path, ceilings)
            elif case == "modernbert":
                got = modernbert_case(args, s, path)
            elif case == "decode":
                got = decode_case(args, s, path, (ceilings or {}).get("memory_bytes_per_s"))
            else:
                got = quantized_case(args, s, path)
            results["cases"][case] = {"status": "ok", "wall_s": time.monotonic() - t0, "rows": got}
        except Exception as e:  # noqa: BLE001  (a case that fails is a result; the others go on)
            results["cases"][case] = {"status": "failed", "message": f"{type(e).__name__}: {e}",
                                      "wall_s": time.monotonic() - t0}
            print(f"\n{case}: failed: {type(e).__name__}: {e}", flush=True)
        if s["device"].startswith("cuda"):
            torch.cuda.empty_cache()
        results["wall_s"] = time.monotonic() - t_start
        write_json(args.json_out, results)
    print(f"\n{results['wall_s']:.0f} s in all" + (f"; results: {args.json_out}" if args.json_out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
