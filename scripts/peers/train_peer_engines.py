"""The two sides of scripts/peers/gpu_train_peers.py: a PyTorch training step held in a worker
process (eager, torch.compile, peft LoRA/QLoRA), and one `tach bench --train` point.

A worker process per PyTorch engine keeps its model, optimizer and compiled graphs between
rounds, so the rounds alternate engines without rebuilding them; a compile that fails or hangs
costs that engine, not the run (the parent records the error or kills the worker at its limit).
"""
import json
import os
import resource
import subprocess
import sys
import time
import traceback

# tach's engine workers' code, from this checkout (python/tach/engines).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

# peft's names of every linear of the layers (tach's default LoRA targets for these families).
LORA_TARGETS = {"distilbert": ["q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"],
                "llama": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}
# Random ids are drawn from [1000, ID_HIGH): clear of special and padding ids (Llama 3's pad is 128004).
ID_HIGH = {"distilbert": 30000, "llama": 120000}
LR, CLIP = 5e-5, 1.0  # tach's defaults: AdamW lr 5e-5, weight decay 0, clipping at global norm 1.0


def step_inputs(torch, model_type, vocab, num_labels, batch, seq):
    """The same ids and labels in every PyTorch engine: full rows (no padding), seeded."""
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(1000, min(ID_HIGH[model_type], vocab), (batch, seq), generator=gen)
    labels = torch.randint(0, num_labels, (batch,), generator=gen)
    return ids, torch.ones_like(ids), labels


def training_flops(torch, model, ids, mask):
    """Model FLOPs of one training step, counted on the model's own forward: every nn.Linear's
    2*rows*in*out, times 3 when its weight trains (forward, dX, dW) and 2 when frozen (forward, dX:
    a LoRA base); plus attention's two batched GEMMs, 4*B*T^2*(heads*head_dim) per layer forward
    and twice that backward, counted dense for causal models as PaLM's MFU does."""
    total = [0]

    def hook(mod, inputs, _out):
        rows = inputs[0].numel() // mod.in_features
        total[0] += 2 * rows * mod.in_features * mod.out_features * (3 if mod.weight.requires_grad else 2)

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask)
    for h in handles:
        h.remove()
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    batch, seq = ids.shape
    attention = 12 * cfg.num_hidden_layers * batch * seq * seq * cfg.num_attention_heads * head_dim
    return total[0] + attention


class NvmlEnergy:
    """NVML's total-energy counter of the GPU torch calls `device` (the whole board, every process),
    through ctypes on libnvidia-ml.so.1, matched by PCI address as tach matches it. `why` says why
    not where it cannot be read (no library, no such call, the CPU)."""

    def __init__(self, torch, device):
        import ctypes
        self.read_mj, self.why = None, None
        if device.type != "cuda":
            self.why = "unavailable: NVML's energy counter is a GPU's; these steps ran on the CPU"
            return
        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            self.why = f"unavailable: libnvidia-ml.so.1 not loadable ({e})"
            return
        if nvml.nvmlInit_v2() != 0:
            self.why = "unavailable: nvmlInit_v2 failed"
            return
        handle = ctypes.c_void_p()
        props = torch.cuda.get_device_properties(device)
        if hasattr(props, "pci_bus_id"):
            bus = f"{getattr(props, 'pci_domain_id', 0):08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
            rc = nvml.nvmlDeviceGetHandleByPciBusId_v2(bus.encode(), ctypes.byref(handle))
        elif not os.environ.get("CUDA_VISIBLE_DEVICES"):
            rc = nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(device.index or 0), ctypes.byref(handle))
        else:
            self.why = "unavailable: this torch gives no PCI address to find the GPU in NVML under CUDA_VISIBLE_DEVICES"
            return
        if rc != 0:
            self.why = f"unavailable: NVML found no handle for {device} (error {rc})"
            return
        value = ctypes.c_ulonglong()

        def read_mj():
            rc = nvml.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(value))
            return value.value if rc == 0 else None

        if read_mj() is None:
            self.why = "unavailable: NVML has no total-energy counter for this GPU"
            return
        self.read_mj = read_mj


