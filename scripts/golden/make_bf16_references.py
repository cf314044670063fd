#!/usr/bin/env python3
"""Writes what transformers computes when it runs the committed tiny fixture checkpoints in bf16
(and the f16 checkpoints in f16): the model loaded with dtype=torch.bfloat16, so weights, the
residual stream, the GEMMs and attention are all in the reduced dtype, as a user's bf16 model runs.
These are the references tach's GPU bf16 inference is held to (tests/test_cuda_bf16_models.cc).

    scripts/golden/make_bf16_references.py tests/fixtures                 # writes tests/fixtures/reduced_precision/
    scripts/golden/make_bf16_references.py tests/fixtures --only llama-lm-yarn-bf16 --print-only

For each checkpoint and dtype, one JSON file tests/fixtures/reduced_precision/NAME.DTYPE.json holds:
  - the head's outputs for the fixture's rows right-padded, left-padded, and each row alone
    (unpadded): classifier logits [B, labels]; a bare model's hidden states at real tokens
    [row][token][C]; a causal LM's vocabulary logits at each row's last real token [B, V]; every
    number the reduced-precision result, exactly (bf16 and f16 values are exact in f32);
  - for causal LMs, the greedy tokens of generate(do_sample=False) in that dtype from the
    left-padded rows, and per step the margin between the top two logits and the step's scale
    (largest |logit|), so a test can tell a near tie (which rounding may flip) from a real
    disagreement;
  - the largest scaled error of this reduced-precision forward against transformers' f32 forward of
    the same checkpoint (max |x - x_f32| / max |x_f32| per row or token vector), per output: how far
    two implementations of the same arithmetic in this dtype can be expected to drift apart;
  - torch and transformers versions, the dtype and the attention implementation transformers ran.

Why a script of its own rather than an option of make_*_fixtures.py: those scripts write the
checkpoints that every golden test reads; this one only reads them, so it can be rerun on a newer
torch or transformers without rewriting a single weight.

Attention is transformers' eager implementation (recorded in each file), as the f32 fixtures'
references are: sdpa (from_pretrained's default for every family here but MPNet) gives the same
numbers wherever a query has a key to see, but a query with none, a padding token at the front of
a left-padded row whose local window holds only padding, comes out differently, and ModernBERT's
cls pooling reads that token (its left-padded logits move by 0.1 between the two in f32).
Development only: run with the virtualenv that has torch and transformers (docs/perf.md).
"""
import argparse
import json
import os
import sys

import torch
import transformers

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}

# The checkpoints, by the directory under tests/fixtures. Left out: encoders/distilbert-sst2-tiny
# (a trained SST-2 model whose expected.json holds accuracy, not a forward) and
# decoders/qwen3-embed-bf16 (a sentence-transformers pipeline; Qwen3 is here through its
# classifier and causal LM).
CHECKPOINTS = [
    "encoders/bert-cls2-f32", "encoders/bert-cls3-f16", "encoders/bert-reg1-bf16", "encoders/bert-base-model-f32",
    "encoders/distilbert-cls2-f32", "encoders/distilbert-cls3-bf16", "encoders/distilbert-cls1-f16",
    "encoders/distilbert-base-model-f32", "encoders/roberta-cls2-f32", "encoders/roberta-base-model-f32",
    "encoders/xlm-roberta-cls3-bf16", "encoders/xlm-roberta-base-model-f32", "encoders/mpnet-cls2-f32",
    "encoders/mpnet-base-model-f32",
    "decoders/qwen2-cls-kv1-f32", "decoders/qwen2-cls-kv2-bf16", "decoders/qwen2-lm-kv4-untied-f32",
    "decoders/qwen2-lm-kv2-tied-f16", "decoders/qwen2-lm-rope-linear-f32", "decoders/qwen2-lm-rope-dynamic-f32",
    "decoders/qwen2-tok-bf16",
    "decoders/llama-cls-bias-f32", "decoders/llama-lm-llama3rope-f32", "decoders/llama-lm-yarn-bf16",
    "decoders/mistral-cls-window4-f32", "decoders/mistral-lm-window4-f32",
    "decoders/qwen3-cls-headdim16-f32", "decoders/qwen3-lm-window-bf16",
    "decoders/gemma3-cls-f32", "decoders/gemma3-lm-softcap-f32", "decoders/gemma3-lm-bf16",
    "decoders/modernbert-cls-mean-f32", "decoders/modernbert-cls-bias-bf16", "decoders/modernbert-base-model-f32",
]

# Vocabulary logits are stored only for vocabularies this small (the tiny fixtures' 256);
# qwen2-tok-bf16's 151,936 would be megabytes: its greedy tokens are stored alone.
MAX_STORED_VOCAB = 1024


