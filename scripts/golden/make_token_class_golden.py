#!/usr/bin/env python3
"""Reference values for token classification:
 - seqeval.json: seqeval's entities and entity-level metrics over random and edge-case tag
   sequences, in its default (conlleval-compatible) mode and in strict mode with each scheme;
 - tokenizer-wordpiece/: a small WordPiece tokenizer whose ids fit the tiny token classifiers of
   tests/fixtures/heads (vocabulary 120);
 - entity_groups.json: transformers' token-classification pipeline (aggregation "none",
   "simple", "first", "average", "max") with those models and that tokenizer on a few texts;
 - split_words.json: words to sub-tokens as is_split_into_words=True gives them (ids and word ids,
   truncated or not, with and without a byte-level BPE's add_prefix_space) for several tokenizers;
 - ner.conll, ner.jsonl, ner_eval.json: tagged sentences and the seqeval metrics of each model's
   predictions as transformers' run_ner makes them (words split into sub-tokens with
   is_split_into_words=True, the first sub-token's prediction is the word's).

    scripts/golden/make_token_class_golden.py tests/fixtures/token_classes [--heads tests/fixtures/heads]

Run with the development virtualenv (seqeval, torch, transformers, tokenizers). Floats are written
with Python's repr, which reads back to the same double.
"""
import argparse
import importlib.metadata
import json
import math
import os
import random
import warnings

from seqeval.metrics import accuracy_score, classification_report
from seqeval.metrics.sequence_labeling import get_entities
from seqeval.scheme import BILOU, IOB1, IOB2, IOBES, IOE1, IOE2, Tokens

SCHEMES = {"IOB1": IOB1, "IOB2": IOB2, "IOE1": IOE1, "IOE2": IOE2, "IOBES": IOBES, "BILOU": BILOU}
PREFIXES = {"IOB1": "IOB", "IOB2": "IOB", "IOE1": "IOE", "IOE2": "IOE", "IOBES": "IOBES", "BILOU": "BILOU"}
TYPES = ["PER", "LOC", "ORG", "MISC"]
# Tags the lenient reader takes as they come: bare prefixes, other first characters, several dashes,
# a type without a prefix, non-ASCII.
ODD_TAGS = ["O", "B", "I", "E", "S", "I-", "B--X", "X-PER", "PER", ".-LOC", ".", "B-PER-X", "-", "--",
            "É-PER", "B-É", "I-PER", "Other", "U-LOC", "L-LOC", "b-PER"]


def scores(row):
    return {"precision": float(row["precision"]), "recall": float(row["recall"]), "f1": float(row["f1-score"]),
            "support": int(row["support"])}


def nan_to_none(d):
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


def metrics_case(name, truth, predicted, scheme):
    case = {"name": name, "scheme": scheme, "truth": truth, "predicted": predicted}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if scheme == "conlleval":
                rep = classification_report(truth, predicted, output_dict=True, zero_division="warn")
            else:
                rep = classification_report(truth, predicted, output_dict=True, mode="strict",
                                            scheme=SCHEMES[scheme])
        except (ValueError, KeyError, IndexError) as e:
            case["error"] = type(e).__name__
            return case
        except (ZeroDivisionError, TypeError):
            return None  # no sentences at all: seqeval refuses the input itself
    avgs = {"micro avg", "macro avg", "weighted avg"}
    case["per_type"] = [dict(type=k, **scores(v)) for k, v in rep.items() if k not in avgs]
    case["micro"] = scores(rep["micro avg"])
    case["macro"] = nan_to_none(scores(rep["macro avg"]))
    case["weighted"] = nan_to_none(scores(rep["weighted avg"]))
    if sum(len(s) for s in truth):
        case["accuracy"] = float(accuracy_score(truth, predicted))
    return case


def random_tags(rng, n, prefixes, types, odd=0.0):
    out = []
    for _ in range(n):
        if odd and rng.random() < odd:
            out.append(rng.choice(ODD_TAGS))
            continue
        p = rng.choice(prefixes)
        out.append("O" if p == "O" else p + "-" + rng.choice(types))
    return out


def perturb(rng, tags, prefixes, types):
    # A prediction near the truth: a few tags changed, as a tagger's mistakes are.
    out = list(tags)
    for i in range(len(out)):
        if rng.random() < 0.2:
            p = rng.choice(prefixes)
            out[i] = "O" if p == "O" else p + "-" + rng.choice(types)
    return out