def energy_per_step(readings_mj):
    """J per step from the counter read after each step (readings_mj[0] before the first): the
    counter moves in steps (~100 ms), so the energy between its first and last moves seen over the
    steps is divided by the steps between them, as tach does. None and the reason below two moves."""
    moves = [i for i in range(1, len(readings_mj)) if readings_mj[i] != readings_mj[i - 1]]
    if len(moves) < 2:
        return None, (f"unavailable: the {len(readings_mj) - 1} timed steps spanned fewer than two steps of NVML's "
                      "energy counter (time more steps)")
    first, last = moves[0], moves[-1]
    return (readings_mj[last] - readings_mj[first]) / 1e3 / (last - first), (
        f"NVML total energy of the GPU, whole board, over the timed steps: {last - first} steps between two "
        "steps of the counter")


class TorchStep:
    """One training step as transformers' Trainer runs it with --bf16 --optim adamw_torch_fused:
    f32 master weights, the forward and loss under bf16 autocast, backward, clipping, fused AdamW.
    The model and the step are tach's torch engine's (tach.engines.torch_engine), the code
    `tach bench --train --engine torch,torch-compile` runs in its workers."""

    def __init__(self, spec):
        import torch
        from tach.engines._requests import Load, Train
        from tach.engines.torch_engine import TrainStep, build_model
        self.torch, self.spec = torch, spec
        self.device = torch.device(spec["device"])
        if spec["threads"]:
            torch.set_num_threads(spec["threads"])
        t0 = time.perf_counter()
        method = spec["method"]
        with open(os.path.join(spec["checkpoint"], "config.json")) as f:
            model_type = json.load(f)["model_type"]
        train = Train(method=method, lr=LR, weight_decay=0.0, seed=0, lora_r=spec.get("lora_r", 8),
                      lora_alpha=spec.get("lora_alpha", 16), lora_dropout=0.0, max_grad_norm=CLIP,
                      lora_targets=LORA_TARGETS[model_type] if method in ("lora", "qlora") else None)
        load = Load(model=spec["checkpoint"], task="sequence-classification", dtype="bf16", device=spec["device"],
                    threads=spec["threads"] or 0, train=train)
        model = build_model(torch, load)  # seeded, f32 weights (NF4 base for QLoRA), on the device, train()
        cfg = model.config
        ids, mask, labels = step_inputs(torch, cfg.model_type, cfg.vocab_size, cfg.num_labels, spec["batch"], spec["seq"])
        self.batch = {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device),
                      "labels": labels.to(self.device)}
        self.train_step = TrainStep(torch, model, train, spec["device"], "bf16")
        self.energy = NvmlEnergy(torch, self.device)
        self.params = self.train_step.params
        self.info = {"parameters": sum(p.numel() for p in model.parameters()),
                     "trainable_parameters": sum(p.numel() for p in self.params),
                     "flops_per_step": training_flops(torch, model, self.batch["input_ids"], self.batch["attention_mask"])}
        engine = spec["engine"]
        self.compiled = engine != "torch-eager"
        if self.compiled:
            self.train_step.forward = torch.compile(
                model, mode="max-autotune" if engine == "torch-compile-max-autotune" else None)
            self.train_step.cuda_graphs = self.device.type == "cuda"  # max-autotune's CUDA graphs: a new step
        for _ in range(3):  # compiles (forward and backward) and records CUDA graphs outside the rounds
            self.step()
        self.sync()
        self.info["setup_s"] = time.perf_counter() - t0

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def step(self):
        self.train_step(self.batch)

    def timed_steps(self, warmup, steps):
        """Seconds of each of `steps` steps (each ends with a device sync), after `warmup` steps,
        the peak memory of those steps, and their energy: {"j_per_step", "source"}."""
        if self.device.type == "cuda":
            self.torch.cuda.reset_peak_memory_stats(self.device)
        for _ in range(warmup):
            self.step()
        self.sync()
        times = []
        read = self.energy.read_mj
        readings = [read()] if read else []
        for _ in range(steps):
            t0 = time.perf_counter()
            self.step()
            self.sync()
            times.append(time.perf_counter() - t0)
            if read:
                readings.append(read())  # outside the step's time
        if not read:
            energy = {"j_per_step": None, "source": self.energy.why}
        elif None in readings:
            energy = {"j_per_step": None, "source": "unavailable: NVML's energy counter stopped answering"}
        else:
            j, source = energy_per_step(readings)
            energy = {"j_per_step": j, "source": source}
        if self.device.type == "cuda":
            peak = self.torch.cuda.max_memory_allocated(self.device)
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return times, peak, energy


