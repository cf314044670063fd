#!/usr/bin/env python3
"""Training references for tach's per-token heads (masked LM, token classification, question
answering), from transformers + torch.optim.AdamW.

    scripts/golden/make_train_task_golden.py tests/fixtures tests/fixtures/train_tasks [CASE ...]

For each case, a tiny task model is made from a bare encoder fixture's config (ModernBERT's among them) (its body random,
seeded) and saved with save_pretrained, then OUT/<case>/ gets:
  model/              config.json + model.safetensors (the task model before training)
  batches.json        four padded batches: input_ids, attention_mask, token_type_ids, and the
                      labels the task's model takes: `labels` [B][T] (masked LM: the collator's
                      rule applied below; token classification: word labels with -100 at special
                      tokens, padding and later sub-tokens), or start_positions/end_positions [B]
                      (one row's answer outside the window: position T, clamped and ignored)
  expected.json       the loss on batch 0; the losses, learning rates and gradient norms of 20 steps
  grads.safetensors   every parameter's gradient on batch 0, under its Hugging Face name
  final.safetensors   every parameter after the 20 steps

The masked-LM inputs follow DataCollatorForLanguageModeling.torch_mask_tokens (15% of the
non-special, non-padding tokens; 80% [MASK], 10% random, 10% kept) drawn from torch's generator;
tach draws its own masks in training (the same rule, its own generator), so the test feeds these
masked inputs and labels to tach's step: the comparison is of the training itself.

Besides, OUT/features.json: run_ner.py's tokenize_and_align_labels on the CoNLL fixture's
sentences (with and without label_all_tokens, truncated to 10 tokens) and run_qa.py's
prepare_train_features on OUT/squad_train.jsonl (max_length 24, doc_stride 6), both verbatim,
with the small WordPiece tokenizers of the token-classification and question-answering fixtures.

The 20 steps: AdamW (lr 1e-3, weight decay 0.01 except biases and LayerNorm weights),
get_linear_schedule_with_warmup with 2 warm-up steps, clipping at 1.0, batch i % 4 at step i,
dropout off. Development only: run with the virtualenv that has torch and transformers.
"""
import json
import os
import re
import shutil
import sys

import torch
from safetensors.torch import save_file
from transformers import (AutoConfig, AutoModelForMaskedLM, AutoModelForQuestionAnswering,
                          AutoModelForTokenClassification, get_linear_schedule_with_warmup)

# case -> (bare encoder fixture, task)
CASES = {
    "bert-mlm-f32": ("encoders/bert-base-model-f32", "mlm"),
    "distilbert-mlm-f32": ("encoders/distilbert-base-model-f32", "mlm"),
    "roberta-mlm-f32": ("encoders/roberta-base-model-f32", "mlm"),
    "bert-token-cls5-f32": ("encoders/bert-base-model-f32", "token-classification"),
    "distilbert-token-cls5-f32": ("encoders/distilbert-base-model-f32", "token-classification"),
    "bert-qa-f32": ("encoders/bert-base-model-f32", "question-answering"),
    "roberta-qa-f32": ("encoders/roberta-base-model-f32", "question-answering"),
    "mpnet-mlm-f32": ("encoders/mpnet-base-model-f32", "mlm"),
    "xlm-roberta-token-cls5-f32": ("encoders/xlm-roberta-base-model-f32", "token-classification"),
    "mpnet-qa-f32": ("encoders/mpnet-base-model-f32", "question-answering"),
    "xlm-roberta-mlm-f32": ("encoders/xlm-roberta-base-model-f32", "mlm"),
    "distilbert-qa-f32": ("encoders/distilbert-base-model-f32", "question-answering"),
    # ModernBERT: head.dense -> GELU -> head.norm before every head; the masked LM's decoder tied.
    "modernbert-mlm-f32": ("decoders/modernbert-base-model-f32", "mlm"),
    "modernbert-token-cls5-f32": ("decoders/modernbert-base-model-f32", "token-classification"),
    "modernbert-qa-f32": ("decoders/modernbert-base-model-f32", "question-answering"),
    # Causal decoders: `score` on every token; qa_outputs under `transformer.` (Llama, Qwen2,
    # Qwen3) or `model.` (Mistral). The token classifier's dropout is set to 0 in the config.
    "llama-token-cls5-f32": ("decoders/llama-cls-bias-f32", "token-classification"),
    "llama-qa-f32": ("decoders/llama-cls-bias-f32", "question-answering"),
    "mistral-token-cls5-f32": ("decoders/mistral-cls-window4-f32", "token-classification"),
    "mistral-qa-f32": ("decoders/mistral-cls-window4-f32", "question-answering"),
    "qwen2-qa-f32": ("decoders/qwen2-cls-kv1-f32", "question-answering"),
    "qwen3-token-cls5-f32": ("decoders/qwen3-cls-headdim16-f32", "token-classification"),
    # The family x head pairs left: every family trains every head it has.
    "roberta-token-cls5-f32": ("encoders/roberta-base-model-f32", "token-classification"),
    "mpnet-token-cls5-f32": ("encoders/mpnet-base-model-f32", "token-classification"),
    "xlm-roberta-qa-f32": ("encoders/xlm-roberta-base-model-f32", "question-answering"),
    "qwen2-token-cls5-f32": ("decoders/qwen2-cls-kv1-f32", "token-classification"),
    "qwen3-qa-f32": ("decoders/qwen3-cls-headdim16-f32", "question-answering"),
}
CAUSAL = ("llama", "mistral", "qwen2", "qwen3")
NO_DECAY = [re.compile(p) for p in [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)", r"_norm(?:$|\.)"]]
STEPS, WARMUP, LR, WD, CLIP = 20, 2, 1e-3, 0.01, 1.0
LABELS = ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]


