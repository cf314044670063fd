"""The metrics library under the names and JSON layouts training scripts use.

Every class computes in tach's C++ library (tach/metrics.h): the same statistics as tach train's
own, thread-safe, with NaN and infinities rejected rather than averaged. Times are seconds, memory
GB (1e9 bytes), rates per second of wall time. Statistics of a series with no values are NaN.
"""
import json
import math
import os
import sys

from . import _tach

_GB = 1e9
_default_said = False


def _resolve_device(device):
    """(the device for the C++ class, its name, why it was chosen): a device left out (None) is the
    GPU where one is usable, else the CPU, said once per process on stderr; a named one is checked
    by the class at construction (a CUDA device that cannot be used is refused there)."""
    global _default_said
    if device is not None:
        return device, _tach._device_name(device), "given"
    name, why = _tach._default_metrics_device()
    if not _default_said:
        _default_said = True
        print(f"tach: the metrics classes measure {why} (pass device=... to choose)", file=sys.stderr)
    return name, name, why


def _stats_sec(s):
    """A timer's statistics with the `_sec` names training scripts read."""
    out = {"count": s["count"]}
    for k in ("mean", "std", "min", "max", "p50", "p95", "p99"):
        out[k + "_sec"] = s[k]
    out["total_sec"] = s["mean"] * s["count"] if s["count"] else 0.0
    return out


class TrainingTimer:
    """Named phases of a step: timer.start("forward") ... timer.stop("forward") -> seconds.

    On a CUDA device (device=0 or "cuda:0") the device is synchronised before each clock reading,
    so the time includes the GPU work queued in the phase. device left out: the GPU where one is
    usable, else the CPU (`device` and `device_note` say which); a CUDA device that cannot be used
    is refused here.
    """

    def __init__(self, device=None):
        d, self.device, self.device_note = _resolve_device(device)
        self._timer = _tach._Timer(d)

    def start(self, name):
        self._timer.start(name)

    def stop(self, name):
        return self._timer.stop(name)

    def get_stats(self, name):
        return _stats_sec(self._timer.stats(name))

    def get_summary(self):
        """{phase: {count, mean_sec, std_sec, min_sec, max_sec, p50_sec, p95_sec, p99_sec, total_sec}}"""
        return {n: self.get_stats(n) for n in self._timer.names()}


class ThroughputTracker:
    """Samples and tokens per second over the last `window_size` updates, and an EMA."""

    def __init__(self, window_size=100, ema_alpha=0.1):
        self._t = _tach._ThroughputTracker(window_size, ema_alpha)

    def update(self, num_samples, num_tokens=0):
        self._t.update(int(num_samples), int(num_tokens))

    def get_current_throughput(self):
        """{samples_per_sec, tokens_per_sec}: work over the wall time the window spans (0 before two updates)."""
        r = self._t.rates()
        return {"samples_per_sec": r["samples_per_sec"], "tokens_per_sec": r["tokens_per_sec"]}

    def get_summary(self):
        return self._t.rates()


class LeakReport(dict):
    """detect_leak's answer: true when memory grew past the threshold; the dict says by how much."""

    def __bool__(self):
        return bool(self["leak"])


