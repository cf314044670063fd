"""Models and tokenizers from Python: the same numbers as transformers' (the golden fixtures) and
as the tach executable's, arrays without copies, errors with the CLI's messages."""
import json
import os

import numpy as np
import pytest

import tach
from conftest import FIXTURES, run_cli

BERT = os.path.join(FIXTURES, "encoders", "bert-cls2-f32")
WORDPIECE = os.path.join(FIXTURES, "tokenizers", "tiny-wordpiece")


def test_classify_ids_match_transformers_and_the_cli():
    expected = json.load(open(os.path.join(BERT, "expected.json")))
    model = tach.load_model(BERT)
    logits = model.classify(expected["input_rows"], token_type_ids=expected["token_type_rows"])
    assert logits.dtype == np.float32 and logits.shape == (len(expected["input_rows"]), 2)
    np.testing.assert_allclose(logits, np.array(expected["logits"]), atol=1e-4)
    args = []
    for row, types in zip(expected["input_rows"], expected["token_type_rows"]):
        args += ["--ids", " ".join(map(str, row)), "--types", " ".join(map(str, types))]
    cli = json.loads(run_cli("classify", "--model", BERT, *args, "--repeat", "1", "--json").stdout)
    np.testing.assert_allclose(logits, np.array([r["logits"] for r in cli["rows"]]), rtol=0, atol=1e-6)
    scores = model.scores(expected["input_rows"], token_type_ids=expected["token_type_rows"])
    np.testing.assert_allclose(scores, np.array([r["scores"] for r in cli["rows"]]), rtol=0, atol=1e-6)


def test_classify_texts_equal_the_cli():
    texts = ["hello world", "the quick fox", "[CLS] a, b"]
    model = tach.load_model(BERT, tokenizer=WORDPIECE)
    logits = model.classify(texts)
    args = []
    for t in texts:
        args += ["--text", t]
    cli = json.loads(run_cli("classify", "--model", BERT, "--tokenizer", WORDPIECE, *args, "--repeat", "1",
                             "--json").stdout)
    np.testing.assert_allclose(logits, np.array([r["logits"] for r in cli["rows"]]), rtol=0, atol=1e-6)


def test_arrays_are_views_of_tach_memory():
    model = tach.load_model(BERT)
    h = model.hidden_states([[1, 5, 7, 2], [1, 9, 2]])
    assert h.shape == (2, 4, model.info["hidden_size"])
    assert not h.flags.owndata and h.base is not None  # no copy: the array keeps tach's tensor alive
    del model
    assert np.isfinite(h).all()  # still valid after the model is gone


def test_info_says_what_was_loaded():
    info = tach.load_model(BERT).info
    assert info["classifier"] and info["model_type"] == "bert" and info["dtype"] == "f32"
    assert info["device"] == "cpu" and len(info["labels"]) == 2


def test_generate_equals_the_cli():
    lm = os.path.join(FIXTURES, "decoders", "qwen2-lm-kv4-untied-f32")
    model = tach.load_model(lm)
    prompts = [[5, 17, 33, 2], [9, 4]]
    out = model.generate(prompts, max_new_tokens=6, stop_at_eos=False)
    args = []
    for p in prompts:
        args += ["--ids", " ".join(map(str, p))]
    cli = json.loads(run_cli("generate", "--model", lm, *args, "--max-new-tokens", "6", "--ignore-eos",
                             "--json").stdout)
    assert out["tokens"] == cli["tokens"]
    assert out["time_to_first_token_s"] > 0 and len(out["decode_step_s"]) == 5
    assert out["decode_method"] == cli["decode_method"] == "kernel by kernel (the CPU)"


def test_lm_logits_equal_transformers():
    lm = os.path.join(FIXTURES, "decoders", "qwen2-lm-kv4-untied-f32")
    with open(os.path.join(lm, "expected.json")) as f:
        e = json.load(f)
    model = tach.load_model(lm)
    for row, want in zip(e["input_rows"], e["lm_logits_right"]):
        got = model.lm_logits([row])
        assert got.shape == (1, len(row), model.info["vocab_size"])
        want = np.array(want, dtype=np.float32)
        assert np.abs(got[0] - want).max() <= 1e-4 * np.abs(want).max()


def test_embed_equals_the_cli(tmp_path):
    enc = os.path.join(FIXTURES, "encoders", "bert-base-model-f32")
    model = tach.load_model(enc, tokenizer=WORDPIECE)
    texts = ["hello world", "the fox", "a"]
    vectors = model.embed(texts)
    texts_file = tmp_path / "texts.txt"
    texts_file.write_text("\n".join(texts) + "\n")
    out = tmp_path / "e.npy"
    run_cli("embed", "--model", enc, "--tokenizer", WORDPIECE, "--file", texts_file, "--output", out)
    np.testing.assert_allclose(vectors, np.load(out), rtol=0, atol=1e-6)


def test_tokenizer():
    tok = tach.Tokenizer(WORDPIECE)
    e = tok.encode("hello world")
    assert e["ids"][0] == tok.token_to_id("[CLS]") and e["ids"][-1] == tok.token_to_id("[SEP]")
    assert tok.decode(e["ids"]) == "hello world"
    assert [x["ids"] for x in tok.encode_batch(["hello", "world"])] == [tok.encode("hello")["ids"],
                                                                        tok.encode("world")["ids"]]
    assert tok.vocab_size == 9


def test_errors_carry_the_cli_message(tmp_path):
    missing = str(tmp_path / "nothing-here")
    with pytest.raises(tach.Error) as e:
        tach.load_model(missing)
    cli = run_cli("classify", "--model", missing, check=False)
    assert cli.returncode == 1
    assert cli.stderr.strip() == "tach: error: " + str(e.value)
    with pytest.raises(tach.Error, match="outside the vocabulary"):
        tach.load_model(BERT).classify([[1, 100000, 2]])
    with pytest.raises(tach.Error, match="synthetic weights and no tokenizer files"):
        tach.load_model("preset:bert-tiny").classify(["a text"])