def decays(name):
    return not any(p.search(name.lower()) for p in NO_DECAY)


def mask_tokens(ids, special, mask_id, vocab, gen, p=0.15):
    """DataCollatorForLanguageModeling.torch_mask_tokens with mask_replace_prob 0.8, random_replace_prob 0.1."""
    labels = ids.clone()
    prob = torch.full(labels.shape, p)
    prob.masked_fill_(special, 0.0)
    masked = torch.bernoulli(prob, generator=gen).bool()
    labels[~masked] = -100
    replaced = torch.bernoulli(torch.full(labels.shape, 0.8), generator=gen).bool() & masked
    ids = ids.clone()
    ids[replaced] = mask_id
    rand = torch.bernoulli(torch.full(labels.shape, 0.5), generator=gen).bool() & masked & ~replaced
    words = torch.randint(vocab, labels.shape, dtype=torch.long, generator=gen)
    ids[rand] = words[rand]
    return ids, labels


def batches(config, task, gen):
    out = []
    first = 2 if config.model_type in ("roberta", "xlm-roberta", "mpnet") else 1  # ids below are specials
    for i in range(4):
        B, T = 3, 9 + i
        ids = torch.randint(first + 3, config.vocab_size, (B, T), generator=gen)
        mask = torch.ones(B, T, dtype=torch.long)
        lengths = []
        for r in range(B):  # right padding of different lengths; row 0 is full
            n = T if r == 0 else T - (r * 2 + i) % (T - 3)
            lengths.append(n)
            mask[r, n:] = 0
            ids[r, n:] = config.pad_token_id
            ids[r, 0] = first        # [CLS] / <s>
            ids[r, n - 1] = first + 1  # [SEP] / </s>
        special = torch.zeros(B, T, dtype=torch.bool)
        for r, n in enumerate(lengths):
            special[r, 0] = special[r, n - 1] = True
            special[r, n:] = True
        types = (torch.arange(T).unsqueeze(0) >= T // 2).long() * mask
        b = {"attention_mask": mask, "token_type_ids": types}
        if task == "mlm":
            # Drawn again until a token is chosen: a batch without one has no loss (NaN in torch).
            while True:
                b["input_ids"], b["labels"] = mask_tokens(ids, special, first + 2, config.vocab_size, gen)
                if (b["labels"] != -100).any():
                    break
        elif task == "token-classification":
            b["input_ids"] = ids
            labels = torch.randint(0, len(LABELS), (B, T), generator=gen)
            later = torch.rand(B, T, generator=gen) < 0.3  # later sub-tokens of a word: -100
            labels[special | later] = -100
            b["labels"] = labels
        else:
            b["input_ids"] = ids
            start = torch.tensor([int(torch.randint(1, n - 1, (1,), generator=gen)) for n in lengths])
            end = torch.minimum(start + torch.randint(0, 3, (B,), generator=gen), torch.tensor(lengths) - 2)
            start[1], end[1] = 0, 0          # no answer in the window: the CLS index
            if i % 2 == 1:
                start[2], end[2] = T + 4, T  # beyond the window: clamped to T, ignored
            b["start_positions"], b["end_positions"] = start, end
        out.append(b)
    return out


def make_model(src, task, dst):
    config = AutoConfig.from_pretrained(src)
    if config.model_type == "modernbert" and task == "question-answering":
        # Question answering's loss reads every position, padding too. Under the fixture's 2-key
        # local windows a padded position may see padding only, where transformers' eager attention
        # (a softmax over scores that all round to finfo.min) and sdpa disagree (batch 0's loss
        # 2.866 against 2.884), and eager's gradient is that rounding's, not the function's. Windows
        # of 8 keys keep every position in sight of a real token, and still cut these 12-token rows.
        config.local_attention = 16
    if config.model_type == "mistral" and task == "question-answering":
        # The same for Mistral's 4-key window: a padded position past a row's last real token by 4
        # or more would see padding only. 8 keys keep the shortest row (5 tokens) in sight.
        config.sliding_window = 8
    if config.model_type in CAUSAL:
        config.architectures = None
        if task == "token-classification":
            config.classifier_dropout = 0.0  # …ForTokenClassification's dropout before `score`
        else:
            config.id2label = {0: "LABEL_0", 1: "LABEL_1"}
            config.label2id = {"LABEL_0": 0, "LABEL_1": 1}
    torch.manual_seed(7)
    if task == "mlm":
        config.architectures = None
        model = AutoModelForMaskedLM.from_config(config, attn_implementation="eager")
    elif task == "token-classification":
        config.id2label = dict(enumerate(LABELS))
        config.label2id = {l: i for i, l in enumerate(LABELS)}
        model = AutoModelForTokenClassification.from_config(config, attn_implementation="eager")
    else:
        model = AutoModelForQuestionAnswering.from_config(config, attn_implementation="eager")
    model = model.float()
    shutil.rmtree(dst, ignore_errors=True)
    model.save_pretrained(dst)
    return model


def run(src, task, dst):
    model = make_model(src, task, os.path.join(dst, "model"))
    model.eval()  # dropout off; gradients still flow
    cfg = model.config
    has_types = cfg.model_type == "bert"
    gen = torch.Generator().manual_seed(1234)
    bs = batches(cfg, task, gen)

    def forward(b):
        kw = {"input_ids": b["input_ids"], "attention_mask": b["attention_mask"]}
        if has_types:
            kw["token_type_ids"] = b["token_type_ids"]
        for k in ("labels", "start_positions", "end_positions"):
            if k in b:
                kw[k] = b[k]
        return model(**kw).loss

    loss0 = forward(bs[0])
    loss0.backward()
    grads = {n: p.grad.detach().clone().contiguous() for n, p in model.named_parameters()}
    model.zero_grad()

    decay = [p for n, p in model.named_parameters() if decays(n)]
    no_decay = [p for n, p in model.named_parameters() if not decays(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}], lr=LR)
    sched = get_linear_schedule_with_warmup(opt, WARMUP, STEPS)
    losses, lrs, norms = [], [], []
    for step in range(STEPS):
        lrs.append(sched.get_last_lr()[0])
        loss = forward(bs[step % 4])
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
    final = {n: p.detach().clone().contiguous() for n, p in model.named_parameters()}
    save_file(grads, os.path.join(dst, "grads.safetensors"))
    save_file(final, os.path.join(dst, "final.safetensors"))
    with open(os.path.join(dst, "batches.json"), "w") as f:
        json.dump([{k: v.tolist() for k, v in b.items()} for b in bs], f)
    with open(os.path.join(dst, "expected.json"), "w") as f:
        json.dump({"task": task, "loss0": loss0.item(), "losses": losses, "lrs": lrs, "grad_norms": norms,
                   "steps": STEPS, "warmup": WARMUP, "lr": LR, "weight_decay": WD, "clip": CLIP,
                   "parameters": [n for n, _ in model.named_parameters()],
                   "torch": torch.__version__}, f, indent=1)


