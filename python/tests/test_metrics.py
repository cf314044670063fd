"""The metrics library under training scripts' names and layouts, and what it costs per step."""
import json
import math
import time

import pytest

import tach


def test_metric_tracker():
    t = tach.MetricTracker()
    for step, v in enumerate([1.0, 2.0, 3.0, 4.0, float("nan")]):
        t.update("loss", v, step=step)
    t.update_batch({"loss": 5.0, "reward": 0.5}, step=5)
    assert t.get_mean("loss") == 3.0 and t.get_rejected("loss") == 1
    assert math.isclose(t.get_std("loss"), math.sqrt(2.5))
    s = t.get_summary("loss")
    assert s["count"] == 5 and s["min"] == 1 and s["max"] == 5 and s["p50"] == 3
    assert t.get_history("loss") == [1, 2, 3, 4, 5]
    assert t.get_window_stats("loss", 2)["mean"] == 4.5
    assert set(t.get_summary()) == {"loss", "reward"}


def test_grpo_tracker():
    g = tach.GRPOMetricsTracker()
    g.update_grpo_step(step=100, policy_loss=0.45, mean_reward=0.72, reward_components={"format": 1.0},
                       kl_divergence=0.012)
    g.update_group_rewards([0.9, 0.7, 0.5, 0.3])
    g.update_group_rewards([1.0, 1.0, 1.0, 1.0])
    d = g.get_reward_distribution()
    assert d["groups"] == 2 and d["zero_variance_fraction"] == 0.5
    assert math.isclose(d["reward_mean"], (2.4 + 4.0) / 8)
    assert d["rank_distribution"]["0"] == pytest.approx(0.95)
    assert g.get_summary()["reward/format"]["mean"] == 1.0


def test_score_distribution_layout():
    s = tach.ScoreDistributionTracker()
    s.update([1.0, 0.5, None, 1.0, 0.0])
    assert s.get_distribution() == {"total": 5, "valid_count": 4, "invalid_count": 1, "invalid_rate": 0.2,
                                    "score_counts": {"0.0": 1, "0.5": 1, "1.0": 2}, "mean_score": 0.625}


def test_training_logger_layout(tmp_path):
    log = tach.TrainingLogger(tmp_path, "verifier_iter1")
    for step in range(3):
        log.log_step(step=step, metrics={"loss": 1.0 - step * 0.1, "reward": 0.5}, scores=[1.0, 0.5, None])
        if step == 1:
            log.save_checkpoint_metrics("step_1")
    path = log.export_all()
    j = json.load(open(path))
    assert j["experiment_name"] == "verifier_iter1"
    assert j["raw_metrics"]["loss"] == pytest.approx([1.0, 0.9, 0.8])
    assert j["metric_summaries"]["loss"]["mean"] == pytest.approx(0.9)
    assert j["score_distribution"]["valid_count"] == 6 and j["score_distribution"]["invalid_count"] == 3
    assert j["checkpoints"]["step_1"]["loss"]["count"] == 2
    lines = open(log.steps_path).read().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["metrics"]["loss"] == 1.0


def test_timer_and_throughput():
    timer = tach.TrainingTimer(device="cpu")
    for _ in range(3):
        timer.start("forward")
        time.sleep(0.002)
        assert timer.stop("forward") >= 0.002
    s = timer.get_summary()["forward"]
    assert s["count"] == 3 and s["mean_sec"] >= 0.002 and s["total_sec"] == pytest.approx(3 * s["mean_sec"])
    with pytest.raises(tach.Error, match="without a start"):
        timer.stop("backward")
    tp = tach.ThroughputTracker(window_size=10)
    for _ in range(5):
        tp.update(num_samples=8, num_tokens=1024)
        time.sleep(0.002)
    r = tp.get_current_throughput()
    assert r["samples_per_sec"] > 0 and r["tokens_per_sec"] == pytest.approx(128 * r["samples_per_sec"])


