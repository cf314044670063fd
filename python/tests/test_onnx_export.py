"""The onnxruntime engine's export (tach/engines/_onnx_export.py) with the development virtualenv
(run by ctest with it; skips, saying why, without torch, transformers or onnxruntime): the example
batch is one every family's fixture can run, the RoBERTa classifier exports, and an export that
fails, keeps its example's shape or computes something else is refused by name, once (later loads
read the refusal instead of exporting again)."""
import glob
import json
import os
import re
import shutil

import pytest

from conftest import FIXTURES

torch = pytest.importorskip("torch", reason="the export needs torch (the development virtualenv)")
transformers = pytest.importorskip("transformers", reason="the export needs transformers")
pytest.importorskip("onnxruntime", reason="the export is checked in onnxruntime")
pytest.importorskip("onnx", reason="torch.onnx needs onnx")

from tach.engines import _onnx_export as onnx_export  # noqa: E402
from tach.engines._errors import EngineError  # noqa: E402
from tach.engines._requests import Load  # noqa: E402
from tach.engines.onnxruntime_engine import OnnxRuntimeEngine  # noqa: E402

ROBERTA = os.path.join(FIXTURES, "encoders", "roberta-cls2-f32")
DISTILBERT = os.path.join(FIXTURES, "encoders", "distilbert-cls2-f32")
ALL_NAMES = ["input_ids", "attention_mask", "token_type_ids"]


def load(model, cache_dir, task="sequence-classification"):
    return Load(model=model, task=task, dtype="f32", device="cpu", threads=1, cache_dir=str(cache_dir))


def fixture_configs():
    return sorted(p for d in ("encoders", "decoders", "heads") for p in glob.glob(os.path.join(FIXTURES, d, "*",
                                                                                             "config.json")))