def dtypes_for(weights_dtype):
    """bf16 for every checkpoint; f16 too for the checkpoints stored in f16, the models a user would
    run in f16 (the others were never meant for f16's narrower range)."""
    return ["bf16", "f16"] if weights_dtype == "f16" else ["bf16"]


def pad_rows(rows, pad_id, side, type_rows=None):
    """ids, mask (and token types, 0 at padding) [B, T], padded on `side`."""
    T = max(len(r) for r in rows)
    ids, mask, types = [], [], []
    for i, r in enumerate(rows):
        fill = T - len(r)
        t = type_rows[i] if type_rows else [0] * len(r)
        if side == "left":
            ids.append([pad_id] * fill + r), mask.append([0] * fill + [1] * len(r)), types.append([0] * fill + t)
        else:
            ids.append(r + [pad_id] * fill), mask.append([1] * len(r) + [0] * fill), types.append(t + [0] * fill)
    return torch.tensor(ids), torch.tensor(mask), torch.tensor(types)


def kind_of(architecture):
    if architecture.endswith("ForCausalLM"):
        return "causal_lm"
    if architecture.endswith("ForSequenceClassification"):
        return "classifier"
    return "bare"


def forward(model, kind, rows, pad_id, side, type_rows):
    """The head's outputs for `rows` padded on `side`, as nested lists of f32 values: [B, labels],
    [B, V] at each row's last real token, or [row][token][C] at real tokens."""
    ids, mask, types = pad_rows(rows, pad_id, side, type_rows)
    kwargs = {"input_ids": ids, "attention_mask": mask}
    if type_rows is not None:
        kwargs["token_type_ids"] = types
    with torch.no_grad():
        out = model(**kwargs)
    T = ids.shape[1]
    first = [T - len(r) if side == "left" else 0 for r in rows]
    if kind == "classifier":
        return out.logits.float().tolist()
    if kind == "causal_lm":
        return [out.logits[i, first[i] + len(r) - 1].float().tolist() for i, r in enumerate(rows)]
    h = out.last_hidden_state.float()
    return [h[i, first[i]:first[i] + len(r)].tolist() for i, r in enumerate(rows)]


def outputs(model, kind, rows, pad_id, type_rows):
    """right, left and unpadded (each row alone) outputs."""
    e = {side: forward(model, kind, rows, pad_id, side, type_rows) for side in ("right", "left")}
    e["unpadded"] = [forward(model, kind, [r], pad_id, "right", [type_rows[i]] if type_rows else None)[0]
                     for i, r in enumerate(rows)]
    return e


def vectors(x, kind):
    """The vectors a scaled error is taken over: a classifier's whole batch of logits (a head of one
    or two outputs can land near zero on one row by cancellation, where a row's own scale would
    make any absolute error huge), each row's vocabulary logits, or each token's hidden state."""
    if kind == "classifier":
        yield [v for row in x for v in row]
    elif isinstance(x[0], float):
        yield x
    else:
        for v in x:
            yield from vectors(v, kind)


def scaled_error(got, want, kind):
    """max |got - want| / max(max |want|, 1e-3) per vector, the worst vector: the C++ test's measure."""
    worst = 0.0
    for g, w in zip(vectors(got, kind), vectors(want, kind)):
        scale = max(1e-3, max(abs(v) for v in w))
        worst = max(worst, max(abs(a - b) for a, b in zip(g, w)) / scale)
    return worst


def greedy(model, rows, pad_id, new_tokens):
    """generate(do_sample=False) from the left-padded rows: tokens [B, N], and per step each row's
    margin (top logit - second) and scale (largest |logit|) of the logits the token was chosen from."""
    ids, mask, _ = pad_rows(rows, pad_id, "left")
    with torch.no_grad():
        g = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens, do_sample=False,
                           pad_token_id=pad_id, eos_token_id=None, return_dict_in_generate=True, output_logits=True)
    margins = [[0.0] * new_tokens for _ in rows]
    scales = [[0.0] * new_tokens for _ in rows]
    for step, logits in enumerate(g.logits):
        top2 = logits.float().topk(2, dim=-1).values
        for r in range(len(rows)):
            margins[r][step] = float(top2[r, 0] - top2[r, 1])
            scales[r][step] = float(logits[r].float().abs().max())
    return g.sequences[:, ids.shape[1]:].tolist(), margins, scales


# The rule tests/test_cuda_bf16_models.cc applies (its comments give the reasoning), here so the
# printout shows that transformers' own f32 forward passes it against the reference.
EPSILON = {"bf16": 2.0**-8, "f16": 2.0**-10}


