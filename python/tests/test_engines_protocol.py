"""tach.engines workers driven as tach drives them (`PYTHON -m tach.engines --engine NAME`, the
package on PYTHONPATH, one JSON request per line, one reply line each), with the standard-library
engine python-matmul in python3 -S: no numpy, no torch, no tach extension. The Worker class is also
what test_engines_torch.py drives the PyTorch and ONNX Runtime workers with."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_PACKAGE_PARENT = os.path.join(os.path.dirname(HERE))  # python/: the package without _tach


def package_parent():
    """The directory holding tach/engines: the built package (ctest's PYTHONPATH) or the sources."""
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry and os.path.isfile(os.path.join(entry, "tach", "engines", "__main__.py")):
            return os.path.abspath(entry)
    return SOURCE_PACKAGE_PARENT


class Worker:
    def __init__(self, engine, python, flags=(), parent=None, env=None):
        full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        full_env.update(env or {})
        full_env["PYTHONPATH"] = parent or package_parent()
        self.log = tempfile.TemporaryFile("w+")  # a file, not a pipe: a chatty library never blocks the worker
        self.proc = subprocess.Popen([python, *flags, "-m", "tach.engines", "--engine", engine],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=full_env)
        self.first = self._line()

    def _line(self):
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the worker wrote no line; stderr:\n{self.stderr()[-3000:]}")
        return json.loads(line)

    def stderr(self):
        self.log.seek(0)
        return self.log.read()

    def ask(self, op, **fields):
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        return self._line()

    def send_raw(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        return self._line()

    def quit(self):
        reply = self.ask("quit")
        rest = self.proc.stdout.read()
        code = self.proc.wait(timeout=60)
        return reply, rest, code

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.log):
            f.close()


# --- python-matmul in python3 -S (no site-packages: no numpy, whatever the interpreter has) --------
REPO = os.path.dirname(os.path.dirname(HERE))
ENCODER = os.path.join(REPO, "tests", "fixtures", "encoders", "distilbert-cls2-f32")  # dim 16, vocab 120, 2 labels
PLAIN = ("-S",)


@pytest.fixture
def matmul_worker():
    w = Worker("python-matmul", sys.executable, PLAIN)
    yield w
    w.close()


def load_request(**over):
    req = {"model": ENCODER, "task": "sequence-classification", "dtype": "f32", "device": "cpu", "threads": 1,
           "cache_dir": tempfile.gettempdir(), "train": None}
    req.update(over)
    return req


def test_ready_then_every_request_answered_in_order(matmul_worker):
    w = matmul_worker
    assert w.first["event"] == "ready" and w.first["protocol"] == 1 and w.first["engine"] == "python-matmul"
    assert w.first["devices"] == ["cpu"] and w.first["versions"]["python"].count(".") == 2
    assert w.ask("ping") == {"ok": True}
    load = w.ask("load", **load_request())
    assert load["ok"] and load["parameters"] == 16 * 16 + 16 * 2 + 120 * 16 and load["trainable_parameters"] == 0
    assert load["setup"] == {"kind": "none", "seconds": 0.0, "cached": False, "cache_age_s": None}
    assert load["load_s"] >= 0
    # Rows 0 and 2 share their first token: logits come from the first token, so theirs are equal.
    ids = [[5, 6, 7, 8], [9, 10, 11, 12], [5, 13, 14, 15]]
    assert w.ask("inputs", input_ids=ids, attention_mask=[[1] * 4] * 3) == {"ok": True, "batch": 3, "length": 4}
    first = w.ask("prepare")
    assert first["ok"] and first["first_call_s"] > 0
    out = w.ask("outputs")["outputs"]["logits"]
    assert out["shape"] == [3, 2] and len(out["data"]) == 6
    assert out["data"][0:2] == out["data"][4:6] and out["data"][0:2] != out["data"][2:4]
    timed = w.ask("time", calls=5)
    assert timed["ok"] and len(timed["ns"]) == 5 and all(isinstance(n, int) and n > 0 for n in timed["ns"])
    assert "phases_ns" not in timed
    mem = w.ask("memory", reset=True)
    assert mem["ok"] and 0 < mem["rss_bytes"] <= mem["peak_rss_bytes"]
    assert mem["device_allocated_peak_bytes"] is None and mem["device_reserved_peak_bytes"] is None
    reply, rest, code = w.quit()
    assert reply == {"ok": True} and rest == "" and code == 0


def test_the_same_seed_gives_the_same_outputs_in_another_worker(matmul_worker):
    ids = [[3, 4, 5], [6, 7, 8]]
    runs = []
    for w in (matmul_worker, Worker("python-matmul", sys.executable, PLAIN)):
        w.ask("load", **load_request())
        w.ask("inputs", input_ids=ids)
        runs.append(w.ask("outputs")["outputs"])
    assert runs[0] == runs[1]


def test_training_reports_phases_and_a_falling_loss(matmul_worker):
    w = matmul_worker
    load = w.ask("load", **load_request(train={"method": "full", "lr": 0.5, "seed": 3, "num_labels": 3}))
    assert load["ok"] and load["trainable_parameters"] == load["parameters"] == 16 * 16 + 16 * 3 + 120 * 16
    assert w.ask("inputs", input_ids=[[1, 2], [3, 4]])["kind"] == "bad_request"  # training needs labels
    assert w.ask("inputs", input_ids=[[1, 2], [3, 4]], labels=[0, 2])["ok"]
    assert w.ask("outputs")["kind"] == "unsupported"
    t = w.ask("time", calls=6)
    assert len(t["ns"]) == len(t["loss"]) == 6
    for phase in ("forward", "backward", "optimizer"):
        assert len(t["phases_ns"][phase]) == 6 and all(n > 0 for n in t["phases_ns"][phase])
    for i in range(6):
        assert sum(t["phases_ns"][p][i] for p in ("forward", "backward", "optimizer")) <= t["ns"][i]
    assert t["loss"][-1] < t["loss"][0]


def test_a_diverged_loss_is_null_and_the_reply_stays_json(matmul_worker):
    w = matmul_worker
    assert w.ask("load", **load_request(train={"method": "full", "lr": 1e308}))["ok"]
    assert w.ask("inputs", input_ids=[[1, 2], [3, 4]], labels=[0, 1])["ok"]
    t = w.ask("time", calls=3)  # the first step's update overflows the classifier: the losses after are NaN
    assert t["ok"] and None in t["loss"] and len(t["ns"]) == 3
    assert w.ask("ping") == {"ok": True}


def test_errors_name_their_kind_and_the_worker_serves_on(matmul_worker):
    w = matmul_worker
    assert w.ask("time", calls=1)["kind"] == "bad_request"     # no model yet
    assert w.ask("inputs", input_ids=[[1]])["kind"] == "bad_request"
    bad = w.send_raw("{not json")
    assert bad["ok"] is False and bad["kind"] == "bad_request" and "not JSON" in bad["error"]
    assert "unknown op 'fly'" in w.ask("fly")["error"]
    assert "dtype" in w.ask("load", **load_request(dtype="f8"))["error"]
    assert "config.json" in w.ask("load", **load_request(model="/nonexistent"))["error"]
    refused = w.ask("load", **load_request(device="cuda:0"))
    assert refused["kind"] == "unsupported" and "CPU" in refused["error"]
    assert w.ask("load", **load_request(task="masked-lm"))["kind"] == "unsupported"
    assert w.ask("load", **load_request())["ok"]
    assert w.ask("load", **load_request())["kind"] == "bad_request"  # one model per worker
    assert "rows differ" in w.ask("inputs", input_ids=[[1, 2], [3]])["error"]
    assert "vocabulary" in w.ask("inputs", input_ids=[[1, 500]])["error"]
    assert "calls" in w.ask("time", calls=0)["error"]
    assert w.ask("ping") == {"ok": True}
    assert w.quit()[2] == 0


def test_end_of_input_ends_the_worker(matmul_worker):
    matmul_worker.proc.stdin.close()
    assert matmul_worker.proc.wait(timeout=60) == 0


def test_an_unknown_engine_is_a_usage_error():
    p = subprocess.run([sys.executable, "-S", "-m", "tach.engines", "--engine", "tensorrt"], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": package_parent()})
    assert p.returncode == 2 and "invalid choice: 'tensorrt'" in p.stderr and p.stdout == ""


@pytest.mark.parametrize("engine,package", [("torch", "torch"), ("onnxruntime", "onnxruntime")])
def test_a_missing_package_is_refused_by_name(engine, package):
    # -S: no site-packages, so neither torch nor onnxruntime, whichever python3 this is.
    w = Worker(engine, sys.executable, PLAIN)
    try:
        assert w.first["event"] == "unavailable" and w.first["engine"] == engine
        assert package in w.first["missing"]
        assert w.first["install"].startswith("python3 -m pip install ") and package in w.first["install"].split()
        assert w.proc.wait(timeout=60) == 3 and w.proc.stdout.read() == ""
    finally:
        w.close()


def test_stdout_carries_replies_only():
    # A library's print, from Python or C (file descriptor 1), lands on stderr once the stream is taken.
    script = ("import os; from tach.engines.__main__ import protocol_stream, send; r = protocol_stream(); "
              "print('from python'); os.write(1, b'from C\\n'); send(r, {'ok': True})")
    p = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": package_parent()})
    assert p.returncode == 0, p.stderr
    assert p.stdout == '{"ok":true}\n' and "from python" in p.stderr and "from C" in p.stderr


def test_the_engines_import_without_numpy_or_the_extension_and_import_tach_is_unchanged():
    env = {**os.environ, "PYTHONPATH": SOURCE_PACKAGE_PARENT}  # the sources: no _tach beside them
    check = ("import sys, tach.engines, tach.engines.__main__, tach.engines.python_matmul; "
             "assert 'numpy' not in sys.modules and 'tach._tach' not in sys.modules; print('ok')")
    p = subprocess.run([sys.executable, "-S", "-c", check], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout == "ok\n", p.stderr
    # Imported for itself, tach still needs numpy at once, and says so, as it always has.
    p = subprocess.run([sys.executable, "-S", "-c", "import tach"], capture_output=True, text=True, env=env)
    assert p.returncode == 1 and "tach's Python module needs numpy" in p.stderr
    # Reached through tach.engines, the rest of tach loads at its first use, with the same message.
    use = "import tach.engines, tach; tach.load_model"
    p = subprocess.run([sys.executable, "-S", "-c", use], capture_output=True, text=True, env=env)
    assert p.returncode == 1 and "tach's Python module needs numpy" in p.stderr
