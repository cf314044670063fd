"""scripts/peers/gpu_train_peers.py run tiny on the CPU: every workload and engine is reported
with its figures, PyTorch and tach train the same model (parameter counts equal), the model FLOPs
are the formula's, and a tach that fails is recorded with its message rather than dropped."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "peers", "gpu_train_peers.py")
TACH = os.environ["TACH"]
TOKENS, LAYERS = 2 * 16, 2


def run(tmp_path, *extra, tach=TACH):
    out = tmp_path / "peers.json"
    res = subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--tiny", "--threads", "1", "--rounds", "1",
                          "--tach", tach, "--root", str(tmp_path / "models"), "--json-out", str(out), *extra],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(out.read_text()), res.stdout


def attention_flops(heads, head_dim):
    # QK^T and PV: 2 * 2*B*T^2*(heads*head_dim) forward, twice that backward, per layer
    return 12 * LAYERS * 2 * 16 * 16 * heads * head_dim


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return run(tmp_path_factory.mktemp("tiny"), "--engines", "eager,tach")


def test_every_workload_has_both_engines_figures(tiny):
    results, stdout = tiny
    m = results["machine"]
    assert m["device"] == "cpu" and m["torch"] and m["transformers"] and m["peft"]
    assert results["ceiling"]["flops_per_s"] > 0
    assert set(results["workloads"]) == {"distilbert", "llama-full", "llama-lora", "llama-qlora"}
    for name, w in results["workloads"].items():
        engines = ["tach"] if name == "llama-qlora" else ["torch-eager", "tach"]
        for e in engines:
            row = w["engines"][e]
            assert row["status"] == "ok", (name, e, row)
            assert row["step_ms"] > 0 and row["peak_memory_bytes"] > 0 and row["mfu"] > 0
            assert row["tokens_per_s"] == pytest.approx(TOKENS / (row["step_ms"] / 1e3))
            assert name in stdout
        assert w["engines"]["tach"]["tach_reports"]["precision"].startswith("bf16")
    assert "time_over_tach" in results["workloads"]["distilbert"]["engines"]["torch-eager"]


def test_every_engine_says_its_energy_per_step_or_why_not(tiny):
    for name, w in tiny[0]["workloads"].items():
        for e, row in w["engines"].items():
            if row["status"] != "ok":
                continue
            assert row["energy_source"], (name, e, row)
            assert (row["energy_j_per_step"] is None) == row["energy_source"].startswith("unavailable"), (name, e, row)
    assert "NVML's energy counter is a GPU's" in tiny[0]["workloads"]["distilbert"]["engines"]["torch-eager"]["energy_source"]
    assert "J/step" in tiny[1]


def test_energy_per_step_is_between_the_counters_first_and_last_moves():
    sys.path.insert(0, os.path.join(ROOT, "scripts", "peers"))
    import train_peer_engines
    # mJ read before the first step and after each: moves after steps 2, 4 and 6
    j, source = train_peer_engines.energy_per_step([1000, 1000, 1100, 1100, 1200, 1200, 1300, 1300])
    assert j == pytest.approx(0.05) and "4 steps between two steps of the counter" in source
    j, source = train_peer_engines.energy_per_step([5, 5, 6, 6])
    assert j is None and source.startswith("unavailable: the 3 timed steps spanned fewer than two steps")


def test_both_sides_train_the_same_parameters(tiny):
    for name in ("distilbert", "llama-full", "llama-lora"):
        e = tiny[0]["workloads"][name]["engines"]
        assert e["torch-eager"]["trainable_parameters"] == e["tach"]["tach_reports"]["trainable_parameters"], name


def test_model_flops_are_the_formulas(tiny):
    w = tiny[0]["workloads"]
    # DistilBERT tiny (dim 32, hidden 64, 2 labels): 4 attention projections and 2 FFN linears per
    # layer over every token; pre_classifier and classifier over the 2 [CLS] rows only.
    layer = 4 * 32 * 32 + 2 * 32 * 64
    head_rows = 2 * (32 * 32 + 32 * 2)
    assert w["distilbert"]["model_flops_per_step"] == 6 * (LAYERS * layer * TOKENS + head_rows) + attention_flops(2, 16)
    # Llama tiny (hidden 64, 4 query / 2 key-value heads of 16, intermediate 128): q, k, v, o, gate,
    # up, down; the score head runs on every token. LoRA r 16: the base frozen (forward and dX: 4
    # FLOPs a weight a token), the adapters r*(in+out) and the head trained (6).
    base = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128
    adapters = 16 * ((64 + 64) + 2 * (64 + 32) + (64 + 64) + 3 * (64 + 128))
    score = 64 * 2
    attention = attention_flops(4, 16)
    assert w["llama-full"]["model_flops_per_step"] == 6 * TOKENS * (LAYERS * base + score) + attention
    assert w["llama-lora"]["model_flops_per_step"] == TOKENS * (4 * LAYERS * base + 6 * LAYERS * adapters
                                                                + 6 * score) + attention


def test_qlora_peer_is_skipped_saying_why(tiny):
    row = tiny[0]["workloads"]["llama-qlora"]["engines"]["torch-eager"]
    assert row["status"] == "skipped" and "CUDA only" in row["message"]


def test_a_failing_tach_is_recorded_with_its_message(tmp_path):
    fake = tmp_path / "tach"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'tach 0.0'; exit 0; }\n"
                    "echo 'tach: error: layer_norm on cuda: no CUDA kernel yet' >&2\nexit 1\n")
    fake.chmod(0o755)
    results, stdout = run(tmp_path, "--engines", "tach", "--workloads", "distilbert,llama-lora", "--rounds", "2",
                          tach=str(fake))
    for name in ("distilbert", "llama-lora"):
        row = results["workloads"][name]["engines"]["tach"]
        assert row["status"] == "failed", row
        assert row["message"] == "round 1: tach: error: layer_norm on cuda: no CUDA kernel yet"
        assert row["command"][:3] == [str(fake), "bench", "--train"]
    assert "tach                         failed: round 1: tach: error: layer_norm" in stdout


def test_an_unknown_workload_is_a_usage_error(tmp_path):
    res = subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--workloads", "distilbert,gpt2"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "--workloads: unknown workload 'gpt2'" in res.stderr


def test_a_spent_budget_records_each_workload_left_out(tmp_path):
    results, stdout = run(tmp_path, "--budget-s", "1e-9", "--workloads", "distilbert,llama-lora")
    for name in ("distilbert", "llama-lora"):
        assert results["workloads"][name] == {"status": "skipped",
                                              "message": "not started: the run's --budget-s 0 was spent"}
        assert f"{name}: skipped: not started" in stdout


def test_an_engine_failing_in_a_later_round_keeps_its_earlier_rounds(tmp_path):
    # A tach that runs once (one point of 2.5 ms steps), then fails.
    fake = tmp_path / "tach"
    point = ('[{"status": "ok", "reason": "", "batch_latency_ms": {"median": 2.5}, "memory": {"peak_rss_bytes": 1000, '
             '"device_memory_used_bytes": -1, "allocator": {"total": {"peak_bytes": 100}}}, '
             '"train": {"precision": "bf16 (oneDNN)", "model_flops_per_step": 5.0}}]')
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'tach 0.0'; exit 0; }}\n"
                    f"if [ -e {tmp_path}/ran ]; then echo 'tach: error: out of device memory' >&2; exit 1; fi\n"
                    f"touch {tmp_path}/ran\necho '{point}'\n")
    fake.chmod(0o755)
    results, _ = run(tmp_path, "--engines", "eager,tach", "--workloads", "distilbert", "--rounds", "2", tach=str(fake))
    row = results["workloads"]["distilbert"]["engines"]["tach"]
    assert row["status"] == "failed" and row["message"] == "round 2: tach: error: out of device memory", row
    assert row["step_ms_rounds_before"] == [2.5]
    assert results["workloads"]["distilbert"]["engines"]["torch-eager"]["status"] == "ok"


def test_cuda_without_a_gpu_is_a_usage_error_naming_the_cpu_run(tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    res = subprocess.run([sys.executable, SCRIPT, "--root", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2
    assert "--device cuda: PyTorch sees no CUDA device here (use --device cpu --tiny" in res.stderr


def test_tach_fused_is_tachs_fused_execution_beside_its_eager_one(tmp_path):
    results, _ = run(tmp_path, "--engines", "tach,tach-fused", "--workloads", "distilbert")
    engines = results["workloads"]["distilbert"]["engines"]
    for e, exec_ in (("tach", "eager"), ("tach-fused", "fused")):
        assert engines[e]["status"] == "ok", engines[e]
        command = engines[e]["command"]
        assert command[command.index("--exec") + 1] == exec_, command
    assert "time_over_tach" in engines["tach-fused"]
