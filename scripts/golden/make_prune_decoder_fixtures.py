#!/usr/bin/env python3
"""What tach prune must write for the decoder families and ModernBERT, and what transformers
computes with it.

    scripts/golden/make_prune_decoder_fixtures.py tests/fixtures/prune

For each case, a model of tests/fixtures/decoders is pruned here by the same definition tach prune
--by magnitude uses, written independently of tach, then loaded by transformers 5 from the pruned
config.json and weights, and run on right- and left-padded batches:

- heads go as whole key/value groups: group g is query heads g*G .. (g+1)*G-1 (G = heads / key/value
  heads; transformers' repeat_kv) with key/value head g. Its score is the L2 norm of its q rows, k and
  v rows and o_proj columns; num_attention_heads and num_key_value_heads shrink, head_dim is written.
- a neuron's score: the L2 norm of its gate and up rows (ModernBERT's Wi: rows j and I + j) and its
  down column; the same count removed in every layer, the lowest of each.
- a layer's score: the norm of all its groups' and neurons' weights; layers are renumbered, and
  layer_types (sliding or full attention) keeps each kept layer's kind.
Biases (Qwen2's q/k/v, Llama's attention_bias and mlp_bias) are sliced with their rows; q_norm and
k_norm (per head_dim, shared by the heads) are kept as they are.

Each case's <name>.json holds the options, the scores, the units removed, the config.json sizes
and the logits (expected.json's fields, so a test copies it beside tach's output).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModelForSequenceClassification

sys.path.insert(0, os.path.dirname(__file__))
from make_qwen2_fixtures import PAD, ROWS, pad  # noqa: E402

# name, source fixture, tach prune options, whether layer_types is taken out of the source config
# first (a hub config written before transformers saved layer_types). The tests compare logits
# element-wise within 1e-4 (floor 1e-3): Qwen3's --ffn 0.25 left one logit at -0.0027, where f32
# rounding alone (transformers' right- and left-padded runs differ by 2e-7 there) is 1e-4 of it,
# so it removes 0.5.
CASES = [
    ("llama-pruned", "llama-cls-bias-f32", dict(heads=0.5, ffn=0.25, layers="1"), False),
    ("mistral-pruned", "mistral-cls-window4-f32", dict(heads=0.5, ffn=0.5, layers="2,"), False),
    ("qwen2-pruned", "qwen2-cls-kv2-bf16", dict(heads=0.5, ffn=0.25, layers="1"), False),
    ("qwen3-pruned", "qwen3-cls-headdim16-f32", dict(heads=0.5, ffn=0.5, layers="1"), False),
    ("gemma3-pruned", "gemma3-cls-f32", dict(heads=0.5, ffn=0.25, layers="0,"), False),
    ("modernbert-pruned", "modernbert-cls-mean-f32", dict(ffn=0.25, layers="1,"), True),
]


def lowest(scores, candidates, n):
    order = sorted(candidates, key=lambda i: (scores[i], i))
    return sorted(order[:n])


def names(model_type):
    if model_type == "modernbert":
        return dict(fused_qkv="attn.Wqkv", o="attn.Wo", fused_ffn="mlp.Wi", down="mlp.Wo")
    return dict(q="self_attn.q_proj", k="self_attn.k_proj", v="self_attn.v_proj", o="self_attn.o_proj",
                gate="mlp.gate_proj", up="mlp.up_proj", down="mlp.down_proj")


def sizes(cfg):
    H = cfg["num_attention_heads"]
    KVH = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or cfg["hidden_size"] // H
    return H, KVH, D, cfg["intermediate_size"], cfg["num_hidden_layers"]


def magnitude(state, cfg, n):
    H, KVH, D, I, L = sizes(cfg)
    G = H // KVH
    sq = lambda t: float((t.double() ** 2).sum())
    groups, neurons, layers = [], [], []
    for l in range(L):
        p = f"model.layers.{l}."
        if "fused_qkv" in n:
            qkv = state[p + n["fused_qkv"] + ".weight"]
            q, k, v = qkv[:H * D], qkv[H * D:H * D + KVH * D], qkv[H * D + KVH * D:]
        else:
            q, k, v = (state[p + n[r] + ".weight"] for r in ("q", "k", "v"))
        o = state[p + n["o"] + ".weight"]
        g_sq = [sq(q[g * G * D:(g + 1) * G * D]) + sq(k[g * D:(g + 1) * D]) + sq(v[g * D:(g + 1) * D]) +
                sq(o[:, g * G * D:(g + 1) * G * D]) for g in range(KVH)]
        if "fused_ffn" in n:
            wi = state[p + n["fused_ffn"] + ".weight"]
            gate, up = wi[:I], wi[I:]
        else:
            gate, up = state[p + n["gate"] + ".weight"], state[p + n["up"] + ".weight"]
        down = state[p + n["down"] + ".weight"].double()
        n_sq = ((gate.double() ** 2).sum(1) + (up.double() ** 2).sum(1) + (down ** 2).sum(0)).tolist()
        groups.append([s ** 0.5 for s in g_sq])
        neurons.append([s ** 0.5 for s in n_sq])
        layers.append((sum(g_sq) + sum(n_sq)) ** 0.5)
    return groups, neurons, layers


def plan(opts, cfg, scores, model_type):
    H, KVH, D, I, L = sizes(cfg)
    groups, neurons, layers = scores
    spec = opts.get("layers", "")
    if "," in spec:
        removed_layers = sorted(int(x) for x in spec.split(",") if x)
    elif spec:
        first = 1 if model_type == "modernbert" else 0  # ModernBERT keeps layer 0 (no attention norm)
        removed_layers = lowest(layers, list(range(first, L)), int(spec))
    else:
        removed_layers = []
    n_groups = round(opts.get("heads", 0) * KVH)
    removed_groups = [lowest(groups[l], list(range(KVH)), n_groups) for l in range(L)]
    n_neurons = round(opts.get("ffn", 0) * I)
    kept_neurons = [sorted(set(range(I)) - set(lowest(neurons[l], list(range(I)), n_neurons))) for l in range(L)]
    return removed_layers, removed_groups, kept_neurons


def slice_state(state, cfg, n, removed_layers, removed_groups, kept_neurons):
    H, KVH, D, I, L = sizes(cfg)
    G = H // KVH
    kept_layers = [l for l in range(L) if l not in removed_layers]
    out = {}
    for name, t in state.items():
        if not name.startswith("model.layers."):
            out[name] = t
            continue
        l, role = name[len("model.layers."):].split(".", 1)
        l = int(l)
        if l not in kept_layers:
            continue
        groups = [g for g in range(KVH) if g not in removed_groups[l]]
        q_rows = [g * G * D + i for g in groups for i in range(G * D)]
        kv_rows = [g * D + i for g in groups for i in range(D)]
        keep = kept_neurons[l]
        module = role.rsplit(".", 1)[0]
        if module == n.get("q"):
            t = t[q_rows]
        elif module in (n.get("k"), n.get("v")):
            t = t[kv_rows]
        elif role == n["o"] + ".weight":
            t = t[:, q_rows]
        elif module in (n.get("gate"), n.get("up")):
            t = t[keep]
        elif module == n.get("fused_ffn"):
            t = t[keep + [I + j for j in keep]]
        elif role == n["down"] + ".weight":
            t = t[:, keep]
        out[f"model.layers.{kept_layers.index(l)}.{role}"] = t.contiguous()
    return out


def pruned_config(cfg, source_types, removed_layers, removed_groups, kept_neurons, model_type):
    H, KVH, D, I, L = sizes(cfg)
    G = H // KVH
    out = dict(cfg)
    kept_layers = [l for l in range(L) if l not in removed_layers]
    if removed_layers:
        out["num_hidden_layers"] = len(kept_layers)
    if removed_layers and source_types:
        kept_types = [source_types[l] for l in kept_layers]
        rule = AutoConfig.for_model(**{k: v for k, v in out.items() if k != "layer_types"}).layer_types \
            if model_type in ("qwen2", "qwen3", "gemma3_text", "modernbert") else None
        if "layer_types" in cfg or (rule is not None and list(rule) != kept_types):
            out["layer_types"] = kept_types
    if removed_groups[0]:
        out["num_key_value_heads"] = KVH - len(removed_groups[0])
        out["num_attention_heads"] = (KVH - len(removed_groups[0])) * G
        out["head_dim"] = D
    out["intermediate_size"] = len(kept_neurons[0])
    return out


def logits(model):
    e = {}
    with torch.no_grad():
        for side in ("right", "left"):
            ids, mask = pad(ROWS, side)
            e[f"logits_{side}"] = model(input_ids=ids, attention_mask=mask).logits.tolist()
    return e


def write_case(out_dir, fixtures, name, source, opts, strip_layer_types):
    src = os.path.join(fixtures, source)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    model_type = cfg["model_type"]
    # The kinds the source's layers have, as transformers reads the source config.
    source_types = list(AutoConfig.from_pretrained(src).layer_types or []) if "layer_types" in cfg or \
        model_type in ("qwen2", "qwen3", "gemma3_text", "modernbert") else None
    if strip_layer_types:
        cfg.pop("layer_types")
    state = load_file(os.path.join(src, "model.safetensors"))
    n = names(model_type)
    scores = magnitude(state, cfg, n)
    removed_layers, removed_groups, kept_neurons = plan(opts, cfg, scores, model_type)
    new_cfg = pruned_config(cfg, source_types, removed_layers, removed_groups, kept_neurons, model_type)
    with tempfile.TemporaryDirectory() as tmp:
        save_file(slice_state(state, cfg, n, removed_layers, removed_groups, kept_neurons),
                  os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(new_cfg, f)
        model, info = AutoModelForSequenceClassification.from_pretrained(
            tmp, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
        model.eval()
        # Every tensor read from the pruned file, none initialised anew.
        assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], (name, info)
        kept_types = list(model.config.layer_types) if getattr(model.config, "layer_types", None) else None
        if source_types:  # the pruned model's layers keep their kinds
            kept = [l for l in range(cfg["num_hidden_layers"]) if l not in removed_layers]
            assert kept_types == [source_types[l] for l in kept], (name, kept_types)
    weights = "bf16" if state[next(iter(state))].dtype == torch.bfloat16 else "f32"
    e = {"source": source, "options": opts, "strip_layer_types": strip_layer_types,
         "head_magnitude": scores[0], "neuron_magnitude": scores[1], "layer_magnitude": scores[2],
         "removed_layers": removed_layers, "removed_groups": removed_groups,
         "config": {k: new_cfg[k] for k in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                            "head_dim", "intermediate_size", "layer_types") if k in new_cfg},
         "input_rows": ROWS, "pad_id": PAD, "weights_dtype": weights, "architecture": cfg["architectures"][0]}
    e.update(logits(model))
    path = os.path.join(out_dir, name + ".json")
    with open(path, "w") as f:
        json.dump(e, f)
    print(f"{path}: layers {removed_layers} removed, groups {removed_groups}, FFN {len(kept_neurons[0])} kept")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--fixtures", default="tests/fixtures/decoders")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name, source, opts, strip in CASES:
        write_case(args.out_dir, args.fixtures, name, source, opts, strip)


if __name__ == "__main__":
    sys.exit(main())
