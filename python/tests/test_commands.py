"""The commands as functions: the CLI's options as keyword arguments, the same run directories,
records back as dicts, errors as exceptions with the CLI's messages, Ctrl-C stopping cleanly."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import tach
from conftest import FIXTURES, REPO, run_cli

TINY = dict(model="preset:bert-tiny", seq_lens=8, runs=3, warmup=1, no_progress=True, tensorboard=False)


def test_bench_writes_the_cli_run_directory(tmp_path):
    run = tach.bench(batch_sizes=[1, 2], runs_dir=tmp_path, run_id="py", **TINY)
    assert run.kind == "sweep" and run.dir == str(tmp_path / "py")
    assert [r["batch_size"] for r in run.records] == [1, 2]
    assert all(r["status"] == "ok" for r in run.records)
    run_cli("bench", "--model", "preset:bert-tiny", "-s", "8", "--runs", "3", "--warmup", "1", "--no-progress",
            "--no-tensorboard", "-b", "1,2", "--runs-dir", tmp_path, "--run-id", "cli")
    cli = tach.Run(tmp_path / "cli")
    assert sorted(os.listdir(run.dir)) == sorted(os.listdir(cli.dir))
    assert [sorted(r) for r in run.records] == [sorted(r) for r in cli.records]
    py_config, cli_config = dict(run.config), dict(cli.config)
    for c in (py_config, cli_config):
        c.pop("run_id", None), c.pop("created", None), c.pop("started_at", None)
    assert py_config == cli_config
    assert "run.log" in os.listdir(run.dir)


def test_to_pandas(tmp_path):
    pandas = pytest.importorskip("pandas")
    run = tach.bench(batch_sizes=[1, 2], runs_dir=tmp_path, **TINY)
    df = run.to_pandas()
    assert isinstance(df, pandas.DataFrame) and list(df["batch_size"]) == [1, 2]


def test_unknown_option_and_bad_value(tmp_path):
    with pytest.raises(tach.UsageError, match="no option 'batchsize'.*did you mean batch\\?.*batch_sizes"):
        tach.bench(batchsize=[1], runs_dir=tmp_path)
    with pytest.raises(tach.UsageError):
        tach.bench(model="preset:bert-tiny", batch_sizes="one", runs_dir=tmp_path)
    with pytest.raises(tach.UsageError, match="batch size 0: batch sizes must be positive"):
        tach.bench(model="preset:bert-tiny", batch_sizes=[0, 4], runs_dir=tmp_path)
    with pytest.raises(tach.UsageError, match="tpu"):
        tach.bench(model="preset:bert-tiny", device="tpu", runs_dir=tmp_path)
    assert not os.listdir(tmp_path)  # a usage error makes no run directory
    with pytest.raises(tach.UsageError, match="switch"):
        tach.bench(no_progress="yes", runs_dir=tmp_path)


def test_the_batch_option_has_one_name_and_its_aliases(tmp_path):
    runs = [tach.bench(runs_dir=tmp_path, run_id=key, **{key: [1, 2]}, **TINY)
            for key in ("batch", "batch_size", "batch_sizes")]
    assert all([r["batch_size"] for r in run.records] == [1, 2] for run in runs)


def test_commands_are_quiet_off_a_terminal(tmp_path, capfd):
    run = tach.bench(batch_sizes=[1], runs_dir=tmp_path, run_id="quiet", **TINY)
    out, _ = capfd.readouterr()
    assert out == ""  # the process's stdout: no table, findings, next steps or "written:"
    log = open(os.path.join(run.dir, "run.log")).read()
    assert "Findings" in log and "written:" in log  # kept where a reader looks for them


def test_a_model_that_cannot_run_raises_before_a_run(tmp_path):
    options = dict(TINY, model=str(tmp_path / "does-not-exist"))
    with pytest.raises(tach.Error, match="does-not-exist.*not found"):
        tach.bench(batch_sizes=[1, 2], runs_dir=tmp_path / "runs", **options)
    with pytest.raises(tach.Error, match="every sequence length .* is past preset:bert-tiny's 512 positions"):
        tach.bench(batch_sizes=[1], runs_dir=tmp_path / "runs", **dict(TINY, seq_lens=[600, 1000]))
    assert not (tmp_path / "runs").exists()  # refused before a run directory was made


def test_a_sweep_where_no_point_ran_raises(tmp_path):
    # Past the look at config.json (its weights cut in half), every point fails: the results are
    # kept, and Python raises.
    model = tmp_path / "cut"
    shutil.copytree(os.path.join(FIXTURES, "encoders", "roberta-cls2-f32"), model)
    whole = (model / "model.safetensors").read_bytes()
    (model / "model.safetensors").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(tach.Error, match="no point of the sweep ran: 2 failed; the first, .*model.safetensors"):
        tach.bench(batch_sizes=[1, 2], runs_dir=tmp_path, run_id="none", **dict(TINY, model=str(model), seq_lens=16))
    records = [json.loads(line) for line in open(tmp_path / "none" / "results.jsonl")]
    assert [r["status"] for r in records] == ["failed", "failed"]  # the results are kept


def test_lengths_past_the_positions_are_refused_before_anything_runs(tmp_path):
    # This RoBERTa has 32 positions, 2 of them padding's: length 31 cannot run at any batch.
    model = os.path.join(FIXTURES, "encoders", "roberta-cls2-f32")
    with pytest.raises(tach.UsageError, match="past .*positions"):
        tach.bench(batch_sizes=[1, 2], runs_dir=tmp_path, run_id="none", **dict(TINY, model=model, seq_lens=31))
    assert not (tmp_path / "none").exists()


def test_errors_are_the_cli_messages(tmp_path):
    missing = str(tmp_path / "absent.csv")
    with pytest.raises(tach.Error) as e:
        tach.bench(model="preset:bert-tiny", input="dataset", dataset=missing, runs_dir=tmp_path, no_progress=True)
    assert "absent.csv: not found" in str(e.value)
    cli = run_cli("bench", "--model", "preset:bert-tiny", "--input", "dataset", "--dataset", missing, "--runs-dir",
                  tmp_path, "--no-progress", check=False)
    assert cli.returncode == 1 and "tach: error: " + str(e.value) in cli.stderr


def test_estimate_and_compare_and_report(tmp_path):
    est = tach.estimate(model="preset:bert-tiny")
    assert isinstance(est, dict) and est  # the --json document
    a = tach.bench(batch_sizes=[1], runs_dir=tmp_path, run_id="a", **TINY)
    b = tach.bench(batch_sizes=[1], runs_dir=tmp_path, run_id="b", **TINY)
    cmp = tach.compare(a.dir, b.dir, html=str(tmp_path / "compare.html"))
    assert (tmp_path / "compare.html").exists()
    assert cmp["schema"] == "tach.compare/1" and cmp["regressed_beyond_limit"] is False
    html = tach.report(a.dir)
    assert os.path.exists(html) and html.endswith("report.html")


def test_train_returns_its_steps(tmp_path):
    run = tach.train(model=os.path.join(FIXTURES, "encoders", "bert-cls2-f32"),
                     tokenizer=os.path.join(FIXTURES, "tokenizers", "tiny-wordpiece"),
                     dataset=os.path.join(FIXTURES, "train", "tiny.csv"), max_steps=3, batch_size=4,
                     runs_dir=tmp_path, no_progress=True)
    assert run.kind == "training" and len(run.records) == 3
    assert all("loss" in r.get("metrics", r) for r in run.records) and run.summary is not None


def test_help_is_the_cli_help():
    assert tach.bench.__doc__.endswith(run_cli("bench", "--help").stdout)
    stubs = open(os.path.join(os.path.dirname(tach.__file__), "__init__.pyi")).read()
    assert "batch_sizes" in stubs
    import ast
    ast.parse(stubs)  # valid Python


def test_the_gil_is_released(tmp_path):
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    before = len(ticks)
    tach.bench(batch_sizes=[1, 2, 4], runs_dir=tmp_path, **TINY)
    during = len(ticks) - before
    stop.set()
    t.join()
    assert during > 10  # the other thread ran while the sweep did


CTRL_C = textwrap.dedent("""
    import sys, tach
    try:
        tach.bench(model="preset:bert-tiny", batch_sizes=list(range(1, 41)), seq_lens=16, runs=20, warmup=1,
                   no_progress=True, tensorboard=False, runs_dir=sys.argv[1], run_id="stopped")
    except KeyboardInterrupt as e:
        print("STOPPED:", e)
        sys.exit(0)
    print("FINISHED")
