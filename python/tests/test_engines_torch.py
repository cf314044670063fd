"""The PyTorch and ONNX Runtime engine workers on tiny fixtures (an encoder and a decoder, CPU),
driven through the protocol: their outputs equal transformers' own, and their training steps give
the losses of scripts/peers/train_peers.py's loop. Needs torch and transformers (the development
virtualenv, run_engines_torch.sh); skips, saying why, without them."""
import os
import sys
import tempfile

import pytest

from test_engines_protocol import REPO, Worker

torch = pytest.importorskip("torch", reason="the PyTorch engines need torch (the development virtualenv)")
transformers = pytest.importorskip("transformers", reason="the PyTorch engines need transformers")

FIXTURES = os.path.join(REPO, "tests", "fixtures")
# (fixture, task, transformers class, outputs): an encoder classifier, a QA head with segment ids,
# a bare body and a decoder language model.
CASES = {
    "encoder-cls": ("encoders/distilbert-cls2-f32", "sequence-classification", "AutoModelForSequenceClassification",
                    ["logits"]),
    "encoder-qa": ("heads/bert-qa-f32", "question-answering", "AutoModelForQuestionAnswering",
                   ["start_logits", "end_logits"]),
    "encoder-body": ("encoders/bert-base-model-f32", "feature-extraction", "AutoModel", ["last_hidden_state"]),
    "decoder-lm": ("decoders/qwen2-lm-kv4-untied-f32", "causal-lm", "AutoModelForCausalLM", ["logits"]),
}
IDS = [[5, 17, 33, 64, 90, 7], [8, 9, 100, 41, 2, 3]]
MASK = [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]
SEGMENTS = [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 0, 0]]


