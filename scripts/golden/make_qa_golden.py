#!/usr/bin/env python3
"""Reference values for extractive question answering and the SQuAD scores:

  spans.json     transformers' question-answering pipeline over seeded random logits, for three
                 tokenizers (byte-level BPE, WordPiece with <s>, Unigram): each case's windows (ids,
                 word and sequence ids, the pipeline's p_mask), the logits given to the pipeline's
                 postprocess, and the answers it returns (start, end in characters, text, score).
  pipeline.json  the whole pipeline over the tiny QA models of tests/fixtures/heads, with a small
                 WordPiece tokenizer written beside it (tokenizer-tiny/) whose ids fit their
                 120-token vocabulary: contexts inside one window and longer than it.
  pipeline_decoders.json
                 the same over the causal families' QA models (Llama, Mistral, Qwen2, Qwen3).
  squad-v1.json, squad-v2.jsonl, eval.json
                 small SQuAD files (official v1.1 layout, flat v2.0 JSONL) and the pipeline's best answer
                 to each question on the tiny BERT QA model with the official scores: tach eval's truth.
  squad.json     exact match and F1 per question and in total: v2.0 as transformers'
                 squad_metrics computes it (the official v2.0 script's logic), v1.1 as the official
                 v1.1 script computes it (re-stated below, as it ships only as that script).

    ~/tach-qa-ref/bin/python scripts/golden/make_qa_golden.py tests/fixtures/question_answering

transformers removed the question-answering pipeline and squad_metrics in version 5: run it with
a transformers 4.x, as the last one (4.57.1, with tokenizers 0.22.1) has it: it wrote the committed
files.
"""
import collections
import json
import os
import re
import string
import sys

import numpy as np
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import (AutoModelForQuestionAnswering, BertConfig, BertForQuestionAnswering,
                          PreTrainedTokenizerFast, QuestionAnsweringPipeline)
from transformers.data.metrics import squad_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZERS = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
HEADS = os.path.join(ROOT, "tests", "fixtures", "heads")

LONG = ("The Amazon rainforest covers much of the Amazon basin of South America. This basin "
        "encompasses seven million square kilometres, of which five and a half million are covered "
        "by the rainforest. The majority of the forest is contained within Brazil, with sixty per "
        "cent, followed by Peru with thirteen per cent and Colombia with ten per cent. Caf\u00e9 "
        "owners in Manaus \u2014 the largest city \u2014 sell a\u00e7a\u00ed bowls to tourists.")

# tokenizer file, cls token, question, context, options
SPAN_CASES = [
    ("modernbert-bpe/tokenizer.json", "[CLS]", "Where do the tourists buy bowls?", LONG, dict(max_seq_len=48, doc_stride=16)),
    ("modernbert-bpe/tokenizer.json", "[CLS]", "How big is the basin?", LONG, dict(top_k=5)),
    ("modernbert-bpe/tokenizer.json", "[CLS]", "Who?", "Na\u00efve caf\u00e9s \u2764\ufe0f serve cr\u00e8me br\u00fbl\u00e9e daily.",
     dict(top_k=3, handle_impossible_answer=True)),
    ("mpnet/tokenizer.json", "<s>", "Which country has most of the forest?", LONG,
     dict(max_seq_len=40, doc_stride=12, top_k=4, max_answer_len=6)),
    ("mpnet/tokenizer.json", "<s>", "What is covered?", "The basin is covered by the rainforest.", dict(handle_impossible_answer=True)),
    ("unigram-xlmr/tokenizer-published.json", "<s>", "Where is Manaus?", LONG,
     dict(max_seq_len=36, doc_stride=8, top_k=3, handle_impossible_answer=True)),
    ("unigram-xlmr/tokenizer-published.json", "<s>", "Who sells bowls?", "Owners in Manaus sell a\u00e7a\u00ed bowls.", dict(top_k=2)),
]


# Logits set by hand where the answer depends on a rule of the pipeline (after the seeded cases, so
# that their draws stay the same): tokenizer file, cls token, question, context, start and end
# logits by context word (every token of the word; others 0), options. Seeded noise of 0.1 breaks
# ties: numpy's argpartition picks among equal scores in no documented order.
# "We saw emoji here.": the best single span (We .. the "." after "here"), but the end logits of
# "emoji"'s three word pieces (em ##oj ##i) make three spans that whole-word alignment turns into
# one answer, "We saw emoji", whose scores add up past it; with top_k 1 the pipeline still decodes
# 2k + 10 spans per window, so the sum is found.
CRAFTED_SPAN_CASES = [
    ("mpnet/tokenizer.json", "<s>", "What is big?", "We saw emoji here. Paris is big.", {0: 4.0}, {2: 2.5, 4: 3.0},
     dict()),
    ("mpnet/tokenizer.json", "<s>", "What is big?", "We saw emoji here. Paris is big.", {0: 4.0}, {2: 2.5, 4: 3.0},
     dict(top_k=3)),
]