@pytest.mark.parametrize("config_path", fixture_configs(), ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_example_batch_is_one_the_model_can_run(config_path):
    config = transformers.AutoConfig.from_pretrained(os.path.dirname(config_path))
    with open(config_path) as f:
        raw = json.load(f)
    for shape in (onnx_export.EXAMPLE_SHAPE, onnx_export.CHECK_SHAPE):
        ids, mask, types = onnx_export.batch_inputs(torch, config, ALL_NAMES, shape)
        assert list(ids.shape) == list(mask.shape) == list(types.shape)
        # The length the model's positions hold (RoBERTa's and MPNet's start after the pad id's).
        length = min(shape[1], config.max_position_embeddings - 2)
        assert list(ids.shape) == [shape[0], length]
        assert 0 <= int(ids.min()) and int(ids.max()) < config.vocab_size
        # Segment ids inside the type table: RoBERTa's and XLM-R's has one row.
        assert int(types.max()) < raw.get("type_vocab_size", 1)
        # Real tokens are no special token (a pad id among them moves RoBERTa's positions).
        special = {raw.get(k) for k in ("pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id", "cls_token_id")}
        assert not set(ids[mask.bool()].tolist()) & special
        # The last row is padded, the first is not: the trace and the check run a real mask.
        assert bool(mask[0].all()) and not bool(mask[-1].all())
    assert onnx_export.EXAMPLE_SHAPE != onnx_export.CHECK_SHAPE and 1 not in onnx_export.EXAMPLE_SHAPE


def test_roberta_exports_and_its_export_agrees_with_transformers(tmp_path):
    # A batch of ones (segment id 1 included) failed here: IndexError in token_type_embeddings.
    parameters, names, outputs = onnx_export.export(load(ROBERTA, tmp_path), str(tmp_path))
    assert names == ALL_NAMES and outputs == ["logits"]
    model = transformers.AutoModelForSequenceClassification.from_pretrained(ROBERTA).eval()
    assert parameters == sum(p.numel() for p in model.parameters())
    import onnxruntime
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    inputs = onnx_export.batch_inputs(torch, model.config, names, (4, 11))
    got = session.run(outputs, {n: t.numpy() for n, t in zip(names, inputs)})[0]
    with torch.no_grad():
        want = model(**dict(zip(names, inputs))).logits
    torch.testing.assert_close(torch.from_numpy(got), want, atol=1e-4, rtol=1e-4)


def test_a_decoder_classifier_without_a_pad_id_exports_for_one_row(tmp_path):
    # transformers refuses such a classifier more than one row (it finds each row's last token by
    # the pad id); a batch of 2 made its export fail, so that even its batch-1 points were refused.
    model_dir = tmp_path / "model"
    shutil.copytree(os.path.join(FIXTURES, "decoders", "llama-cls-bias-f32"), model_dir)
    with open(model_dir / "config.json") as f:
        config = json.load(f)
    del config["pad_token_id"]
    with open(model_dir / "config.json", "w") as f:
        json.dump(config, f)
    _, names, outputs = onnx_export.export(load(str(model_dir), tmp_path), str(tmp_path))
    assert names == ["input_ids", "attention_mask"] and outputs == ["logits"]


def test_an_export_that_fails_is_refused_by_name_once(tmp_path, monkeypatch):
    calls = []

    def failing_export(*args, **kwargs):
        calls.append(args)
        raise IndexError("index out of range in self\nmore lines of the exporter's error")
    monkeypatch.setattr(torch.onnx, "export", failing_export)
    expected = ("onnxruntime cannot run roberta (RobertaForSequenceClassification, sequence-classification): "
                "torch.onnx cannot export it (IndexError: index out of range in self)")
    with pytest.raises(EngineError) as first:
        OnnxRuntimeEngine().load(load(ROBERTA, tmp_path))
    assert first.value.kind == "unsupported" and str(first.value) == expected
    # The next load (a later point of the sweep) is refused with the same reason, without exporting.
    with pytest.raises(EngineError) as second:
        OnnxRuntimeEngine().load(load(ROBERTA, tmp_path))
    assert second.value.kind == "unsupported" and str(second.value) == expected
    assert len(calls) == 1
    assert [e for e in os.listdir(tmp_path) if not e.endswith(".refused")] == [], os.listdir(tmp_path)


def test_an_export_that_kept_its_example_shape_is_refused(tmp_path, monkeypatch):
    # The trace without dynamic axes: a graph of [2, 8] inputs only, which the check's [3, 5] batch finds.
    real_export = torch.onnx.export
    monkeypatch.setattr(torch.onnx, "export",
                        lambda *args, **kwargs: real_export(*args, **{**kwargs, "dynamic_axes": None}))
    with pytest.raises(EngineError) as refused:
        OnnxRuntimeEngine().load(load(DISTILBERT, tmp_path))
    assert refused.value.kind == "unsupported"
    assert str(refused.value).startswith(
        "onnxruntime cannot run distilbert (DistilBertForSequenceClassification, sequence-classification): "
        "ONNX Runtime cannot run its export (")


def test_an_export_that_computes_something_else_is_refused(tmp_path):
    model = transformers.AutoModelForSequenceClassification.from_pretrained(DISTILBERT).eval()
    names = onnx_export.input_names(model)
    onnx_export.export(load(DISTILBERT, tmp_path), str(tmp_path))

    def shifted(*inputs):  # transformers' logits moved by 0.5: the export no longer agrees
        return (model(**dict(zip(names, inputs))).logits + 0.5,)
    with pytest.raises(EngineError) as refused:
        onnx_export.check_export(torch, model, load(DISTILBERT, tmp_path), str(tmp_path / "model.onnx"), names,
                                 ("logits",), shifted)
    assert refused.value.kind == "unsupported"
    assert re.search(r"its export's logits differs from transformers' by 0\.5 \(tolerance 0\.00[0-9]+\) on a "
                     r"\[3, 5\] batch with padding$", str(refused.value)), str(refused.value)