def sentences(rng, count, prefixes, types, odd=0.0):
    truth = [random_tags(rng, rng.randint(0, 9), prefixes, types, odd) for _ in range(count)]
    pred = [perturb(rng, s, prefixes, types) for s in truth]
    return truth, pred


# ---- the pipeline and run_ner on the tiny token classifiers ----

WORDS = ["john", "smith", "mary", "lives", "in", "new", "york", "visited", "berlin", "london", "paris", "and",
         "the", "city", "of", "works", "at", "google", "a", "is", "big"]
PIECES = ["##s", "##ing", "##ed", "##er", "##burg", "##ton"]
NER_MODELS = ["bert-tokcls-f32", "distilbert-tokcls-f32"]
# Entity groups only, on the short texts (their positions differ from BERT's 32): every other
# family's token classifier, through the same tokenizer (ids below 120 suit each).
MORE_NER_MODELS = ["roberta-tokcls-f32", "xlm-roberta-tokcls-f32", "mpnet-tokcls-f32", "modernbert-tokcls-f32",
                   "llama-tokcls-f32", "mistral-tokcls-f32", "qwen2-tokcls-f32", "qwen3-tokcls-f32"]
TEXTS = [
    "John Smith lives in New York.",
    "Mary visited Berlin, and London's city!",
    "Zürich ☃ and Köln are big",
    "the",
    "Smithton works at Google in Paris and Johnsburg visited the city of London and New York with Mary Smith "
    "and John, who lives in Berlin.",
]


def make_tokenizer(out_dir):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = specials + letters + ["##" + c for c in letters] + [".", ",", "!", "'"] + WORDS + PIECES
    assert len(vocab) <= 120, len(vocab)
    ids = {t: i for i, t in enumerate(vocab)}
    tok = Tokenizer(models.WordPiece(vocab=ids, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(specials)
    path = os.path.join(out_dir, "tokenizer-wordpiece")
    os.makedirs(path, exist_ok=True)
    tok.save(os.path.join(path, "tokenizer.json"))
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                   "mask_token": "[MASK]", "model_max_length": 32, "do_lower_case": True}, f, indent=1)
        f.write("\n")
    return path


def fast_tokenizer(path):
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_file=os.path.join(path, "tokenizer.json"), unk_token="[UNK]",
                                   pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   model_max_length=32)


def plain(entity):
    out = {}
    for k, v in entity.items():
        out[k] = float(v) if k == "score" else int(v) if k in ("start", "end", "index") else v
    return out


def tagged_sentences(rng):
    sents = []
    for _ in range(24):
        n = rng.randint(1, 9)
        words = [rng.choice(WORDS + ["Smithton", "Johnsburg", "☃", ",", "Zürich", "works"]) for _ in range(n)]
        words = [w.capitalize() if rng.random() < 0.3 else w for w in words]
        sents.append(words)
    return sents


