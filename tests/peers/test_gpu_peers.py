"""scripts/peers/gpu_peers.py on the CPU: bad arguments are usage errors naming them, the ceilings
of `tach info --ceilings` are read as tach prints them, a dry run writes the JSON's header, and
--smoke runs every case tiny, each engine's figures or its failure recorded (max-autotune past its
time limit, tach refusing --allow-tf32 on a CPU)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "peers", "gpu_peers.py")
TACH = os.environ["TACH"]
sys.path.insert(0, os.path.dirname(SCRIPT))
import gpu_peers  # noqa: E402


def run(tmp_path, *extra):
    out = tmp_path / "peers.json"
    res = subprocess.run([sys.executable, SCRIPT, "--tach", TACH, "--root", str(tmp_path / "models"), "--json-out",
                          str(out), *extra], capture_output=True, text=True, timeout=900)
    return res, (json.loads(out.read_text()) if out.exists() else None)


@pytest.mark.parametrize("argv, says", [
    (["--cases", "distilbert,bogus"], "--cases: unknown case 'bogus'"),
    (["--skip", "torch-eager"], "--skip: unknown engine 'torch-eager'"),
    (["--rounds", "0"], "--rounds must be 1 or more"),
    (["--compile-timeout", "0"], "--compile-timeout must be positive"),
])
def test_bad_arguments_are_usage_errors(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        gpu_peers.parse_args(argv)
    assert e.value.code == 2
    assert says in capsys.readouterr().err


def test_arguments_pick_cases_and_engines():
    a = gpu_peers.parse_args(["--cases", "tf32,decode", "--skip", "torch-compile-max-autotune,ort-cuda"])
    assert a.cases == ["tf32", "decode"] and a.skip == ["torch-compile-max-autotune", "ort-cuda"]
    assert gpu_peers.parse_args([]).cases == list(gpu_peers.CASES)
    assert gpu_peers.parse_args(["--only", "decoder"]).cases == ["decode", "llama-prefill", "quantized"]


def test_ceilings_are_read_as_tach_info_prints_them():
    text = ("ceilings   GEMM f32 151.2 GFLOP/s, GEMM bf16 60.5 GFLOP/s, GEMM int8 300.0 GOP/s, memory 18.4 GB/s "
            "(triad), 20.1 GB/s (read only)\n"
            "cuda:0     GEMM f32 51.3 TFLOP/s, tf32 378.0, bf16 702.5, f16 710.1 TFLOP/s, memory 3012 GB/s\n")
    gpu = gpu_peers.parse_ceilings(text, "cuda:0")
    assert gpu["tf32_flops_per_s"] == pytest.approx(378e12) and gpu["bf16_flops_per_s"] == pytest.approx(702.5e12)
    assert gpu["memory_bytes_per_s"] == pytest.approx(3012e9)
    cpu = gpu_peers.parse_ceilings(text, "cpu")
    assert cpu["f32_flops_per_s"] == pytest.approx(151.2e9) and cpu["memory_bytes_per_s"] == pytest.approx(18.4e9)
    assert gpu_peers.parse_ceilings(text, "cuda:1") is None


def test_dry_run_writes_the_plan(tmp_path):
    res, j = run(tmp_path, "--dry-run", "--cases", "tf32,quantized", "--skip", "ort-cuda")
    assert res.returncode == 0, res.stdout + res.stderr
    assert j["schema"] == "tach.gpu_peers/1" and j["dry_run"]
    assert j["settings"]["cases"] == ["tf32", "quantized"] and j["settings"]["skip"] == ["ort-cuda"]
    assert j["settings"]["llama_shape"] == [8, 512] and j["settings"]["modernbert_lengths"] == [1024, 2048, 4096, 8192]
    assert j["tach"]["version"]
    assert not (tmp_path / "models").exists(), "a dry run builds nothing"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    # torch.compile (default) compiles C++ for the CPU for a minute: left out; max-autotune's worker
    # is given half a second, so that its time limit is what the test sees.
    res, j = run(tmp_path_factory.mktemp("smoke"), "--smoke", "--rounds", "1", "--skip", "torch-compile",
                 "--compile-timeout", "0.5")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return j, res.stdout


def ok(row, engine):
    e = row["engines"][engine]
    assert e["status"] == "ok", (engine, e)
    assert e["median_s"] > 0 and e["min_s"] <= e["median_s"] <= e["max_s"]
    return e


def test_smoke_runs_every_case(smoke):
    j, stdout = smoke
    assert j["machine"]["torch"] and j["machine"]["transformers"] and j["machine"]["device"] == "cpu"
    assert set(j["cases"]) == set(gpu_peers.CASES)
    for name, case in j["cases"].items():
        assert case["status"] == "ok", (name, case)


def test_smoke_distilbert_records_each_engine_and_the_compile_limit(smoke):
    rows = smoke[0]["cases"]["distilbert"]["rows"]
    assert set(rows) == {"distilbert/f32/b1", "distilbert/f32/b2"}
    for row in rows.values():
        ok(row, "tach")
        assert ok(row, "torch-eager")["time_over_tach"] > 0
        assert row["max_logit_diff_over_max_logit"] < 1e-3
        autotune = row["engines"]["torch-compile-max-autotune"]
        assert autotune["status"] == "failed" and "--compile-timeout" in autotune["message"]


def test_smoke_tf32_is_refused_by_tach_on_a_cpu(smoke):
    (row,) = smoke[0]["cases"]["tf32"]["rows"].values()
    ok(row, "tach")
    ok(row, "torch-eager")
    ok(row, "torch-eager-tf32")
    refused = row["engines"]["tach-tf32"]
    assert refused["status"] == "failed" and "TF32 is a GPU tensor-core format" in refused["message"]


def test_smoke_llama_modernbert_decode_and_quantized_rows(smoke):
    cases = smoke[0]["cases"]
    (llama,) = cases["llama-prefill"]["rows"].values()
    ok(llama, "tach")
    ok(llama, "torch-eager")
    assert llama["flops_per_batch"] > 0 and llama["bf16_ceiling_flops_per_s"] is None
    modern = cases["modernbert"]["rows"]
    assert sorted(r["seq_len"] for r in modern.values()) == [32, 64]
    for row in modern.values():
        ok(row, "tach")
        ok(row, "torch-sdpa")
    ok(cases["decode"]["rows"]["decode/f32"], "tach")
    for dt in ("int8", "nf4"):
        row = cases["quantized"]["rows"][f"quantized/{dt}"]
        assert row["status"] == "ok" or row["message"], row  # the CPU runs them; CUDA says not supported
