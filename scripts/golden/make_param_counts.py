#!/usr/bin/env python3
"""transformers' parameter counts for the configs tach estimate reads.

    scripts/golden/make_param_counts.py tests/fixtures/estimate

Writes param_counts.json: for every preset whose config tach holds (read from tach's sources,
src/model/presets*.cc and src/estimate/architecture_reader.cc, so the two cannot drift apart), the
number of parameters of the model transformers builds from it (AutoModelFor{CausalLM,
SequenceClassification}.from_config on the meta device, or the per-token head a preset's config
names: masked LM, question answering; tied weights once), and tiny Mixtral,
Qwen2-MoE (with mlp_only_layers and a sparse step), Qwen3-MoE, DeepSeek-V3 (with and without
q_lora_rank) and Granite (a model_type tach does not know: the generic estimate) configs, each
written as configs/<name>/config.json with its count.
Development only (torch, transformers).
"""
import json
import os
import re
import sys

import torch
import transformers as tf

ROOT = os.path.join(os.path.dirname(__file__), "../..")
SOURCES = ["src/model/presets.cc", "src/model/presets_decoders.cc", "src/estimate/architecture_reader.cc"]

TINY = {
    "mixtral-tiny": dict(model_type="mixtral", hidden_size=32, intermediate_size=24, num_attention_heads=4,
                         num_key_value_heads=2, num_hidden_layers=3, num_local_experts=4, num_experts_per_tok=2,
                         vocab_size=100),
    "qwen2-moe-tiny": dict(model_type="qwen2_moe", hidden_size=32, intermediate_size=40, moe_intermediate_size=12,
                           shared_expert_intermediate_size=20, num_experts=6, num_experts_per_tok=2,
                           decoder_sparse_step=2, mlp_only_layers=[3], num_attention_heads=4, num_key_value_heads=4,
                           num_hidden_layers=5, vocab_size=100),
    "qwen3-moe-tiny": dict(model_type="qwen3_moe", hidden_size=32, intermediate_size=40, moe_intermediate_size=12,
                           num_experts=6, num_experts_per_tok=2, num_attention_heads=4, num_key_value_heads=2,
                           head_dim=16, num_hidden_layers=3, vocab_size=100, tie_word_embeddings=False),
    "deepseek-v3-tiny": dict(model_type="deepseek_v3", hidden_size=32, intermediate_size=48, moe_intermediate_size=8,
                             n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=2, first_k_dense_replace=1,
                             n_group=2, topk_group=1, num_attention_heads=4, num_key_value_heads=4,
                             num_hidden_layers=3, q_lora_rank=16, kv_lora_rank=12, qk_nope_head_dim=8,
                             qk_rope_head_dim=4, v_head_dim=6, vocab_size=100),
    "deepseek-v3-noqlora-tiny": dict(model_type="deepseek_v3", hidden_size=32, intermediate_size=48,
                                     moe_intermediate_size=8, n_routed_experts=8, n_shared_experts=1,
                                     num_experts_per_tok=2, first_k_dense_replace=2, n_group=2, topk_group=1,
                                     num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=3,
                                     q_lora_rank=None, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4,
                                     v_head_dim=6, vocab_size=100),
    "granite-tiny": dict(model_type="granite", hidden_size=32, intermediate_size=48, num_attention_heads=4,
                         num_key_value_heads=2, num_hidden_layers=2, vocab_size=100, tie_word_embeddings=True),
}


def preset_configs():
    out = {}
    for src in SOURCES:
        text = open(os.path.join(ROOT, src)).read()
        consts = {m.group(1): m.group(2) for m in re.finditer(r'constexpr const char\* (k\w+) = R"json\((.*?)\)json";', text, re.S)}
        for m in re.finditer(r'\{"([\w.\-]+)",(?:[^{}]|\{[^{}]*\})*?\b(k\w+)\}', text):
            if m.group(2) in consts:
                out[m.group(1)] = json.loads(consts[m.group(2)])
    return out


def count(cfg):
    cfg = dict(cfg)
    model_type = cfg.pop("model_type")
    arch = (cfg.pop("architectures", None) or [""])[0]
    config = tf.AutoConfig.for_model(model_type, **{k: v for k, v in cfg.items() if k not in ("torch_dtype",)})
    cls = tf.AutoModelForSequenceClassification if arch.endswith("ForSequenceClassification") else tf.AutoModelForCausalLM
    if arch.endswith("Model") and model_type not in ("bert", "distilbert"):
        cls = tf.AutoModel
    if model_type in ("bert", "distilbert"):
        cls = tf.AutoModelForSequenceClassification  # tach's encoder presets are classifiers...
    for suffix, auto in (("ForMaskedLM", tf.AutoModelForMaskedLM), ("ForQuestionAnswering", tf.AutoModelForQuestionAnswering),
                         ("ForTokenClassification", tf.AutoModelForTokenClassification)):
        if arch.endswith(suffix) and model_type != "modernbert":
            cls = auto  # ...unless their config names a per-token head (the masked LMs as published)
    with torch.device("meta"):
        model = cls.from_config(config)
    return sum(p.numel() for p in model.parameters())


def main():
    out_dir = sys.argv[1]
    counts = {}
    for name, cfg in preset_configs().items():
        counts["preset:" + name] = count(cfg)
        print(name, counts["preset:" + name])
    for name, cfg in TINY.items():
        d = os.path.join(out_dir, "configs", name)
        os.makedirs(d, exist_ok=True)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=1)
        counts["configs/" + name] = count(cfg)
        print(name, counts["configs/" + name])
    json.dump({"transformers": tf.__version__, "counts": counts}, open(os.path.join(out_dir, "param_counts.json"), "w"),
              indent=1)


if __name__ == "__main__":
    sys.exit(main())