def tolerance(r):
    return max(3 * max(r["f32_scaled_error"].values()), 4 * EPSILON[r["dtype"]]) if "f32_scaled_error" in r else \
        4 * EPSILON[r["dtype"]]


def greedy_verdict(r, tokens, tol):
    """Tokens equal to the reference's until a step whose reference margin is within 2 * tol of the
    step's scale (a near tie either side may break either way): 'ok', 'ok (N near ties)' or 'FAIL'."""
    ties = 0
    for row, (want, got) in enumerate(zip(r["generated"], tokens)):
        for step, (a, b) in enumerate(zip(want, got)):
            if a == b:
                continue
            if r["greedy_margin"][row][step] <= 2 * tol * r["greedy_scale"][row][step]:
                ties += 1
                break
            return f"FAIL row {row} step {step}"
    return f"ok ({ties} near ties)" if ties else "ok"


def load(cls, path, dtype):
    return cls.from_pretrained(path, dtype=dtype, attn_implementation="eager").eval()


def reference(fixtures, checkpoint, dtype_name):
    path = os.path.join(fixtures, checkpoint)
    with open(os.path.join(path, "expected.json")) as f:
        expected = json.load(f)
    architecture = expected["architecture"]
    cls = getattr(transformers, architecture)
    kind = kind_of(architecture)
    rows, pad_id = expected["input_rows"], expected["pad_id"]
    type_rows = expected.get("token_type_rows")
    model = load(cls, path, DTYPES[dtype_name])
    exact = load(cls, path, torch.float32)
    assert exact.config._attn_implementation == model.config._attn_implementation
    vocab = model.config.vocab_size if kind == "causal_lm" else 0
    r = {"checkpoint": checkpoint, "architecture": architecture, "kind": kind, "dtype": dtype_name,
         "weights_dtype": expected["weights_dtype"], "attn_implementation": model.config._attn_implementation,
         "torch": torch.__version__, "transformers": transformers.__version__,
         "generator": "scripts/golden/make_bf16_references.py", "input_rows": rows, "token_type_rows": type_rows,
         "pad_id": pad_id}
    if vocab <= MAX_STORED_VOCAB:
        got, want = outputs(model, kind, rows, pad_id, type_rows), outputs(exact, kind, rows, pad_id, type_rows)
        r["outputs"] = got
        r["f32_scaled_error"] = {side: scaled_error(got[side], want[side], kind) for side in got}
    if kind == "causal_lm":
        n = expected["new_tokens"]
        r["new_tokens"] = n
        r["generated"], r["greedy_margin"], r["greedy_scale"] = greedy(model, rows, pad_id, n)
        r["f32_generated"] = greedy(exact, rows, pad_id, n)[0]
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fixtures", help="tests/fixtures: the checkpoints are read there, the references written "
                                     "to its reduced_precision/")
    ap.add_argument("--only", default="", help="comma-separated checkpoint names (default: all)")
    ap.add_argument("--print-only", action="store_true", help="print the errors against f32, write nothing")
    args = ap.parse_args()
    torch.manual_seed(0)
    out_dir = os.path.join(args.fixtures, "reduced_precision")
    os.makedirs(out_dir, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    print(f"{'checkpoint':34} dtype attention  vs f32: right     left      unpadded  tolerance  f32's greedy tokens")
    for checkpoint in CHECKPOINTS:
        name = os.path.basename(checkpoint)
        if only and name not in only:
            continue
        with open(os.path.join(args.fixtures, checkpoint, "expected.json")) as f:
            weights_dtype = json.load(f)["weights_dtype"]
        for dtype_name in dtypes_for(weights_dtype):
            r = reference(args.fixtures, checkpoint, dtype_name)
            err = r.get("f32_scaled_error", {})
            cols = " ".join(f"{err[s]:9.2e}" if s in err else f"{'-':>9}" for s in ("right", "left", "unpadded"))
            same = ""
            if "generated" in r:
                total = sum(len(t) for t in r["generated"])
                agree = sum(a == b for ga, gb in zip(r["generated"], r["f32_generated"]) for a, b in zip(ga, gb))
                same = f"{agree}/{total} equal, {greedy_verdict(r, r['f32_generated'], tolerance(r))}"
            print(f"{name:34} {dtype_name:5} {r['attn_implementation']:10} {cols}  {tolerance(r):9.2e}  {same}")
            if args.print_only:
                continue
            with open(os.path.join(out_dir, f"{name}.{dtype_name}.json"), "w") as f:
                json.dump(r, f, separators=(",", ":"))


if __name__ == "__main__":
    sys.exit(main())
