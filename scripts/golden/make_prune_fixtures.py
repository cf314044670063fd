#!/usr/bin/env python3
"""Head- and FFN-pruned encoder checkpoints, and what transformers computes for them.

    scripts/golden/make_prune_fixtures.py tests/fixtures/prune

transformers 5 no longer prunes heads (transformers 4's prune_heads and config.json's pruned_heads
are gone), so the pruned checkpoints are written here by slicing the tensors as prune_heads did:
a layer's query, key and value keep the rows of its remaining heads and the attention output the
matching columns, in the original order, and config.json lists the removed heads under
pruned_heads. FFN neurons are removed the same way (intermediate rows, output columns) with a
smaller intermediate size, which transformers 5 reads.

The reference logits come from the unpruned model in transformers with the removed units
silenced: a head whose value rows and bias are zero adds nothing to the attention output, and a
neuron whose input row and bias are zero has GELU(0) = 0, so the model computes exactly what the
pruned one does. Both right- and left-padded batches.

magnitude.json: each head's and neuron's weight magnitude on tests/fixtures/encoders/bert-cls2-f32,
the definition tach prune --by magnitude ranks by (the L2 norm of the unit's weights: a head's
query, key and value rows and its attention-output columns; a neuron's intermediate row and its
output column), and the logits of that model pruned by those scores (--heads 0.5 --ffn 0.25
--layers 1), as transformers computes them.
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import (AutoModelForSequenceClassification, BertConfig, BertForSequenceClassification,
                          DistilBertConfig, DistilBertForSequenceClassification, RobertaConfig,
                          RobertaForSequenceClassification)

ROWS = [[101, 7, 19, 33, 54, 102], [101, 88, 102], [101, 5, 6, 7, 8, 9, 10, 11, 12, 102], [101, 119, 3, 102, 40, 41, 102]]
ROBERTA_ROWS = [[0, 7, 19, 33, 54, 2], [0, 88, 2], [0, 5, 6, 7, 8, 9, 10, 11, 12, 2], [0, 119, 3, 2, 2, 40, 1, 41, 2]]

# Per family: the config class, model class, names under the body's layer prefix, config keys.
FAMILIES = {
    "bert": dict(cls=BertForSequenceClassification, layer="bert.encoder.layer.{}.",
                 q="attention.self.query", k="attention.self.key", v="attention.self.value",
                 o="attention.output.dense", fin="intermediate.dense", fout="output.dense",
                 ffn_key="intermediate_size", layers_key="num_hidden_layers"),
    "distilbert": dict(cls=DistilBertForSequenceClassification, layer="distilbert.transformer.layer.{}.",
                       q="attention.q_lin", k="attention.k_lin", v="attention.v_lin", o="attention.out_lin",
                       fin="ffn.lin1", fout="ffn.lin2", ffn_key="hidden_dim", layers_key="n_layers"),
    "roberta": dict(cls=RobertaForSequenceClassification, layer="roberta.encoder.layer.{}.",
                    q="attention.self.query", k="attention.self.key", v="attention.self.value",
                    o="attention.output.dense", fin="intermediate.dense", fout="output.dense",
                    ffn_key="intermediate_size", layers_key="num_hidden_layers"),
}


def configs():
    return {
        "bert": BertConfig(vocab_size=120, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=40, max_position_embeddings=32, type_vocab_size=2,
                           initializer_range=0.2, num_labels=2),
        "distilbert": DistilBertConfig(vocab_size=120, dim=16, n_layers=2, n_heads=4, hidden_dim=40,
                                       max_position_embeddings=32, initializer_range=0.2, num_labels=2),
        "roberta": RobertaConfig(vocab_size=120, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=40, max_position_embeddings=32, type_vocab_size=1,
                                 pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5,
                                 initializer_range=0.2, num_labels=2),
    }


def padded(rows, pad, left):
    T = max(len(r) for r in rows)
    fill = lambda r: [pad] * (T - len(r))
    ids = [fill(r) + r if left else r + fill(r) for r in rows]
    mask = [[0] * (T - len(r)) + [1] * len(r) if left else [1] * len(r) + [0] * (T - len(r)) for r in rows]
    return torch.tensor(ids), torch.tensor(mask)


def logits(model, rows, pad):
    out = {}
    with torch.no_grad():
        for left in (False, True):
            ids, mask = padded(rows, pad, left)
            out["logits_left" if left else "logits_right"] = model(input_ids=ids, attention_mask=mask).logits.tolist()
    return out


def head_rows(heads, D):
    return [h * D + d for h in heads for d in range(D)]


def prune_state(state, fam, layers, heads_removed, neurons_kept, H, D, layers_kept):
    """The pruned state dict: removed heads' and neurons' slices dropped, layers renumbered."""
    out = {}
    prefix = fam["layer"].split("{}")[0]
    for name, t in state.items():
        if not name.startswith(prefix):
            out[name] = t
            continue
        layer, rest = name[len(prefix):].split(".", 1)
        layer = int(layer)
        if layer not in layers_kept:
            continue
        keep_heads = [h for h in range(H) if h not in heads_removed.get(layer, [])]
        rows = head_rows(keep_heads, D)
        keep = torch.tensor(neurons_kept[layer]) if neurons_kept else None
        if any(rest.startswith(fam[r] + ".") for r in ("q", "k", "v")):
            t = t[rows]
        elif rest == fam["o"] + ".weight":
            t = t[:, rows]
        elif keep is not None and rest.startswith(fam["fin"] + "."):
            t = t[keep]
        elif keep is not None and rest == fam["fout"] + ".weight":
            t = t[:, keep]
        out[prefix + str(layers_kept.index(layer)) + "." + rest] = t.contiguous()
    return out


def silenced(model, fam, heads_removed, neurons_removed, D):
    """The unpruned model with the removed heads' values and neurons' inputs zero."""
    state = model.state_dict()
    with torch.no_grad():
        for layer, heads in heads_removed.items():
            p = fam["layer"].format(layer) + fam["v"]
            for h in heads:
                state[p + ".weight"][h * D:(h + 1) * D] = 0
                state[p + ".bias"][h * D:(h + 1) * D] = 0
        for layer, neurons in neurons_removed.items():
            p = fam["layer"].format(layer) + fam["fin"]
            for j in neurons:
                state[p + ".weight"][j] = 0
                state[p + ".bias"][j] = 0
    model.load_state_dict(state)
    return model


def write_pruned_case(out_dir, family, seed):
    fam = FAMILIES[family]
    torch.manual_seed(seed)
    config = configs()[family]
    model = fam["cls"](config).eval()
    H = 4
    D = 16 // H
    heads_removed = {0: [1, 3], 1: [2]}
    g = torch.Generator().manual_seed(seed)
    neurons_kept = {l: sorted(torch.randperm(40, generator=g)[:24].tolist()) for l in range(2)}
    neurons_removed = {l: [j for j in range(40) if j not in kept] for l, kept in neurons_kept.items()}
    path = os.path.join(out_dir, family + "-pruned")
    os.makedirs(path, exist_ok=True)
    state = prune_state(model.state_dict(), fam, 2, heads_removed, neurons_kept, H, D, [0, 1])
    save_file(state, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    cfg = config.to_dict()
    cfg["architectures"] = [fam["cls"].__name__]
    cfg["pruned_heads"] = {str(l): h for l, h in heads_removed.items()}
    cfg[fam["ffn_key"]] = 24
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    rows, pad = (ROBERTA_ROWS, 1) if family == "roberta" else (ROWS, 0)
    ref = silenced(model, fam, heads_removed, neurons_removed, D)
    expected = {"input_rows": rows, "pad_id": pad, "architecture": fam["cls"].__name__, "weights_dtype": "f32"}
    expected.update(logits(ref, rows, pad))
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(expected, f)
    print(f"{path}: heads {heads_removed} removed, 24 of 40 neurons kept")


def magnitude_scores(state, fam, layers, H, D):
    heads, neurons = [], []
    for l in range(layers):
        p = fam["layer"].format(l)
        q, k, v = (state[p + fam[r] + ".weight"] for r in ("q", "k", "v"))
        o = state[p + fam["o"] + ".weight"]
        heads.append([float(torch.sqrt(sum((w[h * D:(h + 1) * D].double() ** 2).sum() for w in (q, k, v)) +
                                       (o[:, h * D:(h + 1) * D].double() ** 2).sum())) for h in range(H)])
        fin, fout = state[p + fam["fin"] + ".weight"].double(), state[p + fam["fout"] + ".weight"].double()
        neurons.append(torch.sqrt((fin ** 2).sum(1) + (fout ** 2).sum(0)).tolist())
    return heads, neurons


def write_magnitude_case(out_dir, source):
    """tach prune --by magnitude --heads 0.5 --ffn 0.25 --layers 1 on the BERT fixture."""
    fam = FAMILIES["bert"]
    state = load_file(os.path.join(source, "model.safetensors"))
    H, D, I, L = 4, 4, 40, 2
    heads, neurons = magnitude_scores(state, fam, L, H, D)
    # A layer's score: the norm of all its heads' and neurons' weights together.
    layer_scores = [float((torch.tensor(heads[l]) ** 2).sum() + (torch.tensor(neurons[l]) ** 2).sum()) ** 0.5
                    for l in range(L)]
    drop_layer = min(range(L), key=lambda l: layer_scores[l])
    kept_layers = [l for l in range(L) if l != drop_layer]
    low = lambda s, n: sorted(sorted(range(len(s)), key=lambda i: (s[i], i))[:n])
    heads_removed = {l: low(heads[l], 2) for l in kept_layers}
    neurons_kept = {l: sorted(set(range(I)) - set(low(neurons[l], 10))) for l in kept_layers}
    model = AutoModelForSequenceClassification.from_pretrained(source).eval()
    # The reference: the kept layer alone (transformers reads a smaller num_hidden_layers), its
    # removed units silenced.
    small_state = prune_state(model.state_dict(), fam, L, {}, None, H, D, kept_layers)
    config = model.config
    config.num_hidden_layers = len(kept_layers)
    small = BertForSequenceClassification(config).eval()
    small.load_state_dict(small_state)
    renumber = lambda d: {kept_layers.index(l): v for l, v in d.items()}
    ref = silenced(small, fam, renumber(heads_removed),
                   renumber({l: [j for j in range(I) if j not in k] for l, k in neurons_kept.items()}), D)
    expected = {"head_magnitude": heads, "neuron_magnitude": neurons, "layer_magnitude": layer_scores,
                "removed_layers": [drop_layer],
                "pruned_heads": {str(kept_layers.index(l)): h for l, h in heads_removed.items()},
                "input_rows": ROWS, "pad_id": 0, "architecture": "BertForSequenceClassification",
                "weights_dtype": "f32"}
    expected.update(logits(ref, ROWS, 0))
    path = os.path.join(out_dir, "bert-magnitude.json")
    with open(path, "w") as f:
        json.dump(expected, f)
    print(f"{path}: layer {drop_layer} dropped, heads {heads_removed}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--source", default="tests/fixtures/encoders/bert-cls2-f32")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for i, family in enumerate(FAMILIES):
        write_pruned_case(args.out_dir, family, 4321 + i)
    write_magnitude_case(args.out_dir, args.source)


if __name__ == "__main__":
    sys.exit(main())