def test_memory_profiler_sees_python_allocations():
    p = tach.GPUMemoryProfiler(device="cpu")
    p.set_baseline()
    assert not p.detect_leak(threshold_gb=0.05)
    hoard = bytearray(200 * 1000 * 1000)
    hoard[::4096] = b"x" * len(hoard[::4096])  # touch every page so that it is resident
    m = p.measure("after")
    assert m["allocated_gb"] >= 0.19 and m["source"].startswith("process resident set")
    leak = p.detect_leak(threshold_gb=0.1)
    assert leak and leak["growth_gb"] >= 0.19
    del hoard


def test_comprehensive_profiler_export(tmp_path):
    p = tach.ComprehensiveProfiler(device="cpu")
    for _ in range(5):
        p.start_iteration()
        time.sleep(0.003)
        p.end_iteration(num_samples=8, num_tokens=512)
    out = tmp_path / "profiling_results.json"
    p.export_to_json(out)
    j = json.load(open(out))
    assert j["schema"] == "tach.comprehensive_profile/1" and j["device"] == "cpu"
    assert j["timing"]["iteration"]["count"] == 5 and j["timing"]["iteration"]["mean_sec"] >= 0.003
    assert j["throughput"]["samples_per_sec"] > 0 and j["memory"]["peak_allocated_gb"] > 0
    assert j["overhead"]["per_iteration_sec"] > 0
    with pytest.raises(tach.Error, match="without start_iteration"):
        p.end_iteration(1)


def test_overhead_per_step_is_below_one_percent_of_a_10ms_step(tmp_path):
    """Everything a training loop would call once per step, timed alone: well under 100 µs."""
    prof = tach.ComprehensiveProfiler(device="cpu")
    log = tach.TrainingLogger(tmp_path, "overhead")
    metrics = tach.MetricTracker()
    n = 300
    t0 = time.perf_counter()
    for step in range(n):
        prof.start_iteration()
        prof.end_iteration(num_samples=8, num_tokens=1024)
        metrics.update("loss", 0.5, step=step)
        log.log_step(step, {"loss": 0.5, "lr": 1e-4})
    per_step = (time.perf_counter() - t0) / n
    print(f"tracker overhead per step: {per_step * 1e6:.1f} µs")
    assert per_step < 0.01 * 0.010


def _gpu_usable():
    return tach._tach._default_metrics_device()[0] != "cpu"


def test_device_left_out_is_the_gpu_where_usable_else_the_cpu():
    """The three device-taking classes agree: left out, the GPU where one is usable, else the CPU,
    said once on stderr and in `device_note`; the CPU's memory is the RSS."""
    want = "cuda:0" if _gpu_usable() else "cpu"
    p = tach.ComprehensiveProfiler()
    timer = tach.TrainingTimer()
    memory = tach.GPUMemoryProfiler()
    for obj in (p, timer, memory):
        assert obj.device == want and obj.device_note.startswith(want), (type(obj).__name__, obj.device_note)
    p.start_iteration()
    timer.start("step")
    timer.stop("step")
    p.end_iteration(num_samples=1)
    memory.set_baseline()
    j = p.get_summary()
    assert j["device"] == ("cpu" if want == "cpu" else 0)
    if want == "cpu":
        assert "no usable GPU" in p.device_note
        assert memory.measure("now")["source"].startswith("process resident set")


def test_unusable_cuda_device_is_refused_at_construction():
    """A CUDA device that cannot be used is refused when the object is made, naming the device and
    what to pass instead, by all three classes alike (not a CUDA error at the first reading)."""
    bad = 0 if not _gpu_usable() else 64  # no machine here has 65 GPUs
    for make in (tach.ComprehensiveProfiler, tach.TrainingTimer, tach.GPUMemoryProfiler):
        with pytest.raises(tach.Error, match=r"device cuda:\d+ (cannot be used|is not there)"):
            make(device=bad)
        with pytest.raises(tach.Error, match=r"cuda:\d+"):
            make(device=f"cuda:{bad}")


def test_missing_numpy_is_a_clear_message():
    """Without numpy, import tach says what is missing and how to install it."""
    import subprocess
    import sys
    code = "import sys; sys.modules['numpy'] = None\nimport tach"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode != 0
    assert "tach's Python module needs numpy" in r.stderr and "pip install numpy" in r.stderr, r.stderr
