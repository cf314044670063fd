#!/usr/bin/env python3
"""First-order importance of heads, FFN neurons and layers (Michel et al. 2019), as tach prune
--by importance defines it, computed in PyTorch with gates on the transformers model.

    scripts/golden/make_prune_importance.py tests/fixtures/prune

Each unit gets a gate xi = 1 that multiplies what it contributes, so the forward is unchanged and
dL/dxi is the first-order change of the loss were the unit removed:
  head h      the attention output projection's input (the heads' context, side by side) times
              xi_h over head h's columns: a forward pre-hook on attention.output.dense / out_lin
  neuron j    the FFN activation times xi_j: a forward pre-hook on output.dense / ffn.lin2
  layer l     the layer's output replaced by x + xi_l * (layer(x) - x), x its input: a forward
              hook on the layer (xi_l = 0 is the layer removed)
L is the model's own loss (cross-entropy with the example's label), one example at a time with no
padding, dropout off. A unit's importance is |dL/dxi| averaged over the examples; no per-layer
normalisation. The calibration examples are the first N rows of tests/fixtures/train/tiny.csv,
tokenized with tests/fixtures/tokenizers/tiny-wordpiece (truncated to the model's 32 positions).

bert-regression-importance.json: the scores alone for tests/fixtures/encoders/bert-reg1-bf16, a
regression head (one output, mean squared error with the label as a number).

<decoder>-importance.json (llama, mistral, qwen2, qwen3, gemma3, modernbert): a decoder sequence
classifier's scores on tiny.csv (a key/value group's gate on its query heads' contexts together,
as tach prune removes a group), the units its options remove by them (make_prune_decoder_fixtures.py's
plan and slicing), and the logits transformers computes loading the model so pruned.

<decoder>-causal-lm-importance.json (llama, mistral, qwen2, qwen3): a causal LM's scores by its
next-token loss (labels = input_ids, shifted by transformers), and the LM logits of the model so
pruned, right-padded.

<family>-<head>-importance.json: the per-token heads, on tests/fixtures/train_tasks/<case>/model
(bert, distilbert, roberta, xlm-roberta, mpnet), each on the data tach train --task reads for it,
one row at a time:
  token-classification   tests/fixtures/token_classes/ner.conll, run_ner.py's features truncated
                         to 10 tokens (make_train_task_golden.py's ner_features: the WordPiece
                         fixture tokenizer splits a word the same with run_ner's prefix space);
                         L the mean cross-entropy over the row's labelled tokens
  question-answering     tests/fixtures/train_tasks/squad_train.jsonl, run_qa.py's windows of 24
                         tokens with stride 6 (qa_features), token types for BERT alone (a
                         one-type RoBERTa or XLM-R reads zeros); L = (CE(start) + CE(end)) / 2
  masked-lm              the first 20 texts of tiny.csv, truncated to the model's positions (32;
                         30 where they start after padding_idx), the masks tach train draws in its
                         first epoch with seed 42 (splitmix64 hashes of seed, epoch, example,
                         position: train/mlm_masking.cc, written again below); L the mean
                         cross-entropy at the masked tokens; a text with none masked has no loss
                         and is left out
with the units --heads 0.5 --ffn 0.25 --layers 1 removes by them (MPNet: --ffn 0.25 --layers 1,
its heads kept as tach prune keeps them; their scores are still written) and the per-token
outputs transformers computes for the model so pruned, right-padded (RoBERTa, XLM-R and MPNet:
make_prune_fixtures.py's RoBERTa rows, pad id 1, a pad id inside a row among them).

    scripts/golden/make_prune_importance.py tests/fixtures/prune --heads-only --family mpnet

writes one family's per-token files alone.

Writes <family>-importance.json with the scores, the units tach prune --heads 0.5 --ffn 0.25
--layers 1 removes by them, and the logits transformers computes for the model so pruned
(the kept layer alone, the removed units silenced: make_prune_fixtures.py's way), right- and
left-padded.
"""
import argparse
import csv
import json
import os
import sys

import torch
from tokenizers import Tokenizer
from transformers import (AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForQuestionAnswering, AutoModelForSequenceClassification,
                          AutoModelForTokenClassification)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_prune_fixtures import FAMILIES, ROBERTA_ROWS, ROWS, logits, padded, prune_state, silenced  # noqa: E402