class GPUMemoryProfiler:
    """Memory of this process, for any program (a PyTorch loop included): tach reads the device's
    memory in use from the CUDA runtime (all processes on that GPU: PyTorch's allocated and cached
    memory alike, which tach cannot tell apart) and the process's RSS from procfs. On the CPU
    (device="cpu", or the device left out on a machine without a usable GPU) the tracked figure is
    the RSS; a CUDA device that cannot be used is refused here. measure() returns allocated_gb and
    reserved_gb as that one figure, so that scripts written for torch.cuda's names run; `source`
    says what was read."""

    def __init__(self, device=None):
        d, self.device, self.device_note = _resolve_device(device)
        self._p = _tach._MemoryProfiler(d)
        self._max = 0.0
        self._history = []

    def measure(self, tag=""):
        s = self._p.measure(tag)
        on_device = s["device_used_bytes"] >= 0
        tracked = (s["device_used_bytes"] if on_device else s["rss_bytes"]) / _GB
        self._max = max(self._max, tracked)
        m = {"tag": tag, "allocated_gb": tracked, "reserved_gb": tracked, "max_allocated_gb": self._max,
             "max_reserved_gb": self._max, "rss_gb": s["rss_bytes"] / _GB, "peak_rss_gb": s["peak_rss_bytes"] / _GB,
             "device_used_gb": s["device_used_bytes"] / _GB if on_device else None,
             "source": "device memory in use, all processes (CUDA runtime)" if on_device
             else "process resident set (VmRSS)"}
        self._history.append(m)
        return m

    def set_baseline(self):
        self._p.set_baseline()

    def detect_leak(self, threshold_gb=0.5):
        """Growth of the tracked figure since set_baseline() beyond threshold_gb (a LeakReport, true on a leak)."""
        r = self._p.detect_process_leak(int(threshold_gb * _GB))
        return LeakReport(leak=r["leak"], growth_gb=r["growth_bytes"] / _GB, explanation=r["explanation"])

    def get_history(self):
        return list(self._history)


class ComprehensiveProfiler:
    """Iteration time, throughput and memory of a training loop, exported as one JSON file:

        profiler.start_iteration(); ...step...; profiler.end_iteration(num_samples=B, num_tokens=T)
        profiler.export_to_json("profiling_results.json")

    Layout (schema tach.comprehensive_profile/1): timestamp, device, memory {peak_allocated_gb,
    mean_allocated_gb, baseline_gb, growth_gb, peak_rss_gb, source}, timing.iteration {count,
    mean_sec, ...}, throughput {samples_per_sec, tokens_per_sec, ...}, and overhead: the profiler's
    own time per iteration, measured. device left out: the GPU where one is usable, else the CPU
    (`device` and `device_note` say which); a CUDA device that cannot be used is refused here.
    """

    def __init__(self, device=None, window_size=100):
        d, self.device, self.device_note = _resolve_device(device)
        self._p = _tach._ComprehensiveProfiler(d, window_size)

    def start_iteration(self):
        self._p.start_iteration()

    def end_iteration(self, num_samples, num_tokens=0):
        self._p.end_iteration(int(num_samples), int(num_tokens))

    def set_baseline(self):
        self._p.set_baseline()

    def get_summary(self):
        return json.loads(self._p.to_json())

    def export_to_json(self, path):
        self._p.export_to_json(os.fspath(path))


class MetricTracker:
    """Named series: update("loss", 0.5, step=10); get_mean, get_std, get_summary, windows.

    streaming=True keeps O(1) memory per metric (quantiles from a sketch, 1% relative error);
    the default keeps every value (history and windows)."""

    def __init__(self, streaming=False):
        self._t = _tach._MetricTracker(streaming)

    def update(self, name, value, step=None):
        self._t.update(name, float(value), -1 if step is None else int(step))

    def update_batch(self, values, step=None):
        self._t.update_batch({k: float(v) for k, v in values.items()}, -1 if step is None else int(step))

    def get_mean(self, name):
        return self._t.stats(name)["mean"]

    def get_std(self, name):
        return self._t.stats(name)["std"]

    def get_summary(self, name=None):
        """{count, mean, std, min, max, p50, p95, p99} of one metric, or {name: that} of all."""
        if name is None:
            return {n: self._t.stats(n) for n in self._t.names()}
        return self._t.stats(name)

    def get_window_stats(self, name, window):
        return self._t.window_stats(name, int(window))

    def get_history(self, name):
        return [v for _, v in self._t.history(name)]

    def get_rejected(self, name):
        """How many NaN or infinite values were refused for this metric."""
        return self._t.rejected(name)

    def names(self):
        return self._t.names()


