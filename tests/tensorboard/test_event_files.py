"""TensorBoard's reader (EventAccumulator, which checks every record's CRCs) finds every value tach
logged: each step of a training run as steps.jsonl holds it, each bench point's figures as
results.jsonl holds them, and a training sweep's every measured step."""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

TACH = os.environ["TACH"]
FIX = Path(os.environ["TACH_FIXTURES"])


def run(*args):
    subprocess.run([TACH, *args, "--no-progress"], check=True, stdout=subprocess.DEVNULL)


def load(run_dir):
    ea = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    return ea


def scalars(ea, tag):
    return {e.step: e.value for e in ea.Scalars(tag)}


def f32(x):
    return float(np.float32(x))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


def test_train_steps_evaluations_and_config(runs):
    run("train", "-m", str(FIX / "encoders/bert-cls2-f32"), "-k", str(FIX / "tokenizers/tiny-wordpiece"),
        "-d", str(FIX / "train/tiny.csv"), "--eval-dataset", str(FIX / "train/tiny.csv"), "--epochs", "2", "-b", "4",
        "--eval-every", "5",
        "--runs-dir", str(runs), "--run-id", "train")
    ea = load(runs / "train")
    lines = [json.loads(l) for l in (runs / "train/steps.jsonl").read_text().splitlines()]
    checked = 0
    for line in lines:
        for key, value in line["metrics"].items():
            if value is None:
                continue
            tag = ("eval/" + key[5:] if key.startswith("eval_") else
                   "memory/" + key if key.startswith("memory_") else "train/" + key)
            assert scalars(ea, tag)[line["step"]] == f32(value), (tag, line["step"])
            checked += 1
    assert checked > 20 * len(lines) // 2
    assert {"train/loss", "train/lr", "train/grad_norm", "train/tokens_per_s", "train/samples_per_s",
            "train/forward_ms", "eval/loss", "memory/memory_weights_bytes"} <= set(ea.Tags()["scalars"])
    config = ea.Tensors("config")[0].tensor_proto.string_val[0].decode()
    assert json.loads(config) == json.loads((runs / "train/config.json").read_text())


def test_bench_points(runs):
    run("bench", "-m", "preset:bert-tiny", "-b", "1,2", "-s", "8,16", "--runs", "3",
        "--runs-dir", str(runs), "--run-id", "bench")
    ea = load(runs / "bench")
    points = [json.loads(l) for l in (runs / "bench/results.jsonl").read_text().splitlines()]
    assert len(points) == 4
    for p in points:
        series = f"cpu/f32/t0/s{p['seq_len']}"
        lat = p["batch_latency_ms"]
        for metric, value in [("batch_latency_ms_p50", lat["median"]), ("batch_latency_ms_p95", lat["p95"]),
                              ("batch_latency_ms_p99", lat["p99"]), ("samples_per_s", p["throughput"]["samples_per_s"]),
                              ("tokens_per_s", p["throughput"]["tokens_per_s"])]:
            assert scalars(ea, f"{metric}/{series}")[p["batch_size"]] == f32(value), (metric, series)


def test_bench_train_every_step(runs):
    run("bench", "--train", "-m", "preset:bert-tiny", "-b", "2", "-s", "8", "--runs", "4", "--warmup", "0",
        "--runs-dir", str(runs), "--run-id", "bench-train")
    ea = load(runs / "bench-train")
    point = json.loads((runs / "bench-train/results.jsonl").read_text().splitlines()[0])
    steps = scalars(ea, "step_ms/cpu/f32/t0/b2/s8/full/eager/gc-off")
    assert [steps[i] for i in range(4)] == [f32(x) for x in point["batch_latency_samples_ms"]]
    loss = scalars(ea, "step_loss/cpu/f32/t0/b2/s8/full/eager/gc-off")
    assert loss[0] == f32(point["train"]["loss_first"]) and loss[3] == f32(point["train"]["loss_last"])
    assert scalars(ea, "backward_ms_p50/cpu/f32/t0/s8/full/eager/gc-off")[2] == f32(point["train"]["backward_ms"]["median"])


def test_no_tensorboard_flag(runs):
    run("bench", "-m", "preset:bert-tiny", "-b", "1", "-s", "8", "--runs", "2", "--no-tensorboard",
        "--runs-dir", str(runs), "--run-id", "off")
    assert not (runs / "off/tensorboard").exists()


def test_resumed_run_replaces_the_steps_it_redoes(runs):
    args = ["train", "-m", str(FIX / "encoders/bert-cls2-f32"), "-k", str(FIX / "tokenizers/tiny-wordpiece"),
            "-d", str(FIX / "train/tiny.csv"), "--epochs", "2", "-b", "4", "--save-every", "10",
            "--runs-dir", str(runs), "--run-id", "resumed"]
    run(*args)
    run_dir = runs / "resumed"
    last = max(run_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    import shutil
    shutil.rmtree(last)  # as if killed before the last checkpoint: the resume redoes the steps after 20
    run("train", "--resume", str(run_dir))
    assert len(list((run_dir / "tensorboard").glob("*tfevents*"))) == 2
    ea = load(run_dir)
    logged = {json.loads(l)["step"]: json.loads(l)["metrics"]["step_ms"]
              for l in (run_dir / "steps.jsonl").read_text().splitlines()}
    events = ea.Scalars("train/step_ms")
    assert sorted(e.step for e in events) == sorted(logged)  # each step once: the redone ones replaced
    assert all(e.value == f32(logged[e.step]) for e in events)