def fast_tokenizer(path, cls):
    return PreTrainedTokenizerFast(tokenizer_file=path, cls_token=cls, model_max_length=512)


def dummy_pipeline(tok):
    # postprocess never runs this model: the logits come from the case.
    cfg = BertConfig(vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    return QuestionAnsweringPipeline(model=BertForQuestionAnswering(cfg), tokenizer=tok, framework="pt")


def post_options(opts):
    return {k: v for k, v in opts.items() if k in ("top_k", "handle_impossible_answer", "max_answer_len")}


def pre_options(opts):
    return {k: v for k, v in opts.items() if k in ("max_seq_len", "doc_stride")}


def as_list(answers):
    return answers if isinstance(answers, list) else [answers]


def window_json(feature):
    enc = feature["encoding"]
    return {"ids": [int(i) for i in feature["input_ids"][0]],
            "type_ids": [int(i) for i in enc.type_ids],
            "word_ids": [-1 if w is None else w for w in enc.word_ids],
            "sequence_ids": [-1 if s is None else s for s in enc.sequence_ids],
            "p_mask": [int(p) for p in feature["p_mask"][0]]}


def span_cases():
    rng = np.random.default_rng(54)
    out = []
    for file, cls, question, context, opts in SPAN_CASES:
        tok = fast_tokenizer(os.path.join(TOKENIZERS, file), cls)
        pipe = dummy_pipeline(tok)
        features = list(pipe.preprocess({"question": question, "context": context}, **pre_options(opts)))
        outputs, windows = [], []
        for f in features:
            n = f["input_ids"].shape[1]
            start = (rng.standard_normal(n) * 3).astype(np.float32)
            end = (rng.standard_normal(n) * 3).astype(np.float32)
            outputs.append({**f, "start": torch.from_numpy(start)[None], "end": torch.from_numpy(end)[None]})
            windows.append({**window_json(f), "start_logits": start.tolist(), "end_logits": end.tolist()})
        answers = as_list(pipe.postprocess(outputs, **post_options(opts)))
        out.append({"tokenizer": file, "question": question, "context": context, "options": opts,
                    "windows": windows, "answers": answers})
    noise = np.random.default_rng(55)
    for file, cls, question, context, start_by_word, end_by_word, opts in CRAFTED_SPAN_CASES:
        tok = fast_tokenizer(os.path.join(TOKENIZERS, file), cls)
        pipe = dummy_pipeline(tok)
        features = list(pipe.preprocess({"question": question, "context": context}, **pre_options(opts)))
        outputs, windows = [], []
        for f in features:
            enc = f["encoding"]
            words = [w if s == 1 else None for w, s in zip(enc.word_ids, enc.sequence_ids)]
            start = np.array([start_by_word.get(w, 0.0) if w is not None else 0.0 for w in words])
            end = np.array([end_by_word.get(w, 0.0) if w is not None else 0.0 for w in words])
            start = (start + noise.standard_normal(len(words)) * 0.1).astype(np.float32)
            end = (end + noise.standard_normal(len(words)) * 0.1).astype(np.float32)
            outputs.append({**f, "start": torch.from_numpy(start)[None], "end": torch.from_numpy(end)[None]})
            windows.append({**window_json(f), "start_logits": start.tolist(), "end_logits": end.tolist()})
        answers = as_list(pipe.postprocess(outputs, **post_options(opts)))
        out.append({"tokenizer": file, "question": question, "context": context, "options": opts,
                    "windows": windows, "answers": answers})
    return out


# A WordPiece vocabulary of 120 tokens at most, for the tiny QA models' embedding tables.
TINY_WORDS = ("the a of in is was who what where when which how many did does to and by with for on at from "
              "amazon forest rainforest river basin south america brazil peru country city largest long "
              "km million square people live capital paris france tower built year eiffel iron "
              "tourists bowls sell owners cafe").split()


def tiny_tokenizer(out_dir):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,?!-'") + TINY_WORDS
    vocab += ["##s", "##ed", "##ing", "##er", "##ly", "##e", "##a", "##o", "1", "2", "3", "4", "5", "6", "7", "8", "9", "0"]
    assert len(vocab) <= 120, len(vocab)
    t = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    t.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    os.makedirs(out_dir, exist_ok=True)
    t.save(os.path.join(out_dir, "tokenizer.json"))
    return os.path.join(out_dir, "tokenizer.json")


PIPELINE_TEXT = ("The Amazon rainforest is the largest forest in South America. Most of it is in Brazil, "
                 "and Peru has a part of the basin. Paris is the capital of France; the Eiffel tower "
                 "was built of iron in 1889. Owners of cafes in the city sell bowls to tourists.")
FAMILY_TEXT = ("The old king sat on the mat in the house. Paris is the capital city of France, and the river "
               "runs to the sea. The queen walks home to read a book at night. The cat and the dog eat in the "
               "sun; the child sings. My country has a long river and a high tower of fire.")
# model fixture, question, context, options (windows of the models' positions at most), tokenizer
# (fixtures-relative; default the tiny one written here)
PIPELINE_CASES = [
    ("bert-qa-f32", "Where is the forest?", "The Amazon rainforest is in South America.", dict(max_seq_len=32)),
    ("bert-qa-f32", "What is the capital of France?", PIPELINE_TEXT, dict(max_seq_len=32, doc_stride=8)),
    ("bert-qa-f32", "Who sells bowls?", PIPELINE_TEXT,
     dict(max_seq_len=28, doc_stride=6, top_k=3, max_answer_len=4, handle_impossible_answer=True)),
    ("distilbert-qa-f32", "When was the tower built?", PIPELINE_TEXT, dict(max_seq_len=30, doc_stride=10, top_k=2)),
    ("distilbert-qa-f32", "Which country?", "Most of the forest is in Brazil.", dict(max_seq_len=32, handle_impossible_answer=True)),
    # RoBERTa's family (<s> A </s></s> B </s>, no token type ids) with the 120-id tokenizers of the
    # fill-mask goldens; RoBERTa's 40 positions hold 38 tokens.
    ("roberta-qa-f32", "Where is the capital city?", FAMILY_TEXT, dict(max_seq_len=38, doc_stride=10, top_k=2),
     "fill_mask/roberta-120"),
    ("xlm-roberta-qa-f32", "Who walks home?", FAMILY_TEXT, dict(max_seq_len=30, doc_stride=8, handle_impossible_answer=True),
     "fill_mask/roberta-120"),
    ("mpnet-qa-f32", "What does the child do?", FAMILY_TEXT, dict(max_seq_len=38, doc_stride=12, top_k=3),
     "fill_mask/roberta-120"),
]
# The causal families' question answering (Llama's body under `transformer.`, Mistral's under
# `model.`) with the tiny WordPiece tokenizer: the pipeline's windows and spans do not depend on the
# family, and a decoder reads the pair as any model does. Written to pipeline_decoders.json.
DECODER_PIPELINE_CASES = [
    ("llama-qa-f32", "Where is the forest?", "The Amazon rainforest is in South America.", dict(max_seq_len=32)),
    ("qwen2-qa-f32", "Who sells bowls?", PIPELINE_TEXT, dict(max_seq_len=28, doc_stride=6, top_k=3, max_answer_len=4)),
    ("mistral-qa-f32", "What is the capital of France?", PIPELINE_TEXT,
     dict(max_seq_len=32, doc_stride=8, handle_impossible_answer=True)),
    ("qwen3-qa-f32", "When was the tower built?", PIPELINE_TEXT, dict(max_seq_len=30, doc_stride=10, top_k=2)),
]
# No ModernBERT case: transformers 4.57's ModernBERT gives other logits than version 5's, which
# tach's heads equal (test_heads); the span decoding after the model is the same for every family.


def pipeline_cases(tiny_tok_file, cases=PIPELINE_CASES):
    out = []
    for name, question, context, opts, *tok_dir in cases:
        tok_file = os.path.join(ROOT, "tests", "fixtures", tok_dir[0], "tokenizer.json") if tok_dir else tiny_tok_file
        roberta = tok_dir and "roberta" in tok_dir[0]
        specials = (dict(cls_token="<s>", sep_token="</s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")
                    if roberta else
                    dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]"))
        path = os.path.join(HEADS, name)
        if not os.path.isdir(path):
            print(f"skipping {name}: {path} is missing", file=sys.stderr)
            continue
        # Only BERT's tokenizer gives token type ids (the others' models take none, or only zeros).
        inputs = ["input_ids", "attention_mask"] + (["token_type_ids"] if name.startswith("bert") else [])
        tok = PreTrainedTokenizerFast(tokenizer_file=tok_file, model_max_length=512, model_input_names=inputs, **specials)
        model = AutoModelForQuestionAnswering.from_pretrained(path, torch_dtype=torch.float32).eval()
        pipe = QuestionAnsweringPipeline(model=model, tokenizer=tok, framework="pt")
        with torch.no_grad():
            answers = as_list(pipe(question=question, context=context, **opts))
        windows = len(list(pipe.preprocess({"question": question, "context": context}, **pre_options(opts))))
        out.append({"model": name, "tokenizer": tok_dir[0] if tok_dir else "question_answering/tokenizer-tiny",
                    "question": question, "context": context, "options": opts, "windows": windows, "answers": answers})
    return out


# The official SQuAD v1.1 evaluation (evaluate-v1.1.py), as it scores one prediction.
def v1_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def v1_f1_score(prediction, ground_truth):
    prediction_tokens = v1_normalize_answer(prediction).split()
    ground_truth_tokens = v1_normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def v1_exact_match_score(prediction, ground_truth):
    return v1_normalize_answer(prediction) == v1_normalize_answer(ground_truth)


def v1_scores(gold, prediction):
    return (float(max(v1_exact_match_score(prediction, g) for g in gold)),
            float(max(v1_f1_score(prediction, g) for g in gold)))


def v2_scores(gold, prediction):
    # squad_metrics.get_raw_scores for one question.
    answers = [a for a in gold if squad_metrics.normalize_answer(a)]
    if not answers:
        answers = [""]
    return (float(max(squad_metrics.compute_exact(a, prediction) for a in answers)),
            float(max(squad_metrics.compute_f1(a, prediction) for a in answers)))


SQUAD_QUESTIONS = [
    (["Denver Broncos", "Denver Broncos", "Broncos"], "the Denver Broncos"),
    (["Santa Clara, California", "Levi's Stadium"], "Levi\u2019s Stadium in Santa Clara"),
    (["an apple", "apple pie"], "Apple"),
    (["The The"], "the"),
    (["a"], ""),
    (["1889"], "in 1889."),
    (["Caf\u00e9 Du Monde"], "caf\u00c9 du monde"),
    (["\u00c9COLE"], "\u00e9cole\u3000normale"),
    (["the cat sat on the mat"], "cat mat cat"),
    (["Thessaloniki", "the city"], "an theater"),
    (["New   York\tCity"], "new york city!!"),
    ([], ""),
    ([], "something"),
    ([], "the"),
    (["_the_"], "the"),
    (["seven million square kilometres"], "seven million"),
]


def squad_cases():
    questions = []
    for gold, pred in SQUAD_QUESTIONS:
        q = {"gold": gold, "prediction": pred, "normalized_prediction": squad_metrics.normalize_answer(pred)}
        q["v2_exact"], q["v2_f1"] = v2_scores(gold, pred)
        if gold:
            q["v1_exact"], q["v1_f1"] = v1_scores(gold, pred)
        questions.append(q)
    # The v2 totals as the official script makes them (make_eval_dict and the HasAns/NoAns merge).
    exact = {i: q["v2_exact"] for i, q in enumerate(questions)}
    f1 = {i: q["v2_f1"] for i, q in enumerate(questions)}
    has = [i for i, (g, _) in enumerate(SQUAD_QUESTIONS) if g]
    no = [i for i, (g, _) in enumerate(SQUAD_QUESTIONS) if not g]
    v2 = dict(squad_metrics.make_eval_dict(exact, f1))
    squad_metrics.merge_eval(v2, squad_metrics.make_eval_dict(exact, f1, qid_list=has), "HasAns")
    squad_metrics.merge_eval(v2, squad_metrics.make_eval_dict(exact, f1, qid_list=no), "NoAns")
    v1_questions = [q for q in questions if q["gold"]]
    v1 = {"exact_match": 100.0 * sum(q["v1_exact"] for q in v1_questions) / len(v1_questions),
          "f1": 100.0 * sum(q["v1_f1"] for q in v1_questions) / len(v1_questions), "total": len(v1_questions)}
    return {"questions": questions, "v2": v2, "v1": v1}


# Small SQuAD files for tach eval: v1.1 in the official layout, v2.0 in the flat JSONL layout.
EVAL_CONTEXTS = [PIPELINE_TEXT, "The Amazon rainforest is the largest forest in South America.",
                 "Paris is the capital of France. The Eiffel tower was built of iron in 1889."]
EVAL_QUESTIONS = [  # context, question, answer (None: no answer)
    (0, "Where is most of the forest?", "Brazil"), (0, "What do owners sell?", "bowls"),
    (0, "When was the tower built?", "1889"), (1, "What is the largest forest?", "The Amazon rainforest"),
    (1, "Where is the forest?", "South America"), (2, "What is the capital of France?", "Paris"),
    (2, "What was the tower built of?", "iron"), (2, "Who lives in the tower?", None),
]


def squad_files(out):
    paragraphs = []
    for c, context in enumerate(EVAL_CONTEXTS):
        qas = [{"id": f"q{i}", "question": q, "answers": [{"text": a, "answer_start": context.index(a)}]}
               for i, (ci, q, a) in enumerate(EVAL_QUESTIONS) if ci == c and a is not None]
        paragraphs.append({"context": context, "qas": qas})
    v1 = {"version": "1.1", "data": [{"title": "tiny", "paragraphs": paragraphs}]}
    with open(os.path.join(out, "squad-v1.json"), "w") as f:
        json.dump(v1, f, indent=1)
    with open(os.path.join(out, "squad-v2.jsonl"), "w") as f:
        for i, (c, q, a) in enumerate(EVAL_QUESTIONS):
            context = EVAL_CONTEXTS[c]
            answers = {"text": [a], "answer_start": [context.index(a)]} if a else {"text": [], "answer_start": []}
            f.write(json.dumps({"id": f"q{i}", "title": "tiny", "context": context, "question": q, "answers": answers}) + "\n")


def eval_cases(tok_file):
    """tach eval's reference: the pipeline's best answer to each question (windows of 32 tokens, stride
    16; v2.0 with handle_impossible_answer), scored by the official rules."""
    out = []
    path = os.path.join(HEADS, "bert-qa-f32")
    if not os.path.isdir(path):
        return out
    tok = PreTrainedTokenizerFast(tokenizer_file=tok_file, cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                                  unk_token="[UNK]", mask_token="[MASK]", model_max_length=32)
    model = AutoModelForQuestionAnswering.from_pretrained(path, torch_dtype=torch.float32).eval()
    pipe = QuestionAnsweringPipeline(model=model, tokenizer=tok, framework="pt")
    for version in ("v1", "v2"):
        questions = [(c, q, a) for c, q, a in EVAL_QUESTIONS if version == "v2" or a is not None]
        predictions, exact, f1 = {}, {}, {}
        for i, (c, q, a) in enumerate(questions):
            with torch.no_grad():
                best = pipe(question=q, context=EVAL_CONTEXTS[c], max_seq_len=32, doc_stride=16,
                            handle_impossible_answer=version == "v2")
            predictions[f"q{i}"] = best["answer"]
            gold = [a] if a else []
            exact[i], f1[i] = v2_scores(gold, best["answer"]) if version == "v2" else v1_scores(gold, best["answer"])
        scores = {"exact_match": 100.0 * sum(exact.values()) / len(questions),
                  "f1": 100.0 * sum(f1.values()) / len(questions), "total": len(questions)}
        if version == "v2":
            has = [i for i, (_, _, a) in enumerate(questions) if a]
            no = [i for i, (_, _, a) in enumerate(questions) if not a]
            scores["HasAns_exact"] = 100.0 * sum(exact[i] for i in has) / len(has)
            scores["HasAns_f1"] = 100.0 * sum(f1[i] for i in has) / len(has)
            scores["NoAns_exact"] = 100.0 * sum(exact[i] for i in no) / len(no)
            scores["NoAns_f1"] = 100.0 * sum(f1[i] for i in no) / len(no)
        out.append({"version": version, "predictions": predictions, "scores": scores})
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "question_answering")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "spans.json"), "w") as f:
        json.dump(span_cases(), f, indent=1, ensure_ascii=False)
    tok_file = tiny_tokenizer(os.path.join(out, "tokenizer-tiny"))
    with open(os.path.join(out, "pipeline.json"), "w") as f:
        json.dump(pipeline_cases(tok_file), f, indent=1, ensure_ascii=False)
    with open(os.path.join(out, "pipeline_decoders.json"), "w") as f:
        json.dump(pipeline_cases(tok_file, DECODER_PIPELINE_CASES), f, indent=1, ensure_ascii=False)
    with open(os.path.join(out, "squad.json"), "w") as f:
        json.dump(squad_cases(), f, indent=1, ensure_ascii=False)
    squad_files(out)
    with open(os.path.join(out, "eval.json"), "w") as f:
        json.dump(eval_cases(tok_file), f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