""")


def test_ctrl_c_stops_a_sweep_cleanly_and_it_resumes(tmp_path):
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-c", CTRL_C, str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    results = tmp_path / "stopped" / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (results.exists() and results.read_text().count("\n") >= 2):
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert "STOPPED:" in out and "--resume" in out, (out, err)
    done = results.read_text().count("\n")
    assert 2 <= done < 40
    run = tach.bench(resume=str(tmp_path / "stopped"), no_progress=True)
    assert len(run.records) == 40 and all(r["status"] == "ok" for r in run.records)


PROGRESS = textwrap.dedent("""
    import sys, tach
    tach.bench(model="preset:bert-tiny", batch_sizes=[1, 2, 4], seq_lens=8, runs=3, warmup=1, tensorboard=False,
               runs_dir=sys.argv[1])
    fixtures = sys.argv[2]
    tach.train(model=fixtures + "/encoders/bert-cls2-f32", tokenizer=fixtures + "/tokenizers/tiny-wordpiece",
               dataset=fixtures + "/train/tiny.csv", max_steps=3, batch_size=4, runs_dir=sys.argv[1],
               tensorboard=False)
""")


def _stderr_of_progress_script(tmp_path, terminal):
    """The script's stderr, with stderr a pseudo-terminal or a pipe (stdout is a pipe either way)."""
    import pty
    args = [sys.executable, "-c", PROGRESS, str(tmp_path), FIXTURES]
    if not terminal:
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stderr
    leader, follower = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert p.wait(timeout=300) == 0, b"".join(chunks)
    return b"".join(chunks).decode()


