#!/usr/bin/env python3
"""Writes tiny Llama, Mistral, Qwen3, Gemma 3 and ModernBERT models with transformers' own save_pretrained,
and what transformers computes with them: classifier logits for right- and left-padded batches,
vocabulary logits, and the greedy tokens of generate(do_sample=False). Each case turns on the
switches its family differs by (biases, llama3/yarn RoPE, sliding windows shorter than the rows,
q/k norms, a head_dim that is not hidden/heads, Gemma's norms, scaling and softcapping).

    scripts/golden/make_decoder_fixtures.py tests/fixtures/decoders
    scripts/golden/make_decoder_fixtures.py --base build/golden   # Llama-3.2-1B and Qwen3-0.6B sized, not committed

Development only (torch, transformers). References are computed in float32 from the weights as
stored, with eager attention. The configs name no eos token, so generation runs its full length.
"""
import argparse
import json
import os
import sys

import torch
import transformers as tf

from make_qwen2_fixtures import DTYPES, NEW_TOKENS, PAD, ROWS, pad

CAUSAL = ("ForCausalLM",)


def common(**kw):
    base = dict(vocab_size=256, hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, initializer_range=0.2,
                pad_token_id=PAD, eos_token_id=None, bos_token_id=None)
    base.update(kw)
    return base


def llama(**kw):
    return tf.LlamaConfig(**common(**kw))


def mistral(**kw):
    return tf.MistralConfig(**common(**kw))


def qwen3(**kw):
    return tf.Qwen3Config(**common(**kw))


def gemma3(**kw):
    kw = common(**kw)
    kw.setdefault("query_pre_attn_scalar", 12)
    kw.setdefault("head_dim", 8)
    return tf.Gemma3TextConfig(**kw)


def modernbert(**kw):
    # 4 layers: 0 and 3 global (rotary base 160), 1 and 2 local (base 10) seeing 2 keys on either
    # side (local_attention 4), so the window is shorter than the rows.
    base = dict(vocab_size=256, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
                max_position_embeddings=64, norm_eps=1e-5, initializer_range=0.2, pad_token_id=PAD,
                bos_token_id=None, eos_token_id=None, cls_token_id=None, sep_token_id=None, local_attention=4,
                global_attn_every_n_layers=3, global_rope_theta=160.0, local_rope_theta=10.0)
    base.update(kw)
    return tf.ModernBertConfig(**base)


LLAMA3_ROPE = {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8, "rope_theta": 500.0}
YARN_ROPE = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "rope_theta": 10000.0}

# name, config, class, stored dtype
CASES = [
    ("llama-cls-bias-f32", lambda: llama(num_labels=3, attention_bias=True, mlp_bias=True),
     tf.LlamaForSequenceClassification, "f32"),
    ("llama-lm-llama3rope-f32", lambda: llama(tie_word_embeddings=True, head_dim=16, rope_parameters=LLAMA3_ROPE),
     tf.LlamaForCausalLM, "f32"),
    ("llama-lm-yarn-bf16", lambda: llama(tie_word_embeddings=False, rope_parameters=YARN_ROPE),
     tf.LlamaForCausalLM, "bf16"),
    ("mistral-cls-window4-f32", lambda: mistral(num_labels=2, sliding_window=4), tf.MistralForSequenceClassification,
     "f32"),
    ("mistral-lm-window4-f32", lambda: mistral(sliding_window=4, tie_word_embeddings=False), tf.MistralForCausalLM,
     "f32"),
    ("qwen3-cls-headdim16-f32", lambda: qwen3(num_labels=4, head_dim=16), tf.Qwen3ForSequenceClassification, "f32"),
    ("qwen3-lm-window-bf16",
     lambda: qwen3(head_dim=16, tie_word_embeddings=True, use_sliding_window=True, sliding_window=4, max_window_layers=1),
     tf.Qwen3ForCausalLM, "bf16"),
    ("gemma3-cls-f32",
     lambda: gemma3(num_labels=3, sliding_window=4, layer_types=["sliding_attention", "sliding_attention", "full_attention"]),
     tf.Gemma3TextForSequenceClassification, "f32"),
    ("gemma3-lm-softcap-f32",
     lambda: gemma3(sliding_window=4, final_logit_softcapping=3.0,
                    layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                    rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}}),
     tf.Gemma3ForCausalLM, "f32"),
    ("gemma3-lm-bf16", lambda: gemma3(sliding_window=4), tf.Gemma3ForCausalLM, "bf16"),
    ("modernbert-cls-mean-f32", lambda: modernbert(num_labels=3, classifier_pooling="mean", classifier_bias=True),
     tf.ModernBertForSequenceClassification, "f32"),
    ("modernbert-cls-bias-bf16", lambda: modernbert(num_labels=2, classifier_pooling="cls", attention_bias=True,
                                                    mlp_bias=True),
     tf.ModernBertForSequenceClassification, "bf16"),
    ("modernbert-base-model-f32", lambda: modernbert(), tf.ModernBertModel, "f32"),
]


def expectations(ref, cls, rows, pad_id):
    e = {}
    causal = cls.__name__.endswith(CAUSAL)
    with torch.no_grad():
        for side in ("right", "left"):
            ids, mask = pad(rows, side)
            out = ref(input_ids=ids, attention_mask=mask)
            if not hasattr(out, "logits"):
                # A bare encoder: the hidden states at real positions (padding carries no meaning).
                e[f"hidden_{side}"] = [out.last_hidden_state[i, (0 if side == "right" else ids.shape[1] - len(r)):][:len(r)].tolist()
                                       for i, r in enumerate(rows)]
            elif not causal:
                e[f"logits_{side}"] = out.logits.tolist()
            elif side == "right":
                # Vocabulary logits at real positions only (padding carries no meaning).
                e["lm_logits_right"] = [out.logits[i, :len(r)].tolist() for i, r in enumerate(rows)]
        if causal:
            ids, mask = pad(rows, "left")
            gen = ref.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW_TOKENS, do_sample=False,
                               pad_token_id=pad_id, eos_token_id=None)
            e["generated"] = gen[:, ids.shape[1]:].tolist()
            e["new_tokens"] = NEW_TOKENS
    return e


def init_norms(model, seed):
    """Random norm weights (transformers starts them at 1, or Gemma's at 0): a norm that is read
    wrongly, or not at all, must change the numbers."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(p + 0.3 * torch.randn(p.shape, generator=g))


def write_case(out_dir, name, make_config, cls, dtype, seed):
    torch.manual_seed(seed)
    model = cls(make_config()).eval()
    init_norms(model, seed)
    model = model.to(DTYPES[dtype])
    path = os.path.join(out_dir, name)
    model.save_pretrained(path, safe_serialization=True)
    ref = cls.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
    e = {"input_rows": ROWS, "pad_id": PAD, "weights_dtype": dtype, "architecture": cls.__name__}
    e.update(expectations(ref, cls, ROWS, PAD))
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(e, f)
    print(f"{path}: {cls.__name__}, weights {dtype}")


EMBED_TEXTS = ["What is the capital of China?", "Explain gravity", " ", "The capital of China is Beijing.",
               "Gravity is a force that attracts two bodies towards each other."]
QUERY_PROMPT = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"


def write_embedding_case(out_dir, shared, seed):
    """A Qwen3-Embedding-shaped sentence-transformers model: a bare Qwen3 with Qwen2.5's full
    vocabulary (hidden 8, bf16: small enough to commit), last-token pooling, normalisation, and
    the query/document prompts of config_sentence_transformers.json. The expected embeddings are
    SentenceTransformer.encode's, with ../shared/tokenizers/qwen2.5 (left padding, as Qwen3-Embedding)."""
    import shutil
    import tempfile
    from sentence_transformers import SentenceTransformer
    torch.manual_seed(seed)
    cfg = tf.Qwen3Config(vocab_size=151936, hidden_size=8, intermediate_size=16, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=512,
                         rope_parameters={"rope_type": "default", "rope_theta": 1e6}, tie_word_embeddings=True,
                         initializer_range=0.5, pad_token_id=151643, eos_token_id=151643, bos_token_id=None)
    model = tf.Qwen3Model(cfg).eval()
    init_norms(model, seed)
    model = model.to(torch.bfloat16)
    path = os.path.join(out_dir, "qwen3-embed-bf16")
    model.save_pretrained(path, safe_serialization=True)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    json.dump(modules, open(os.path.join(path, "modules.json"), "w"), indent=1)
    os.makedirs(os.path.join(path, "1_Pooling"), exist_ok=True)
    json.dump({"word_embedding_dimension": 8, "pooling_mode_lasttoken": True, "include_prompt": True},
              open(os.path.join(path, "1_Pooling", "config.json"), "w"), indent=1)
    json.dump({"max_seq_length": 512, "do_lower_case": False}, open(os.path.join(path, "sentence_bert_config.json"), "w"))
    json.dump({"prompts": {"query": QUERY_PROMPT, "document": ""}, "default_prompt_name": None,
               "similarity_fn_name": "cosine"}, open(os.path.join(path, "config_sentence_transformers.json"), "w"), indent=1)
    e = {"texts": EMBED_TEXTS, "prompt_name": "query", "prompt": QUERY_PROMPT}
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(path, d, dirs_exist_ok=True)
        shutil.copy(os.path.join(shared, "tokenizers/qwen2.5/tokenizer.json"), d)
        json.dump({"padding_side": "left", "pad_token": "<|endoftext|>", "model_max_length": 512,
                   "tokenizer_class": "Qwen2TokenizerFast"}, open(os.path.join(d, "tokenizer_config.json"), "w"))
        st = SentenceTransformer(d, device="cpu", model_kwargs={"dtype": torch.float32, "attn_implementation": "eager"})
        e["query"] = st.encode(EMBED_TEXTS, prompt_name="query", convert_to_numpy=True).tolist()
        e["plain"] = st.encode(EMBED_TEXTS, convert_to_numpy=True).tolist()
    json.dump(e, open(os.path.join(path, "expected.json"), "w"))
    print(f"{path}: Qwen3Model + last-token pooling + Normalize, prompts query/document")


def write_base(out_dir, seed):
    """Llama-3.2-1B and Qwen3-0.6B sized causal LMs with random weights (f32): the speed peers.
    The configs are the presets' (tach's src/model/presets_decoders.cc, as published)."""
    specs = {
        "llama-3.2-1b-random": tf.LlamaConfig(
            vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
            num_key_value_heads=8, head_dim=64, max_position_embeddings=131072, rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192, "rope_theta": 500000.0},
            tie_word_embeddings=True, bos_token_id=128000, eos_token_id=128001),
        "qwen3-0.6b-random": tf.Qwen3Config(
            vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
            num_key_value_heads=8, head_dim=128, max_position_embeddings=40960, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=True,
            bos_token_id=151643, eos_token_id=151645),
    }
    for name, config in specs.items():
        torch.manual_seed(seed)
        cls = tf.LlamaForCausalLM if isinstance(config, tf.LlamaConfig) else tf.Qwen3ForCausalLM
        model = cls(config).eval()
        path = os.path.join(out_dir, name)
        model.save_pretrained(path, safe_serialization=True)
        print(f"{path}: {sum(p.numel() for p in model.parameters())} parameters, f32")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--base", action="store_true")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    ap.add_argument("--seed", type=int, default=8765)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    if args.base:
        write_base(args.out_dir, args.seed)
        return
    only = os.environ.get("ONLY")
    for i, (name, make_config, cls, dtype) in enumerate(CASES):
        if only and name != only:
            continue
        write_case(args.out_dir, name, make_config, cls, dtype, args.seed + i)
    if not only or only == "qwen3-embed-bf16":
        write_embedding_case(args.out_dir, args.shared, args.seed + 100)


if __name__ == "__main__":
    sys.exit(main())
