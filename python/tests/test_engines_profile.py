"""The workers' "profile" request (tach profile --engine): refused where it cannot run (before a
model, an engine without torch.profiler, a malformed schedule or directory), each naming what is
wrong; with torch, one trace per profiler cycle written where asked, with ProfilerStep#N in it."""
import json
import os
import sys

import pytest

from test_engines_protocol import ENCODER, PLAIN, Worker, load_request

IDS = [[5, 6, 7, 8], [9, 10, 11, 12]]


def test_python_matmul_has_no_profiler_and_says_which_engines_do(tmp_path):
    w = Worker("python-matmul", sys.executable, PLAIN)
    try:
        before = w.ask("profile", schedule={"active": 1}, output_dir=str(tmp_path))
        assert before["ok"] is False and before["kind"] == "bad_request" and "send load first" in before["error"]
        assert w.ask("load", **load_request())["ok"]
        assert w.ask("inputs", input_ids=IDS)["ok"]
        r = w.ask("profile", schedule={"active": 1}, output_dir=str(tmp_path))
        assert r["ok"] is False and r["kind"] == "unsupported", r
        assert "python-matmul has no torch.profiler" in r["error"] and "torch-compile" in r["error"]
        assert w.ask("ping") == {"ok": True}  # it serves on
        assert os.listdir(tmp_path) == []
    finally:
        w.close()


@pytest.fixture(scope="module")
def torch_worker():
    pytest.importorskip("torch", reason="the torch engine's profile needs torch (the development virtualenv)")
    pytest.importorskip("transformers", reason="the torch engine needs transformers")
    w = Worker("torch", sys.executable)
    assert w.first["event"] == "ready", w.first
    assert w.ask("load", **load_request())["ok"]
    assert w.ask("inputs", input_ids=IDS)["ok"]
    yield w
    w.close()


@pytest.mark.parametrize("schedule, field", [({"active": 0}, "schedule.active"), ({"wait": -1}, "schedule.wait"),
                                             ({"repeat": "2"}, "schedule.repeat"), (None, "schedule")])
def test_a_malformed_schedule_is_named(torch_worker, tmp_path, schedule, field):
    r = torch_worker.ask("profile", schedule=schedule, output_dir=str(tmp_path))
    assert r["ok"] is False and r["kind"] == "bad_request" and field in r["error"], r


def test_a_missing_directory_is_named(torch_worker, tmp_path):
    r = torch_worker.ask("profile", schedule={"active": 1}, output_dir=str(tmp_path / "absent"))
    assert r["ok"] is False and r["kind"] == "bad_request" and "absent is not a directory" in r["error"], r


def test_each_cycle_writes_a_trace_with_its_steps(torch_worker, tmp_path):
    r = torch_worker.ask("profile", schedule={"skip_first": 1, "wait": 1, "warmup": 1, "active": 2, "repeat": 2},
                         output_dir=str(tmp_path))
    assert r["ok"], r
    assert r["steps"] == 1 + 2 * 4 and len(r["step_s"]) == r["steps"]
    assert r["traces"] == [str(tmp_path / "torch.1.pt.trace.json"), str(tmp_path / "torch.2.pt.trace.json")]
    for path in r["traces"]:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        steps = {e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")}
        assert len(steps) == 2, steps  # the active steps of its cycle
        assert any(e.get("args", {}).get("Input Dims") for e in events)  # record_shapes