def test_progress_draws_on_a_terminal(tmp_path):
    err = _stderr_of_progress_script(tmp_path, terminal=True)
    assert "] 2/3 " in err  # the sweep's bar, redrawn in place
    assert "step " in err and "] step" in err  # the training bar
    logs = [os.path.join(root, "run.log") for root, _, files in os.walk(tmp_path) if "run.log" in files]
    assert len(logs) == 2
    for log in logs:  # the log keeps what the terminal showed at the end, not the redraws
        text = open(log).read()
        assert "\r" not in text and "\x1b" not in text, text


def test_progress_is_quiet_elsewhere(tmp_path):
    err = _stderr_of_progress_script(tmp_path, terminal=False)
    assert "\r" not in err and "\x1b[" not in err, err
    assert "point 1/3" not in err and "step 1/" not in err, err


def test_fill_mask_gives_the_pipelines_predictions():
    expected = json.load(open(os.path.join(FIXTURES, "fill_mask", "expected.json")))
    case = next(c for c in expected["cases"] if c["model"] == "bert-mlm-f32")
    want = case["texts"][0]
    got = tach.fill_mask(model=os.path.join(FIXTURES, "heads", "bert-mlm-f32"),
                         tokenizer=os.path.join(FIXTURES, "fill_mask", case["tokenizer"]), text=[want["text"]],
                         top_k=want["top_k"])
    assert got["schema"] == "tach.fill_mask/1"
    predictions = got["results"][0]["masks"][0]["predictions"]
    assert [p["token"] for p in predictions] == [p["token"] for p in want["masks"][0]]
    assert [p["sequence"] for p in predictions] == [p["sequence"] for p in want["masks"][0]]
    assert all(abs(p["score"] - w["score"]) < 1e-4 for p, w in zip(predictions, want["masks"][0]))
    with pytest.raises(tach.UsageError, match="has no mask token"):
        tach.fill_mask(model=os.path.join(FIXTURES, "heads", "bert-mlm-f32"),
                       tokenizer=os.path.join(FIXTURES, "fill_mask", case["tokenizer"]), text="no mask here")


def test_prune_and_shrink_are_functions_too(tmp_path):
    bert = os.path.join(FIXTURES, "encoders", "bert-cls2-f32")
    summary = tach.prune(model=bert, output=str(tmp_path / "half"), heads="0.5")
    assert summary["dir"] == str(tmp_path / "half")
    assert summary["after"]["parameters"] < summary["before"]["parameters"]
    assert os.path.exists(tmp_path / "half" / "model.safetensors")
    with pytest.raises(tach.UsageError, match="output=DIR"):
        tach.prune(model=bert, heads="0.5")
    run = tach.shrink(model=bert, tokenizer=os.path.join(FIXTURES, "tokenizers", "tiny-wordpiece"),
                      dataset=os.path.join(FIXTURES, "bench", "six_rows.csv"), text_column="sentence", device="cpu",
                      threads=1, batch_sizes=[1], seq_lens=8, runs=3, warmup=1, no_progress=True, dtype="f32",
                      prune="heads:0.5", runs_dir=str(tmp_path / "runs"), run_id="s")
    assert run.dir == str(tmp_path / "runs" / "s")
    assert sorted({r["variant"] for r in run.records}) == ["f32", "heads:0.5"]
    assert all(0 <= r["accuracy"]["accuracy"] <= 1 for r in run.records)