class GRPOMetricsTracker:
    """GRPO's per-step series and its group-wise reward analysis."""

    def __init__(self):
        self._g = _tach._GrpoTracker()
        self._rewards = _tach._MetricTracker(False)
        self._step = 0

    def update_grpo_step(self, step, policy_loss, mean_reward, reward_components=None, kl_divergence=0.0):
        self._step = int(step)
        self._g.log_step(int(step), float(policy_loss), float(mean_reward), float(kl_divergence),
                         {k: float(v) for k, v in (reward_components or {}).items()})

    def update_group_rewards(self, rewards, step=None):
        rewards = [float(r) for r in rewards]
        self._g.log_group(self._step if step is None else int(step), rewards)
        for r in rewards:
            self._rewards.update("reward", r)

    def get_reward_distribution(self):
        """reward_mean and reward_std over every group reward; per group: the mean within-group std,
        the fraction of groups with zero variance (no GRPO signal), best minus worst; and the mean
        reward by rank (0 = each group's best) as rank_distribution."""
        g = self._g.group_stats()
        s = self._rewards.stats("reward")
        return {"reward_mean": s["mean"], "reward_std": s["std"], "groups": g["groups"],
                "mean_group_std": g["mean_group_std"], "zero_variance_fraction": g["zero_variance_fraction"],
                "mean_best_minus_worst": g["mean_best_minus_worst"],
                "rank_distribution": {str(i): v for i, v in enumerate(g["mean_reward_by_rank"])}}

    def get_summary(self):
        """Every step series (policy_loss, mean_reward, kl, reward/NAME) with its statistics."""
        return {n: self._g.step_stats(n) for n in self._g.step_names()}


class ScoreDistributionTracker:
    """Verifier scores: None or NaN counts as invalid; the rest are counted per distinct value."""

    def __init__(self):
        self._s = _tach._ScoreDistributionTracker()

    def update(self, scores):
        if scores is None or isinstance(scores, (int, float)):
            scores = [scores]
        for x in scores:
            self._s.update(None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x))

    def get_distribution(self):
        s = self._s.summary()
        return {"total": s["total"], "valid_count": s["valid"], "invalid_count": s["invalid"],
                "invalid_rate": s["invalid_rate"], "score_counts": {str(k): v for k, v in sorted(s["counts"].items())},
                "mean_score": s["mean"]}


class TrainingLogger:
    """Step metrics and scores to LOG_DIR/EXPERIMENT_steps.jsonl (one line per step, flushed), with
    checkpoint summaries; export_all() writes LOG_DIR/EXPERIMENT_metrics.json:
    {experiment_name, metric_summaries, score_distribution, raw_metrics, checkpoints}."""

    def __init__(self, log_dir, experiment_name="experiment"):
        self.log_dir = os.fspath(log_dir)
        self.experiment_name = experiment_name
        os.makedirs(self.log_dir, exist_ok=True)
        self.steps_path = os.path.join(self.log_dir, f"{experiment_name}_steps.jsonl")
        self._log = _tach._TrainingLogger(self.steps_path, False)

    def log_step(self, step, metrics, scores=None):
        converted = None if scores is None else [
            None if s is None or (isinstance(s, float) and math.isnan(s)) else float(s) for s in scores]
        self._log.log_step(int(step), {k: float(v) for k, v in metrics.items()}, converted or [])

    def save_checkpoint_metrics(self, name):
        self._log.save_checkpoint_metrics(name)

    def summary(self):
        j = json.loads(self._log.export_all())
        raw = {}
        for line in j["steps"]:
            for k, v in line["metrics"].items():
                raw.setdefault(k, []).append(v)
        sc = j["scores"]
        return {"experiment_name": self.experiment_name, "metric_summaries": j["metrics"],
                "score_distribution": {"total": sc["total"], "valid_count": sc["valid"],
                                       "invalid_count": sc["invalid"], "invalid_rate": sc["invalid_rate"],
                                       "score_counts": sc["counts"], "mean_score": sc["mean"]},
                "raw_metrics": raw, "checkpoints": j["checkpoints"]}

    def export_all(self, path=None):
        path = os.fspath(path) if path else os.path.join(self.log_dir, f"{self.experiment_name}_metrics.json")
        data = self.summary()
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, path)
        return path