from make_train_task_golden import ner_features, qa_features  # noqa: E402

SAMPLES = 20

# make_prune_fixtures.py's tensor names, with XLM-R's (RoBERTa's, under roberta.) and MPNet's.
FAMILIES = dict(FAMILIES, **{
    "xlm-roberta": FAMILIES["roberta"],
    "mpnet": dict(layer="mpnet.encoder.layer.{}.", q="attention.attn.q", k="attention.attn.k", v="attention.attn.v",
                  o="attention.attn.o", fin="intermediate.dense", fout="output.dense", ffn_key="intermediate_size",
                  layers_key="num_hidden_layers"),
})
# Families whose position ids start after padding_idx (pad id 1), as transformers numbers them
# from the ids: fewer tokens than max_position_embeddings, and their own rows (a pad id inside).
AFTER_PADDING = ("roberta", "xlm-roberta", "mpnet")
# MPNet keeps its heads: one relative position bias table serves every layer's (tach prune refuses).
KEEPS_HEADS = ("mpnet",)

# Per family: the encoder's layers and, under each layer, the output projection and the FFN's
# second linear.
BERT_LAYOUT = dict(layers=lambda m: getattr(m, m.base_model_prefix).encoder.layer,
                   o=lambda l: l.attention.output.dense, fout=lambda l: l.output.dense)
MODULES = {
    "bert": BERT_LAYOUT,
    "roberta": BERT_LAYOUT,
    "xlm-roberta": BERT_LAYOUT,
    "mpnet": dict(layers=lambda m: m.mpnet.encoder.layer, o=lambda l: l.attention.attn.o,
                  fout=lambda l: l.output.dense),
    "distilbert": dict(layers=lambda m: m.distilbert.transformer.layer, o=lambda l: l.attention.out_lin,
                       fout=lambda l: l.ffn.lin2),
    # The causal decoders (the body under the model's base_model_prefix) and ModernBERT.
    "decoder": dict(layers=lambda m: getattr(m, m.base_model_prefix).layers, o=lambda l: l.self_attn.o_proj,
                    fout=lambda l: l.mlp.down_proj),
    "modernbert": dict(layers=lambda m: m.model.layers, o=lambda l: l.attn.Wo, fout=lambda l: l.mlp.Wo),
}


def tokenizer(path):
    spec = json.load(open(os.path.join(path, "tokenizer.json")))
    for t in spec["added_tokens"]:  # the fixture leaves out fields the library requires
        t.setdefault("single_word", False), t.setdefault("lstrip", False), t.setdefault("rstrip", False)
    return Tokenizer.from_str(json.dumps(spec))


def examples(data, tok, n, max_len, with_types, regression=False):
    rows = list(csv.DictReader(open(data)))[:n]
    out = []
    for r in rows:
        e = tok.encode(r["text"])
        ids, types = e.ids[:max_len], e.type_ids[:max_len]
        kw = {"input_ids": torch.tensor([ids])}
        if with_types:
            kw["token_type_ids"] = torch.tensor([types])
        # A regression head (num_labels 1) takes the label as a number: mean squared error.
        kw["labels"] = torch.tensor([float(r["label"])]) if regression else torch.tensor([int(r["label"])])
        out.append(kw)
    return out