def has(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


def worker(engine):
    w = Worker(engine, sys.executable)
    assert w.first["event"] == "ready", w.first
    return w


def reference(case):
    """transformers' own outputs for the case on IDS (what every engine must reproduce)."""
    path, task, cls, outputs = CASES[case]
    model = getattr(transformers, cls).from_pretrained(os.path.join(FIXTURES, path)).eval()
    args = {"input_ids": torch.tensor(IDS), "attention_mask": torch.tensor(MASK)}
    if task == "question-answering":
        args["token_type_ids"] = torch.tensor(SEGMENTS)
    with torch.no_grad():
        out = model(**args)
    return {name: out[name].float() for name in outputs}


def run_outputs(engine, case, cache_dir):
    path, task, _, _ = CASES[case]
    w = worker(engine)
    try:
        load = w.ask("load", model=os.path.join(FIXTURES, path), task=task, dtype="f32", device="cpu", threads=1,
                     cache_dir=cache_dir, train=None)
        assert load["ok"], load
        fields = {"input_ids": IDS, "attention_mask": MASK}
        if task == "question-answering":
            fields["token_type_ids"] = SEGMENTS
        assert w.ask("inputs", **fields) == {"ok": True, "batch": 2, "length": 6}
        assert w.ask("prepare")["first_call_s"] > 0
        out = w.ask("outputs")
        assert out["ok"], out
        timed = w.ask("time", calls=3)
        assert timed["ok"] and len(timed["ns"]) == 3
        assert w.quit()[2] == 0
        return load, out["outputs"]
    finally:
        w.close()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("engine", ["torch", "onnxruntime"])
def test_outputs_equal_transformers(engine, case, tmp_path):
    if engine == "onnxruntime" and not (has("onnxruntime") and has("onnx")):
        pytest.skip("onnxruntime and onnx are not installed in this Python")
    load, outputs = run_outputs(engine, case, str(tmp_path))
    ref = reference(case)
    assert sorted(outputs) == sorted(ref)
    for name, want in ref.items():
        got = torch.tensor(outputs[name]["data"]).reshape(outputs[name]["shape"])
        assert list(got.shape) == list(want.shape)
        torch.testing.assert_close(got, want, atol=1e-4 if engine == "onnxruntime" else 1e-6, rtol=1e-4)
    assert load["parameters"] == sum(p.numel() for p in getattr(
        transformers, CASES[case][2]).from_pretrained(os.path.join(FIXTURES, CASES[case][0])).parameters())
    assert load["setup"]["kind"] == ("onnx export" if engine == "onnxruntime" else "none")


def test_torch_compile_outputs_equal_transformers(tmp_path):
    load, outputs = run_outputs("torch-compile", "encoder-cls", str(tmp_path))
    assert load["setup"]["kind"] == "torch.compile"
    got = torch.tensor(outputs["logits"]["data"]).reshape(outputs["logits"]["shape"])
    torch.testing.assert_close(got, reference("encoder-cls")["logits"], atol=1e-5, rtol=1e-4)


def test_onnx_export_is_cached_atomically_and_reused(tmp_path):
    if not (has("onnxruntime") and has("onnx")):
        pytest.skip("onnxruntime and onnx are not installed in this Python")
    first, _ = run_outputs("onnxruntime", "encoder-cls", str(tmp_path))
    second, outputs = run_outputs("onnxruntime", "encoder-cls", str(tmp_path))
    assert first["setup"]["cached"] is False and first["setup"]["seconds"] > 0 and first["setup"]["cache_age_s"] is None
    assert second["setup"]["cached"] is True and second["setup"]["cache_age_s"] >= 0
    assert second["setup"]["seconds"] == 0.0 and second["parameters"] == first["parameters"]
    entries = os.listdir(tmp_path)
    assert len(entries) == 1 and not entries[0].startswith("."), entries  # no half-written export left
    torch.testing.assert_close(torch.tensor(outputs["logits"]["data"]).reshape(2, 2),
                               reference("encoder-cls")["logits"], atol=1e-4, rtol=1e-4)


def reference_losses(method, steps, lr, seed, targets):
    """The loop of scripts/peers/train_peers.py (its TORCH_STEP), with a seed and labels given:
    zero_grad, forward with labels, backward, clipping at 1.0, AdamW (its default weight decay)."""
    torch.manual_seed(seed)
    m = transformers.AutoModelForSequenceClassification.from_pretrained(
        os.path.join(FIXTURES, CASES["encoder-cls"][0])).float()
    if method == "lora":
        from peft import LoraConfig, get_peft_model
        m = get_peft_model(m, LoraConfig(r=8, lora_alpha=8, lora_dropout=0.0, target_modules=targets,
                                         task_type="SEQ_CLS"))
    m.train()
    params = [p for p in m.parameters() if p.requires_grad]
    ids, mask, labels = torch.tensor(IDS), torch.tensor(MASK), torch.tensor([1, 0])
    opt = torch.optim.AdamW(params, lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = m(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(loss.item())
    return losses, sum(p.numel() for p in params)


@pytest.mark.parametrize("method", ["full", "lora"])
def test_training_steps_give_the_reference_loop_losses(method):
    if method == "lora" and not has("peft"):
        pytest.skip("LoRA needs peft, which this Python lacks")
    targets = ["q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"]
    lr = 1e-3
    w = worker("torch")
    try:
        load = w.ask("load", model=os.path.join(FIXTURES, CASES["encoder-cls"][0]), task="sequence-classification",
                     dtype="f32", device="cpu", threads=1, train={
                         "method": method, "lr": lr, "weight_decay": 0.01, "seed": 7, "num_labels": 2, "lora_r": 8,
                         "lora_alpha": 8, "lora_dropout": 0.0, "lora_targets": targets})
        assert load["ok"], load
        assert w.ask("inputs", input_ids=IDS, attention_mask=MASK, labels=[1, 0])["ok"]
        assert w.ask("prepare")["ok"]  # the first step: trains too
        timed = w.ask("time", calls=4)
        assert timed["ok"], timed
        assert w.ask("outputs")["kind"] == "unsupported"
    finally:
        w.close()
    want, trainable = reference_losses(method, 5, lr, 7, targets)
    assert load["trainable_parameters"] == trainable
    assert timed["loss"] == pytest.approx(want[1:], rel=1e-5, abs=1e-6)
    assert len(set(timed["loss"])) > 1  # the steps train: the loss moves
    for i, ns in enumerate(timed["ns"]):
        assert sum(timed["phases_ns"][p][i] for p in ("forward", "backward", "optimizer")) <= ns


def test_qlora_trains_on_the_cpu_through_the_portable_dequantization():
    """bitsandbytes' NF4 base on the CPU (its AVX-512 dequantization bypassed): with dropout off the
    first step's loss is the NF4 base model's, the same as a full step's to NF4's rounding."""
    if not (has("peft") and has("bitsandbytes")):
        pytest.skip("QLoRA needs peft and bitsandbytes, which this Python lacks")
    targets = ["q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"]
    losses = {}
    for method in ("full", "qlora"):
        w = worker("torch")
        try:
            load = w.ask("load", model=os.path.join(FIXTURES, CASES["encoder-cls"][0]),
                         task="sequence-classification", dtype="f32", device="cpu", threads=1,
                         train={"method": method, "lr": 1e-3, "seed": 7, "dropout": False, "lora_targets": targets})
            assert load["ok"], load
            assert w.ask("inputs", input_ids=IDS, attention_mask=MASK, labels=[1, 0])["ok"]
            first = w.ask("prepare")
            timed = w.ask("time", calls=2)
            assert timed["ok"] and set(timed["phases_ns"]) == {"data", "forward", "backward", "optimizer"}
            losses[method] = [first["loss"]] + timed["loss"]
        finally:
            w.close()
    assert losses["qlora"][0] == pytest.approx(losses["full"][0], abs=0.05)
    assert losses["qlora"][2] < losses["qlora"][0]  # the adapters train


def test_torch_worker_reports_versions_memory_and_bad_ids():
    w = worker("torch")
    try:
        assert w.first["versions"]["torch"] == torch.__version__ and w.first["devices"][0] == "cpu"
        assert w.ask("load", model=os.path.join(FIXTURES, CASES["encoder-cls"][0]), task="sequence-classification",
                     device="cpu", threads=1)["ok"]
        assert "vocabulary" in w.ask("inputs", input_ids=[[1, 5000]])["error"]
        assert w.ask("inputs", input_ids=IDS)["ok"]
        mem = w.ask("memory", reset=True)
        assert mem["rss_bytes"] > 50 << 20 and mem["device_allocated_peak_bytes"] is None  # torch is loaded; no GPU
    finally:
        w.close()


def test_onnxruntime_refuses_training():
    if not (has("onnxruntime") and has("onnx")):
        pytest.skip("onnxruntime and onnx are not installed in this Python")
    w = worker("onnxruntime")
    try:
        reply = w.ask("load", model=os.path.join(FIXTURES, CASES["encoder-cls"][0]), task="sequence-classification",
                      cache_dir=tempfile.gettempdir(), train={"method": "full"})
        assert reply["kind"] == "unsupported" and "inference only" in reply["error"]
    finally:
        w.close()