def read_conll(path):
    sentences, words, tags = [], [], []
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        words.append(parts[0])
        tags.append(parts[-1])
    if words:
        sentences.append((words, tags))
    return sentences


def ner_features(fixtures):
    """run_ner.py's tokenize_and_align_labels, as written there."""
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(fixtures, "token_classes/tokenizer-wordpiece"))
    sentences = read_conll(os.path.join(fixtures, "token_classes/ner.conll"))
    label_list = sorted({t for _, tags in sentences for t in tags})
    label_to_id = {l: i for i, l in enumerate(label_list)}
    b_to_i_label = []
    for idx, label in enumerate(label_list):
        if label.startswith("B-") and label.replace("B-", "I-") in label_list:
            b_to_i_label.append(label_list.index(label.replace("B-", "I-")))
        else:
            b_to_i_label.append(idx)
    out = {"label_names": label_list, "max_length": 10, "sentences": [w for w, _ in sentences],
           "tags": [t for _, t in sentences]}
    for label_all_tokens in (False, True):
        tokenized = tokenizer([w for w, _ in sentences], truncation=True, max_length=10, is_split_into_words=True)
        all_labels = []
        for i, (_, tags) in enumerate(sentences):
            word_ids = tokenized.word_ids(batch_index=i)
            previous_word_idx = None
            label_ids = []
            for word_idx in word_ids:
                if word_idx is None:
                    label_ids.append(-100)
                elif word_idx != previous_word_idx:
                    label_ids.append(label_to_id[tags[word_idx]])
                else:
                    if label_all_tokens:
                        label_ids.append(b_to_i_label[label_to_id[tags[word_idx]]])
                    else:
                        label_ids.append(-100)
                previous_word_idx = word_idx
            all_labels.append(label_ids)
        out["input_ids"] = tokenized["input_ids"]
        out["labels_all_tokens" if label_all_tokens else "labels"] = all_labels
    return out