def importance(model, family, data):
    mods = MODULES[family]
    cfg = model.config
    H = getattr(cfg, "num_attention_heads", None) or cfg.n_heads
    C = getattr(cfg, "hidden_size", None) or cfg.dim
    D = getattr(cfg, "head_dim", None) or C // H
    # A decoder's heads are gated in key/value groups: query heads g*G .. (g+1)*G-1 share key/value
    # head g (repeat_kv), and tach prune removes them together. An encoder's groups are its heads.
    KVH = getattr(cfg, "num_key_value_heads", None) or H
    G = H // KVH
    layers = list(mods["layers"](model))
    I = mods["fout"](layers[0]).in_features
    head_gates = [torch.ones(KVH, requires_grad=True) for _ in layers]
    neuron_gates = [torch.ones(I, requires_grad=True) for _ in layers]
    layer_gates = [torch.ones((), requires_grad=True) for _ in layers]
    hooks = []
    for l, layer in enumerate(layers):
        hg, ng, lg = head_gates[l], neuron_gates[l], layer_gates[l]
        hooks.append(mods["o"](layer).register_forward_pre_hook(
            lambda m, args, g=hg: (args[0] * g.repeat_interleave(G * D),) + tuple(args[1:])))
        hooks.append(mods["fout"](layer).register_forward_pre_hook(
            lambda m, args, g=ng: (args[0] * g,) + tuple(args[1:])))

        def gate_layer(m, args, kwargs, out, g=lg):
            x = args[0] if args else kwargs.get("hidden_states", kwargs.get("x"))
            y = out[0] if isinstance(out, tuple) else out
            y = x + g * (y - x)
            return (y,) + tuple(out[1:]) if isinstance(out, tuple) else y
        hooks.append(layer.register_forward_hook(gate_layer, with_kwargs=True))
    sums = dict(heads=torch.zeros(len(layers), KVH, dtype=torch.float64),
                neurons=torch.zeros(len(layers), I, dtype=torch.float64),
                layers=torch.zeros(len(layers), dtype=torch.float64))
    for kw in data:
        for g in head_gates + neuron_gates + layer_gates:
            g.grad = None
        loss = model(attention_mask=torch.ones_like(kw["input_ids"]), **kw).loss
        loss.backward()
        for l in range(len(layers)):
            sums["heads"][l] += head_gates[l].grad.abs().double()
            sums["neurons"][l] += neuron_gates[l].grad.abs().double()
            sums["layers"][l] += layer_gates[l].grad.abs().double()
    for h in hooks:
        h.remove()
    return {k: (v / len(data)).tolist() for k, v in sums.items()}, H, D, I