def write_pipeline_golden(out_dir, heads_dir):
    import torch
    from transformers import AutoModelForTokenClassification, pipeline
    from seqeval.metrics import classification_report as report
    from seqeval.scheme import IOB2 as iob2

    tok_path = make_tokenizer(out_dir)
    tokenizer = fast_tokenizer(tok_path)
    rng = random.Random(5454)
    sentences = tagged_sentences(rng)
    groups, evals = {}, {}
    truth_tags = None
    for name in NER_MODELS + MORE_NER_MODELS:
        model = AutoModelForTokenClassification.from_pretrained(os.path.join(heads_dir, name)).eval()
        labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
        rows = []
        texts = TEXTS if name in NER_MODELS else TEXTS[:4]
        for strategy in ("none", "simple", "first", "average", "max"):
            pipe = pipeline("token-classification", model=model, tokenizer=tokenizer, aggregation_strategy=strategy,
                            device="cpu")
            for i, text in enumerate(texts):
                if strategy == "none":
                    enc = tokenizer(text, truncation=True)
                    rows.append({"text": text, "ids": enc["input_ids"]})
                rows[i][strategy] = [plain(e) for e in pipe(text)]
        groups[name] = rows
        if name not in NER_MODELS:
            continue

        # run_ner: words to sub-tokens (is_split_into_words), the first sub-token's prediction.
        predicted = []
        with torch.no_grad():
            for words in sentences:
                enc = tokenizer(words, is_split_into_words=True, truncation=True, return_tensors="pt")
                logits = model(**enc).logits[0]
                best = logits.argmax(-1).tolist()
                seen, tags = set(), []
                for t, w in enumerate(enc.word_ids()):
                    if w is None or w in seen:
                        continue
                    seen.add(w)
                    tags.append(labels[best[t]])
                assert len(tags) == len(words)
                predicted.append(tags)
        if truth_tags is None:
            # The truth: the first model's predictions with a third of the tags changed, so that
            # the metrics are neither 0 nor 1.
            truth_tags = [[rng.choice(labels) if rng.random() < 0.33 else t for t in s] for s in predicted]
        result = {}
        for scheme in ("conlleval", "IOB2"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rep = report(truth_tags, predicted, output_dict=True,
                             **({} if scheme == "conlleval" else {"mode": "strict", "scheme": iob2}))
            avgs = {"micro avg", "macro avg", "weighted avg"}
            result[scheme] = {"per_type": [dict(type=k, **scores(v)) for k, v in rep.items() if k not in avgs],
                              "micro": scores(rep["micro avg"]),
                              "accuracy": float(accuracy_score(truth_tags, predicted))}
        evals[name] = {"labels": labels, "predicted": predicted, "metrics": result}

    label_ids = {t: i for i, t in enumerate(evals[NER_MODELS[0]]["labels"])}
    with open(os.path.join(out_dir, "ner.conll"), "w", encoding="utf-8") as f:
        f.write("-DOCSTART- -X- O\n\n")
        for words, tags in zip(sentences, truth_tags):
            for w, t in zip(words, tags):
                f.write("%s X %s\n" % (w, t))
            f.write("\n")
    with open(os.path.join(out_dir, "ner.jsonl"), "w", encoding="utf-8") as f:
        for i, (words, tags) in enumerate(zip(sentences, truth_tags)):
            f.write(json.dumps({"id": str(i), "tokens": words, "ner_tags": [label_ids[t] for t in tags]},
                               ensure_ascii=False) + "\n")
    with open(os.path.join(out_dir, "entity_groups.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer": "tokenizer-wordpiece", "models": groups}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "ner_eval.json"), "w", encoding="utf-8") as f:
        json.dump({"dataset": ["ner.conll", "ner.jsonl"], "truth": truth_tags, "models": evals}, f,
                  ensure_ascii=False)
        f.write("\n")
    print("wrote", tok_path, "entity_groups.json, ner.conll, ner.jsonl, ner_eval.json")


SPLIT_TOKENIZERS = ["token_classes/tokenizer-wordpiece/tokenizer.json", "tokenizers/modernbert-bpe/tokenizer.json",
                    "tokenizers/unigram-xlmr/tokenizer-published.json", "tokenizers/mpnet/tokenizer.json"]