def qa_features(fixtures, squad_path):
    """run_qa.py's prepare_train_features (pad_to_max_length off), as written there."""
    from transformers import PreTrainedTokenizerFast
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=os.path.join(fixtures, "question_answering/tokenizer-tiny/tokenizer.json"), cls_token="[CLS]",
        sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"])
    rows = [json.loads(l) for l in open(squad_path, encoding="utf-8")]
    examples = {"question": [r["question"] for r in rows], "context": [r["context"] for r in rows],
                "answers": [r["answers"] for r in rows]}
    max_seq_length, doc_stride = 24, 6
    examples["question"] = [q.lstrip() for q in examples["question"]]
    tokenized_examples = tokenizer(examples["question"], examples["context"], truncation="only_second",
                                   max_length=max_seq_length, stride=doc_stride, return_overflowing_tokens=True,
                                   return_offsets_mapping=True, padding=False)
    sample_mapping = tokenized_examples.pop("overflow_to_sample_mapping")
    offset_mapping = tokenized_examples.pop("offset_mapping")
    tokenized_examples["start_positions"] = []
    tokenized_examples["end_positions"] = []
    for i, offsets in enumerate(offset_mapping):
        input_ids = tokenized_examples["input_ids"][i]
        if tokenizer.cls_token_id in input_ids:
            cls_index = input_ids.index(tokenizer.cls_token_id)
        elif tokenizer.bos_token_id in input_ids:
            cls_index = input_ids.index(tokenizer.bos_token_id)
        else:
            cls_index = 0
        sequence_ids = tokenized_examples.sequence_ids(i)
        sample_index = sample_mapping[i]
        answers = examples["answers"][sample_index]
        if len(answers["answer_start"]) == 0:
            tokenized_examples["start_positions"].append(cls_index)
            tokenized_examples["end_positions"].append(cls_index)
        else:
            start_char = answers["answer_start"][0]
            end_char = start_char + len(answers["text"][0])
            token_start_index = 0
            while sequence_ids[token_start_index] != 1:
                token_start_index += 1
            token_end_index = len(input_ids) - 1
            while sequence_ids[token_end_index] != 1:
                token_end_index -= 1
            if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
                tokenized_examples["start_positions"].append(cls_index)
                tokenized_examples["end_positions"].append(cls_index)
            else:
                while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                    token_start_index += 1
                tokenized_examples["start_positions"].append(token_start_index - 1)
                while offsets[token_end_index][1] >= end_char:
                    token_end_index -= 1
                tokenized_examples["end_positions"].append(token_end_index + 1)
    return {"max_length": max_seq_length, "doc_stride": doc_stride, "sample": sample_mapping,
            "input_ids": tokenized_examples["input_ids"], "token_type_ids": tokenized_examples["token_type_ids"],
            "start_positions": tokenized_examples["start_positions"],
            "end_positions": tokenized_examples["end_positions"]}


def main():
    fixtures, out = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(CASES)
    with open(os.path.join(out, "features.json"), "w") as f:
        json.dump({"ner": ner_features(fixtures), "qa": qa_features(fixtures, os.path.join(out, "squad_train.jsonl"))},
                  f, indent=1)
    if names == ["features"]:
        return
    for name in names:
        src, task = CASES[name]
        dst = os.path.join(out, name)
        os.makedirs(dst, exist_ok=True)
        run(os.path.join(fixtures, src), task, dst)
        print("wrote", dst)


if __name__ == "__main__":
    main()