def prune_by_scores(model, family, scores, H, D, I):
    """The units --heads 0.5 --ffn 0.25 --layers 1 removes by the scores (the lowest of each kind,
    the lower index first among equals; MPNet's heads stay), and the reference: the kept layer
    alone, its removed units silenced (make_prune_fixtures.py's way). Returns the reference model
    and the expected file's entries for the scores and the units (pruned_heads: the kept layers'
    removed heads, renumbered as config.json lists them)."""
    fam = FAMILIES[family]
    L = len(scores["layers"])
    low = lambda s, n: sorted(sorted(range(len(s)), key=lambda i: (s[i], i))[:n])
    drop_layer = low(scores["layers"], 1)[0]
    kept_layers = [l for l in range(L) if l != drop_layer]
    heads_removed = {} if family in KEEPS_HEADS else {l: low(scores["heads"][l], H // 2) for l in kept_layers}
    neurons_removed = {l: low(scores["neurons"][l], I // 4) for l in kept_layers}
    small_state = prune_state(model.state_dict(), fam, L, {}, None, H, D, kept_layers)
    config = model.config
    setattr(config, fam["layers_key"], len(kept_layers))
    small = type(model)(config).eval()
    small.load_state_dict(small_state)
    renumber = lambda d: {kept_layers.index(l): v for l, v in d.items()}
    ref = silenced(small, fam, renumber(heads_removed), renumber(neurons_removed), D)
    expected = {"head_importance": scores["heads"], "neuron_importance": scores["neurons"],
                "layer_importance": scores["layers"], "removed_layers": [drop_layer]}
    if heads_removed:
        expected["pruned_heads"] = {str(l): h for l, h in renumber(heads_removed).items()}
    return ref, expected


def write_case(out_dir, family, source, data, tok_dir):
    model = AutoModelForSequenceClassification.from_pretrained(source).eval()
    model.config.problem_type = "single_label_classification"
    calib = examples(data, tokenizer(tok_dir), SAMPLES, model.config.max_position_embeddings,
                     family != "distilbert")
    scores, H, D, I = importance(model, family, calib)
    ref, pruned = prune_by_scores(model, family, scores, H, D, I)
    expected = {"samples": SAMPLES, **pruned, "input_rows": ROWS, "pad_id": 0, "architecture": type(model).__name__,
                "weights_dtype": "f32"}
    expected.update(logits(ref, ROWS, 0))
    path = os.path.join(out_dir, family + "-importance.json")
    with open(path, "w") as f:
        json.dump(expected, f)
    print(f"{path}: layer {pruned['removed_layers'][0]} dropped, heads {pruned['pruned_heads']}")


def write_regression_case(out_dir, source, data, tok_dir):
    """The scores alone for a regression head (MSE), on its bf16 weights widened to f32 as tach's
    training masters hold them."""
    model = AutoModelForSequenceClassification.from_pretrained(source, dtype=torch.float32).eval()
    calib = examples(data, tokenizer(tok_dir), SAMPLES, model.config.max_position_embeddings, True, regression=True)
    scores, _, _, _ = importance(model, "bert", calib)
    expected = {"samples": SAMPLES, "loss": model.config.problem_type, "head_importance": scores["heads"],
                "neuron_importance": scores["neurons"], "layer_importance": scores["layers"]}
    path = os.path.join(out_dir, "bert-regression-importance.json")
    with open(path, "w") as f:
        json.dump(expected, f)
    print(f"{path}: {model.config.problem_type}")


# tach train's masked-LM masks (train/mlm_masking.cc): every draw at position i of example e in
# epoch 0 is a splitmix64 hash of (seed, epoch, e, i, which draw).
M64 = (1 << 64) - 1
MASK_SEED = 42


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def mask_key(seed, epoch, example):
    return mix64((mix64((mix64(seed ^ 0x6d6c6d5f6d61736b) + epoch) & M64) + example * 0x9e3779b97f4a7c15) & M64)


def tach_masks(ids, special, mask_id, vocab, key, p=0.15, mask_replace=0.8, random_replace=0.1):
    bits = lambda i, d: mix64(key ^ mix64((i * 4 + d) & M64))
    uniform = lambda i, d: (bits(i, d) >> 11) * 2.0 ** -53
    random_of_rest = random_replace / (1 - mask_replace)
    ids, labels = list(ids), [-100] * len(ids)
    for i in range(len(ids)):
        if special[i] or not uniform(i, 1) < p:
            continue
        labels[i] = ids[i]
        if uniform(i, 2) < mask_replace:
            ids[i] = mask_id
        elif uniform(i, 3) < random_of_rest:
            ids[i] = bits(i, 4) % vocab
    return ids, labels


# The encoder families whose per-token heads tach trains: tests/fixtures/train_tasks/<family>-<case>.
TASK_FAMILIES = ("bert", "distilbert", "roberta", "xlm-roberta", "mpnet")
# head -> (the train_tasks case's suffix, the class that loads it)
TASKS = {
    "token-classification": ("token-cls5-f32", AutoModelForTokenClassification),
    "question-answering": ("qa-f32", AutoModelForQuestionAnswering),
    "masked-lm": ("mlm-f32", AutoModelForMaskedLM),
}


def task_rows(head, family, config, fixtures):
    """The calibration rows of a per-token head as model keyword arguments, and how many examples
    they came from. A question's window has its token types where the model has two (BERT's):
    a one-type model (RoBERTa, XLM-R) reads zeros, as its own tokenizer gives it none, and
    DistilBERT and MPNet have no types. The masked LM's texts are cut to the model's positions
    (RoBERTa's, XLM-R's and MPNet's start after padding_idx)."""
    one = lambda x: torch.tensor([x])
    with_types = getattr(config, "type_vocab_size", 0) > 1
    positions = config.max_position_embeddings - (config.pad_token_id + 1 if family in AFTER_PADDING else 0)
    if head == "token-classification":
        f = ner_features(fixtures)
        return [{"input_ids": one(i), "labels": one(l)} for i, l in zip(f["input_ids"], f["labels"])], \
            len(f["sentences"])
    if head == "question-answering":
        path = os.path.join(fixtures, "train_tasks", "squad_train.jsonl")
        f = qa_features(fixtures, path)
        rows = []
        for i in range(len(f["input_ids"])):
            kw = {"input_ids": one(f["input_ids"][i]), "start_positions": torch.tensor([f["start_positions"][i]]),
                  "end_positions": torch.tensor([f["end_positions"][i]])}
            if with_types:
                kw["token_type_ids"] = one(f["token_type_ids"][i])
            rows.append(kw)
        return rows, sum(1 for line in open(path, encoding="utf-8") if line.strip())
    tok = tokenizer(os.path.join(fixtures, "token_classes", "tokenizer-wordpiece"))
    tok.enable_truncation(positions)
    mask_id, vocab = tok.token_to_id("[MASK]"), tok.get_vocab_size()
    texts = [r["text"] for r in csv.DictReader(open(os.path.join(fixtures, "train", "tiny.csv")))][:SAMPLES]
    rows = []
    for e, text in enumerate(texts):
        enc = tok.encode(text)
        ids, labels = tach_masks(enc.ids, enc.special_tokens_mask, mask_id, vocab, mask_key(MASK_SEED, 0, e))
        if any(l != -100 for l in labels):
            rows.append({"input_ids": one(ids), "labels": one(labels)})
    return rows, len(texts)


def write_task_case(out_dir, family, head, fixtures):
    suffix, auto = TASKS[head]
    model = auto.from_pretrained(os.path.join(fixtures, "train_tasks", family + "-" + suffix, "model")).eval()
    rows, samples = task_rows(head, family, model.config, fixtures)
    scores, H, D, I = importance(model, family, rows)
    ref, pruned = prune_by_scores(model, family, scores, H, D, I)
    input_rows, pad = (ROBERTA_ROWS, 1) if family in AFTER_PADDING else (ROWS, 0)
    ids, mask = padded(input_rows, pad, False)
    with torch.no_grad():
        out = ref(input_ids=ids, attention_mask=mask)
    per_token = torch.stack([out.start_logits, out.end_logits], -1) if head == "question-answering" else out.logits
    expected = {"samples": samples, "rows": len(rows), **pruned, "input_rows": input_rows, "pad_id": pad,
                "token_logits_right": per_token.tolist()}
    path = os.path.join(out_dir, f"{family}-{head}-importance.json")
    with open(path, "w") as f:
        json.dump(expected, f)
    print(f"{path}: {len(rows)} rows of {samples} examples, layer {pruned['removed_layers'][0]} dropped, "
          f"heads {pruned.get('pruned_heads', 'kept')}")


# Decoder sequence classifiers (tests/fixtures/decoders): the scores on tiny.csv's first 20 rows,
# then pruned as make_prune_decoder_fixtures.py prunes by magnitude but ranked by these scores,
# written, loaded by transformers from the pruned files and run on its rows.
DECODER_CASES = [
    ("llama", "llama-cls-bias-f32", dict(heads=0.5, ffn=0.25, layers="1")),
    ("mistral", "mistral-cls-window4-f32", dict(heads=0.5, ffn=0.25, layers="1")),
    ("qwen2", "qwen2-cls-kv2-bf16", dict(heads=0.5, ffn=0.25, layers="1")),
    ("qwen3", "qwen3-cls-headdim16-f32", dict(heads=0.5, ffn=0.5)),
    ("gemma3", "gemma3-cls-f32", dict(heads=0.5, ffn=0.25)),
    ("modernbert", "modernbert-cls-mean-f32", dict(ffn=0.25, layers="1")),
]


# Causal LMs: L the next-token loss (transformers' labels = input_ids, shifted inside), on the same
# texts; the pruned model's LM logits, right-padded.
CAUSAL_CASES = [
    ("llama-causal-lm", "llama-lm-llama3rope-f32", dict(heads=0.5, ffn=0.25, layers="1")),
    ("mistral-causal-lm", "mistral-lm-window4-f32", dict(heads=0.5, ffn=0.25)),
    ("qwen2-causal-lm", "qwen2-lm-kv4-untied-f32", dict(heads=0.5, ffn=0.25, layers="1")),
    ("qwen3-causal-lm", "qwen3-lm-window-bf16", dict(ffn=0.25)),
]


def write_decoder_case(out_dir, family, source, opts, fixtures, causal=False):
    from make_prune_decoder_fixtures import logits as decoder_logits, names, plan, pruned_config, slice_state
    import tempfile
    from safetensors.torch import save_file
    from transformers import AutoConfig
    src = os.path.join(fixtures, "decoders", source)
    cfg = json.load(open(os.path.join(src, "config.json")))
    model_type = cfg["model_type"]
    auto = AutoModelForCausalLM if causal else AutoModelForSequenceClassification
    model = auto.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
    max_len = model.config.max_position_embeddings
    calib = examples(os.path.join(fixtures, "train", "tiny.csv"),
                     tokenizer(os.path.join(fixtures, "tokenizers", "tiny-wordpiece")), SAMPLES, max_len, False,
                     regression=model.config.num_labels == 1)
    if causal:
        for kw in calib:
            kw["labels"] = kw["input_ids"].clone()
    scores, _, _, _ = importance(model, "modernbert" if model_type == "modernbert" else "decoder", calib)
    ranked = (scores["heads"], scores["neurons"], scores["layers"])
    removed_layers, removed_groups, kept_neurons = plan(opts, cfg, ranked, model_type)
    source_types = list(AutoConfig.from_pretrained(src).layer_types or []) if "layer_types" in cfg or \
        model_type in ("qwen2", "qwen3", "gemma3_text", "modernbert") else None
    new_cfg = pruned_config(cfg, source_types, removed_layers, removed_groups, kept_neurons, model_type)
    # Tied LM heads: the embeddings alone are stored (transformers ties them again on load).
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    state = {k: v.float().clone() for k, v in model.state_dict().items() if not (tied and k == "lm_head.weight")}
    with tempfile.TemporaryDirectory() as tmp:
        save_file(slice_state(state, cfg, names(model_type), removed_layers, removed_groups, kept_neurons),
                  os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(new_cfg, f)
        pruned, info = auto.from_pretrained(tmp, dtype=torch.float32, attn_implementation="eager",
                                            output_loading_info=True)
        assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
        e = {"samples": SAMPLES, "options": opts, "head_importance": scores["heads"],
             "neuron_importance": scores["neurons"], "layer_importance": scores["layers"],
             "removed_layers": removed_layers, "removed_groups": removed_groups, "architecture": cfg["architectures"][0],
             "weights_dtype": "bf16" if source.endswith("bf16") else "f32"}
        from make_qwen2_fixtures import PAD, ROWS as DECODER_ROWS, pad  # noqa: E402
        if causal:
            # Two rows (one padded) of 256 logits a token, to 8 significant digits: enough for 1e-4.
            rows = DECODER_ROWS[:2]
            ids, mask = pad(rows, "right")
            with torch.no_grad():
                out = pruned.eval()(input_ids=ids, attention_mask=mask).logits
            e["lm_input_rows"] = rows
            e["lm_logits_right"] = [[[float(f"{x:.8g}") for x in tok] for tok in row] for row in out.tolist()]
        else:
            e.update(decoder_logits(pruned.eval()))
    e.update({"input_rows": DECODER_ROWS, "pad_id": PAD})
    path = os.path.join(out_dir, f"{family}-importance.json")
    with open(path, "w") as f:
        json.dump(e, f)
    print(f"{path}: layers {removed_layers} removed, groups {removed_groups}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--fixtures", default="tests/fixtures")
    ap.add_argument("--heads-only", action="store_true",
                    help="only the per-token heads' files (<family>-<head>-importance.json)")
    ap.add_argument("--family", action="append", choices=TASK_FAMILIES,
                    help="with --heads-only: only this family's (repeat for more; default all of them)")
    args = ap.parse_args()
    if args.family and not args.heads_only:
        ap.error("--family narrows --heads-only: give both")
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_default_dtype(torch.float32)
    for family in args.family or TASK_FAMILIES:
        for head in TASKS:
            write_task_case(args.out_dir, family, head, args.fixtures)
    if args.heads_only:
        return
    for family, source, opts in DECODER_CASES:
        write_decoder_case(args.out_dir, family, source, opts, args.fixtures)
    for family, source, opts in CAUSAL_CASES:
        write_decoder_case(args.out_dir, family, source, opts, args.fixtures, causal=True)
    for family in ("bert", "distilbert"):
        write_case(args.out_dir, family, os.path.join(args.fixtures, "encoders", family + "-cls2-f32"),
                   os.path.join(args.fixtures, "train", "tiny.csv"),
                   os.path.join(args.fixtures, "tokenizers", "tiny-wordpiece"))
    write_regression_case(args.out_dir, os.path.join(args.fixtures, "encoders", "bert-reg1-bf16"),
                          os.path.join(args.fixtures, "train", "tiny.csv"),
                          os.path.join(args.fixtures, "tokenizers", "tiny-wordpiece"))


if __name__ == "__main__":
    sys.exit(main())
