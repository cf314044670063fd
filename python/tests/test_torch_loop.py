"""The trackers inside a PyTorch training loop that never touches tach's allocator: a small
transformer encoder classifier, AdamW, 30 steps on the CPU. Checks the exported JSON and that the
trackers cost under 1% of the step, both measured here."""
import json
import statistics
import time

import pytest

torch = pytest.importorskip("torch")
import tach  # noqa: E402


def test_training_loop_with_trackers(tmp_path):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vocab, d, seq, batch = 1000, 256, 64, 16
    model = torch.nn.Sequential()
    embed = torch.nn.Embedding(vocab, d)
    encoder = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True), 2)
    head = torch.nn.Linear(d, 2)
    params = list(embed.parameters()) + list(encoder.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3)

    profiler = tach.ComprehensiveProfiler(device="cpu")
    logger = tach.TrainingLogger(tmp_path, "torch_loop")
    timer = tach.TrainingTimer(device="cpu")
    memory = tach.GPUMemoryProfiler(device="cpu")
    memory.set_baseline()
    step_s, tracker_s = [], []
    for step in range(30):
        ids = torch.randint(0, vocab, (batch, seq))
        labels = torch.randint(0, 2, (batch,))
        t0 = time.perf_counter()
        profiler.start_iteration()
        timer.start("forward")
        t1 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(head(encoder(embed(ids)).mean(1)), labels)
        t2 = time.perf_counter()
        timer.stop("forward")
        timer.start("backward")
        t3 = time.perf_counter()
        opt.zero_grad()
        loss.backward()
        opt.step()
        t4 = time.perf_counter()
        timer.stop("backward")
        profiler.end_iteration(num_samples=batch, num_tokens=batch * seq)
        logger.log_step(step, {"loss": loss.item(), "lr": 1e-3}, scores=[1.0, None])
        t5 = time.perf_counter()
        step_s.append(t5 - t0)
        tracker_s.append((t1 - t0) + (t3 - t2) + (t5 - t4))
    logger.save_checkpoint_metrics("end")
    profiler.export_to_json(tmp_path / "profiling_results.json")
    logs = json.load(open(logger.export_all()))
    prof = json.load(open(tmp_path / "profiling_results.json"))

    assert prof["timing"]["iteration"]["count"] == 30
    assert prof["throughput"]["samples_per_sec"] > 0
    assert prof["throughput"]["tokens_per_sec"] == pytest.approx(seq * prof["throughput"]["samples_per_sec"])
    assert prof["memory"]["peak_allocated_gb"] > prof["memory"]["baseline_gb"] * 0.5
    assert len(logs["raw_metrics"]["loss"]) == 30 and logs["score_distribution"]["invalid_count"] == 30
    assert set(timer.get_summary()) == {"forward", "backward"}
    assert memory.measure("end")["rss_gb"] > 0

    share = statistics.median(tracker_s) / statistics.median(step_s)
    print(f"step median {statistics.median(step_s) * 1e3:.1f} ms, trackers {statistics.median(tracker_s) * 1e6:.0f} µs "
          f"per step ({share * 100:.3f}% of the step)")
    assert share < 0.01