def torch_worker(conn, spec):
    """A worker process's main: builds the step, says ("ready", info), then answers each
    ("time", warmup, steps) with ("times", [s...], peak_bytes, energy) until ("stop",). Any failure is sent
    as ("error", message, traceback) and ends the worker."""
    try:
        step = TorchStep(spec)
        conn.send(("ready", step.info))
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                return
            times, peak, energy = step.timed_steps(msg[1], msg[2])
            conn.send(("times", times, peak, energy))
    except BaseException as e:  # the parent records it: an engine that failed is reported, not dropped
        last = str(e).strip().splitlines()
        conn.send(("error", f"{type(e).__name__}: {last[0] if last else ''}"[:500], traceback.format_exc()[-4000:]))


def tach_command(tach, spec, warmup, steps, runs_dir):
    cmd = [tach, "bench", "--train", "-m", spec["checkpoint"], "--device", spec["device"], "--dtype", spec["tach_dtype"],
           "-b", str(spec["batch"]), "-s", str(spec["seq"]), "--method", spec["method"], "--runs", str(steps),
           "--warmup", str(warmup), "--seed", "0", "--format", "json", "--no-progress", "--no-tensorboard",
           "--runs-dir", runs_dir, "--lr", str(LR), "--max-grad-norm", str(CLIP), "--exec", spec.get("exec", "eager")]
    if spec["method"] in ("lora", "qlora"):
        cmd += ["--lora-r", str(spec["lora_r"]), "--lora-alpha", str(spec["lora_alpha"])]
    if spec["threads"]:
        cmd += ["-t", str(spec["threads"])]
    return cmd


def tach_point(tach, spec, warmup, steps, runs_dir, timeout):
    """One `tach bench --train` point: {"status": "ok", "step_s", "peak_bytes", "energy", "own"} or
    {"status": "failed", "message"} with tach's own words (its point's reason, else its stderr)."""
    cmd = tach_command(tach, spec, warmup, steps, runs_dir)
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "message": f"no result within {timeout} s", "command": cmd}
    except OSError as e:
        return {"status": "failed", "message": f"could not run {tach}: {e}", "command": cmd}
    try:
        point = json.loads(res.stdout)[0]
    except (ValueError, IndexError, KeyError):
        point = None
    if point is None or point.get("status") != "ok":
        why = (point or {}).get("reason") or " ".join(res.stderr.strip().splitlines()[-3:]) or f"exit {res.returncode}"
        return {"status": "failed", "message": why[:1000], "exit": res.returncode, "command": cmd}
    mem = point["memory"]
    on_gpu = spec["device"] != "cpu"
    train = point.get("train", {})
    energy = point.get("energy") or {}
    j_per_sample = energy.get("j_per_sample", -1)
    energy = {"j_per_step": j_per_sample * spec["batch"] if j_per_sample is not None and j_per_sample >= 0 else None,
              "source": energy.get("source") or "unavailable: the point has no energy"}
    return {"status": "ok", "step_s": point["batch_latency_ms"]["median"] / 1e3, "command": cmd, "energy": energy,
            "peak_bytes": mem["allocator"]["total"]["peak_bytes"] if on_gpu else mem["peak_rss_bytes"],
            "own": {k: train.get(k) for k in ("precision", "mfu", "model_flops_per_step", "parameters",
                                              "trainable_parameters", "loss_first", "loss_last")}
            | {"device_memory_used_bytes": mem.get("device_memory_used_bytes"),
               "allocator_peak_bytes": mem["allocator"]["total"]["peak_bytes"], "id": point.get("id")}}


def tach_version(tach):
    try:
        return subprocess.run([tach, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError as e:
        return f"unavailable ({e})"


def gpu_driver():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        return out.splitlines()[0] if out else None
    except OSError:
        return None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine
