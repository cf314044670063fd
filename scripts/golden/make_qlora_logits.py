#!/usr/bin/env python3
"""QLoRA references: the base loaded in 4-bit by transformers + bitsandbytes (NF4, blocks of 64,
double quantization, f32 compute, on the CPU), with peft's adapter from adapter_init on top.

    scripts/golden/make_qlora_logits.py tests/fixtures [case ...]

Writes tests/fixtures/lora/<case>/qlora_logits.json: the logits (eval mode) on every batch of
tests/fixtures/train/<case>/batches.json. The trained heads (classifier, DistilBERT's
pre_classifier, score) stay out of quantization, as in tach; BERT's frozen pooler is quantized
in both.
The per-token heads likewise, from the models and adapters of tests/fixtures/train_tasks and
train_tasks_lora: tests/fixtures/train_tasks_lora/<case>/qlora_logits.json holds, per batch, a
row per token (B * T rows, padding included): the masked LM's vocabulary logits, the token
classifier's labels, question answering's (start, end). The trained qa_outputs and classifier
stay f32; the masked LM's frozen transform dense is quantized in both, and its decoder (the
word embeddings, tied) in neither: naming the skipped modules replaces transformers' default,
which would have skipped the tied output embeddings itself.
bitsandbytes' CPU search for the nearest 8-bit code of a block's absmax (double quantization) is
approximate and can pick the code one step past the nearest (tests/test_nf4.cc); tach searches
exactly. Where it did, the file also holds "logits_nearest_absmax": the same forward with every
absmax code the nearest one (the codes bitsandbytes picked otherwise: "absmax_codes_not_nearest").
For the per-token heads, one backward too, on the nearest codes (dropout off): "loss0", the loss of
batch 0 with its labels, and qlora_grads.safetensors beside, every trainable parameter's gradient
(the adapters and the heads saved whole) by tach's name; the frozen NF4 base passes dX through
bitsandbytes' MatMul4Bit backward (its weight dequantized, f32).
Development only: run with the virtualenv that has torch, transformers, peft and bitsandbytes.
"""
import json
import os
import sys

import bitsandbytes
import peft
import torch
import transformers
from peft import PeftModel
from bitsandbytes.backends.default.ops import _dequantize_4bit_compute
from bitsandbytes.backends.utils import _get_4bit_code
from make_task_lora_golden import model_inputs, tach_name
from safetensors.torch import save_file
from transformers import (AutoModelForMaskedLM, AutoModelForQuestionAnswering, AutoModelForSequenceClassification,
                          AutoModelForTokenClassification, BitsAndBytesConfig)

# case: (base model, the case's LoRA directory (adapter_init; the output goes there), batches.json, class)
CASES = {
    "distilbert-cls2-f32": ("encoders/distilbert-cls2-f32", "lora/distilbert-cls2-f32",
                            "train/distilbert-cls2-f32", AutoModelForSequenceClassification),
    "bert-cls2-f32": ("encoders/bert-cls2-f32", "lora/bert-cls2-f32", "train/bert-cls2-f32",
                      AutoModelForSequenceClassification),
    "qwen2-cls-kv1-f32": ("decoders/qwen2-cls-kv1-f32", "lora/qwen2-cls-kv1-f32", "train/qwen2-cls-kv1-f32",
                          AutoModelForSequenceClassification),
}
# Every family that trains a per-token head with LoRA (test_train_task_lora's cases): the masked LM
# where the family has one; the causal decoders have the token classifier and QA only.
PER_TOKEN_HEADS = {
    "mlm": (AutoModelForMaskedLM, ("bert", "distilbert", "roberta", "xlm-roberta", "mpnet", "modernbert")),
    "token-cls5": (AutoModelForTokenClassification, ("bert", "distilbert", "roberta", "xlm-roberta", "mpnet",
                                                      "modernbert", "llama", "mistral", "qwen2", "qwen3")),
    "qa": (AutoModelForQuestionAnswering, ("bert", "distilbert", "roberta", "xlm-roberta", "mpnet", "modernbert",
                                           "llama", "mistral", "qwen2", "qwen3")),
}
for _task, (_cls, _families) in PER_TOKEN_HEADS.items():
    for _family in _families:
        _case = f"{_family}-{_task}-f32"
        CASES[_case] = (f"train_tasks/{_case}/model", f"train_tasks_lora/{_case}", f"train_tasks/{_case}", _cls)

# Trained heads (modules to save) and the masked LM's tied decoders stay f32.
SKIP_MODULES = ["classifier", "pre_classifier", "score", "qa_outputs", "decoder", "vocab_projector"]


def portable_dequantize_4bit(A, absmax, blocksize, quant_type, shape, dtype):
    """bitsandbytes' own portable (PyTorch) NF4 dequantization, which its CPU kernel falls back to.

    The native CPU kernel of bitsandbytes 0.50.2 (dequantizeBlockwise4bitCpu, its AVX512 branch,
    taken when a row is a multiple of 16 elements) scales element (row, col) by
    absmax[row * (cols / 64) + col / 64], as if every row were whole 64-blocks; quantize_4bit's
    blocks run over the flattened tensor. So at widths 16, 32, 48, 80, ... every row but the first
    takes another block's absmax (at 16 and 32, cols / 64 is 0: all rows the first blocks'), up to
    the absmax itself off; widths 40 or 64 are right. The codes and absmax values are right. Every
    fixture here has rows of 16 or 32, so the reference takes the portable path on every CPU.
    """
    if A.dtype != torch.uint8:
        A = A.view(torch.uint8)
    return _dequantize_4bit_compute(A.reshape(-1), absmax, _get_4bit_code(quant_type, A.device), blocksize, shape,
                                    dtype)


torch.library.register_kernel("bitsandbytes::dequantize_4bit", "cpu", portable_dequantize_4bit)


def f32_compute_on_cpu(model):
    """Keeps every Linear4bit on bitsandbytes' f32 path; returns their count.

    bitsandbytes 0.50 on a CPU with AVX512-BF16 repacks a 4-bit weight at its first eval-mode,
    no-grad forward and multiplies through gemv_4bit, which casts the input and the absmax to bf16
    whatever bnb_4bit_compute_dtype says (and asserts out_features % 32 == 0). The logits then
    depend on the CPU the script runs on and are bf16's, 0.04 to 3 away from f32 compute. Without
    that flag the layer dequantizes to the compute dtype (f32) and multiplies in it, on any CPU.
    """
    layers = [m for m in model.modules() if isinstance(m, bitsandbytes.nn.Linear4bit)]
    for m in layers:
        m.support_avx512bf16_for_cpu = False
    return len(layers)


def nearest_absmax_codes(model, f32_weights):
    """Puts the nearest 8-bit code of each block's absmax in every Linear4bit; returns how many differed.

    The offset, the 256-blocks' scales and the code book stay bitsandbytes' own: only its search
    for the nearest code (approximate near zero) is replaced.
    """
    changed = 0
    for name, module in model.named_modules():
        if isinstance(module, bitsandbytes.nn.Linear4bit):
            state = module.weight.quant_state
            absmax = f32_weights[name.replace(".base_layer", "") + ".weight"].detach().reshape(-1, 64).abs().max(1).values
            scales = state.state2.absmax.repeat_interleave(256)[: absmax.numel()]
            scaled = (absmax - state.offset) / scales
            nearest = (scaled[:, None] - state.state2.code[None, :]).abs().argmin(1).to(torch.uint8)
            changed += int((nearest != state.absmax).sum())
            state.absmax = nearest
    return changed


def per_row_logits(out):
    """[B, labels] for a sequence, [B * T, labels] for a per-token head: QA's (start, end) a token's row."""
    if hasattr(out, "start_logits"):
        return torch.stack([out.start_logits, out.end_logits], dim=-1).flatten(0, 1)
    return out.logits.flatten(0, 1) if out.logits.dim() == 3 else out.logits


def main(root):
    for case in sys.argv[2:] or CASES:
        base, lora, data, auto = CASES[case]
        q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.float32, llm_int8_skip_modules=SKIP_MODULES)
        model = auto.from_pretrained(
            os.path.join(root, base), quantization_config=q, device_map="cpu", dtype=torch.float32,
            attn_implementation="eager").eval()
        n4 = f32_compute_on_cpu(model)
        pm = PeftModel.from_pretrained(model, os.path.join(root, lora, "adapter_init"), is_trainable=True).eval()
        has_types = model.config.model_type == "bert"
        batches = json.load(open(os.path.join(root, data, "batches.json")))

        def all_logits():
            logits = []
            with torch.no_grad():
                for b in batches:
                    kw = {k: torch.tensor(b[k]) for k in ("input_ids", "attention_mask")}
                    if has_types:
                        kw["token_type_ids"] = torch.tensor(b["token_type_ids"])
                    # Through the LoRA model under peft's task wrapper: PeftModelForQuestionAnswering.forward
                    # (peft 0.21) drops token_type_ids, and BERT's second segment would read as the first.
                    logits.append(per_row_logits(pm.base_model(**kw)).float().tolist())
            return logits

        out = {"base": base, "adapter": "adapter_init", "linear4bit_modules": n4, "logits": all_logits()}
        f32 = dict(auto.from_pretrained(os.path.join(root, base), dtype=torch.float32).named_parameters())
        not_nearest = nearest_absmax_codes(model, f32)
        if not_nearest:
            out.update(absmax_codes_not_nearest=not_nearest, logits_nearest_absmax=all_logits())
        if data.startswith("train_tasks/"):
            loss0 = pm.base_model(**model_inputs(batches[0], has_types, True)).loss
            loss0.backward()
            out["loss0"] = loss0.item()
            save_file({tach_name(n): p.grad.detach().clone().contiguous()
                       for n, p in pm.named_parameters() if p.requires_grad},
                      os.path.join(root, lora, "qlora_grads.safetensors"))
        out.update({"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
                    "bitsandbytes": bitsandbytes.__version__})
        path = os.path.join(root, lora, "qlora_logits.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
        print("wrote", path, n4, "Linear4bit", not_nearest, "absmax codes not the nearest")


if __name__ == "__main__":
    main(sys.argv[1])