SPLIT_WORDS = [["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
               ["Zürich", "☃", "and", "Köln"], ["don't", "U.S.", "e-mail", "  ", "x"], ["Smithton"]]


def write_split_words_golden(out_dir):
    from tokenizers import pre_tokenizers
    fixtures = os.path.dirname(os.path.abspath(out_dir))
    cases = []
    for rel in SPLIT_TOKENIZERS:
        for prefix in (False, True):
            tok = fast_tokenizer_file(os.path.join(fixtures, rel))
            if prefix:
                if "ByteLevel" not in str(tok.backend_tokenizer.pre_tokenizer):
                    continue
                # What RobertaTokenizerFast(add_prefix_space=True) (run_ner for roberta) does.
                tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
            for words in SPLIT_WORDS:
                for max_length in (None, 7):
                    kw = {"truncation": True, "max_length": max_length} if max_length else {}
                    enc = tok(words, is_split_into_words=True, **kw)
                    cases.append({"tokenizer": rel, "add_prefix_space": prefix, "words": words,
                                  "max_length": max_length or 0, "ids": enc["input_ids"],
                                  "word_ids": [-1 if w is None else w for w in enc.word_ids()]})
    with open(os.path.join(out_dir, "split_words.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": cases}, f, ensure_ascii=False)
        f.write("\n")
    print("wrote split_words.json", len(cases), "cases")


def fast_tokenizer_file(path):
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_file=path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--heads", default=os.path.join(os.path.dirname(__file__), "../../tests/fixtures/heads"))
    args = ap.parse_args()
    rng = random.Random(54)
    cases = []

    fixed = [
        ("readme", [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]],
         [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]),
        ("empty", [], []),
        ("empty_sentences", [[], []], [[], []]),
        ("all_outside", [["O", "O"], ["O"]], [["O", "O"], ["O"]]),
        ("no_predictions", [["B-PER", "I-PER"]], [["O", "O"]]),
        ("only_predictions", [["O", "O"]], [["B-LOC", "O"]]),
        ("i_after_o", [["O", "I-PER", "I-PER", "O"]], [["O", "B-PER", "I-PER", "O"]]),
        ("type_change", [["B-PER", "I-LOC", "I-LOC"]], [["B-PER", "B-LOC", "I-LOC"]]),
        ("iobes", [["S-PER", "B-LOC", "I-LOC", "E-LOC", "O"]], [["S-PER", "B-LOC", "E-LOC", "S-LOC", "O"]]),
        ("bilou", [["U-PER", "B-LOC", "I-LOC", "L-LOC", "O"]], [["U-PER", "B-LOC", "L-LOC", "U-LOC", "O"]]),
        ("ioe", [["I-PER", "E-PER", "I-LOC", "O", "E-ORG"]], [["E-PER", "E-PER", "I-LOC", "E-LOC", "E-ORG"]]),
        ("odd_tags", [["X-PER", "PER", ".-LOC", "B--X", "É-PER", "B-É", "Other"]],
         [["X-PER", "B-PER", ".-LOC", "B--X", "É-PER", "I-É", "Other"]]),
        ("entity_at_sentence_end", [["O", "B-PER"], ["I-PER", "O"]], [["O", "B-PER"], ["B-PER", "O"]]),
        ("many_types", [["B-T%d" % i for i in range(12)]], [["B-T%d" % i if i % 3 else "O" for i in range(12)]]),
        ("invalid_prefix", [["B-PER", "X-PER"]], [["B-PER", "O"]]),
        ("lowercase_prefix", [["b-PER"]], [["B-PER"]]),
        ("empty_tag", [["B-PER", ""]], [["B-PER", "O"]]),
    ]
    for name, truth, pred in fixed:
        for scheme in ["conlleval"] + list(SCHEMES):
            c = metrics_case(name, truth, pred, scheme)
            if c is not None:
                cases.append(c)

    # Random data: per scheme its own prefixes (and the others' now and then, which strict mode
    # refuses), and for conlleval odd tags too.
    for k in range(30):
        truth, pred = sentences(rng, rng.randint(1, 6), "IOB", TYPES[: rng.randint(1, 4)])
        for scheme in ("conlleval", "IOB1", "IOB2"):
            cases.append(metrics_case("iob_random_%d" % k, truth, pred, scheme))
    for scheme, prefixes in PREFIXES.items():
        for k in range(20):
            truth, pred = sentences(rng, rng.randint(1, 6), prefixes + "O" * 2, TYPES[: rng.randint(1, 4)])
            cases.append(metrics_case("%s_random_%d" % (scheme, k), truth, pred, scheme))
            cases.append(metrics_case("%s_random_%d" % (scheme, k), truth, pred, "conlleval"))
        for k in range(5):
            truth, pred = sentences(rng, 3, "IOBESUL", TYPES[:2])
            cases.append(metrics_case("%s_mixed_%d" % (scheme, k), truth, pred, scheme))
    for k in range(25):
        truth, pred = sentences(rng, rng.randint(1, 5), "IOBES", TYPES, odd=0.3)
        cases.append(metrics_case("odd_random_%d" % k, truth, pred, "conlleval"))
    cases = [c for c in cases if c is not None]

    # Entities of single sequences, for the readers themselves.
    chunks = []
    for k in range(50):
        tags = random_tags(rng, rng.randint(0, 10), "IOBESO", TYPES[:3], odd=0.25 if k % 2 else 0.0)
        chunks.append({"tags": tags, "chunks": [list(c) for c in get_entities(tags)]})
    strict = []
    for scheme, cls in SCHEMES.items():
        for k in range(20):
            tags = random_tags(rng, rng.randint(0, 10), PREFIXES[scheme] + "OO", TYPES[:2])
            ents = Tokens(tags, cls).entities
            strict.append({"scheme": scheme, "tags": tags, "entities": [[e.tag, e.start, e.end] for e in ents]})

    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "seqeval.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"source": "seqeval " + importlib.metadata.version("seqeval"),
                   "metrics": cases, "chunks": chunks, "strict_entities": strict}, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, len(cases), "metric cases")
    write_pipeline_golden(args.out_dir, args.heads)
    write_split_words_golden(args.out_dir)


if __name__ == "__main__":
    main()
