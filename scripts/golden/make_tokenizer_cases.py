#!/usr/bin/env python3
"""Hard tokenizer cases with the ids, type ids and offsets Hugging Face `tokenizers` gives,
for both shared tokenizers: tests/fixtures/tokenizers/hard_cases.jsonl.

    ~/tach-ref/bin/python scripts/golden/make_tokenizer_cases.py ../shared/tokenizers tests/fixtures/tokenizers

Offsets are converted to UTF-8 byte offsets (tach's convention); the Python package reports
character offsets.
"""
import json
import os
import sys

from tokenizers import Tokenizer

CASES = [
    "",
    " ",
    "   \t\n  ",
    "\x00\x01 control\x7f chars\x1b[0m",
    "zero\u200dwidth\u200cjoiners\u200b here",
    "cafe\u0301 vs caf\u00e9, nai\u0308ve vs na\u00efve",
    "\u6771\u4eac\u90fd\u3068\u5927\u962a\u5e9c\uff0c\u4e2d\u6587\u5b57\u7b26",
    "\U0001F469\u200d\U0001F469\u200d\U0001F467 family \U0001F44D\U0001F3FD thumbs",
    "\uff26\uff55\uff4c\uff4c\uff0d\uff57\uff49\uff44\uff54\uff48 \uff11\uff12\uff13",
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "x" * 101 + " short",
    "[CLS] inside [SEP] text [MASK] and <|endoftext|> or <|im_start|>user",
    "Hello\r\n\r\nworld\t\ttabs  and   spaces   ",
    "don't won't I'M we'LL they'Re 's",
    "numbers 1234567 3.14159 -42 1e10",
    "\u0130stanbul \u00df \u0391\u0392\u0393 \u0430\u0431\u0432",
    "emoji \u2764\ufe0f flags \U0001F1FA\U0001F1F8 keycap 1\ufe0f\u20e3",
    "\u00a0nbsp\u2003em\u3000ideographic\u2028line",
    "vertical\x0btab\x0cform\x85next line \ufffd replaced",
    "VERTICAL\x0bTAB only ascii\x0c",
]
PAIRS = [("How old are you?", "I am six."), ("", "second only"), ("first \u6771\u4eac", "")]


def char_to_byte_offsets(text, offsets):
    # Python str index -> UTF-8 byte index
    pos = [0]
    for ch in text:
        pos.append(pos[-1] + len(ch.encode("utf-8")))
    return [[pos[a], pos[b]] for a, b in offsets]


def main():
    tok_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "hard_cases.jsonl"), "w") as f:
        for name in ["bert-base-uncased", "qwen2.5"]:
            tok = Tokenizer.from_file(os.path.join(tok_dir, name, "tokenizer.json"))
            for add in (True, False):
                for text in CASES:
                    e = tok.encode(text, add_special_tokens=add)
                    f.write(json.dumps({"tokenizer": name, "text": text, "add_special": add, "ids": e.ids,
                                        "type_ids": e.type_ids,
                                        "offsets": char_to_byte_offsets(text, e.offsets)}) + "\n")
                for a, b in PAIRS:
                    e = tok.encode(a, b, add_special_tokens=add)
                    # Offsets of a pair index into their own sequence; keep ids and type ids.
                    f.write(json.dumps({"tokenizer": name, "text": a, "pair": b, "add_special": add, "ids": e.ids,
                                        "type_ids": e.type_ids}) + "\n")
    print("wrote", os.path.join(out_dir, "hard_cases.jsonl"))


if __name__ == "__main__":
    main()


def truncation_cases(tok_dir, out_dir):
    """Truncation and padding as tokenizers applies them: tests/fixtures/tokenizers/truncation_cases.jsonl."""
    texts = ["the quick brown fox jumps over the lazy dog again and again", "short one",
             "a somewhat longer second sentence for pairs"]
    rows = []
    for name in ["bert-base-uncased", "qwen2.5"]:
        tok = Tokenizer.from_file(os.path.join(tok_dir, name, "tokenizer.json"))
        for strategy in ["longest_first", "only_first", "only_second"]:
            for direction in ["right", "left"]:
                for max_length, stride in [(8, 0), (8, 2), (12, 3), (5, 1)]:
                    tok.no_padding()
                    tok.enable_truncation(max_length, stride=stride, strategy=strategy, direction=direction)
                    cases = [(texts[0], None), (texts[0], texts[2]), (texts[1], texts[2])]
                    for a, b in cases:
                        if strategy == "only_second" and b is None:
                            continue
                        try:
                            e = tok.encode(a, b) if b is not None else tok.encode(a)
                        except BaseException as ex:  # too short to truncate, or stride too large: tach errors too
                            rows.append({"tokenizer": name, "text": a, "pair": b, "strategy": strategy,
                                         "direction": direction, "max_length": max_length, "stride": stride,
                                         "error": str(ex)})
                            continue
                        rows.append({"tokenizer": name, "text": a, "pair": b, "strategy": strategy,
                                     "direction": direction, "max_length": max_length, "stride": stride,
                                     "ids": e.ids, "type_ids": e.type_ids,
                                     "overflowing": [o.ids for o in e.overflowing],
                                     "overflowing_type_ids": [o.type_ids for o in e.overflowing]})
        tok.no_truncation()
        for direction in ["right", "left"]:
            for multiple in [None, 8]:
                tok.enable_padding(direction=direction, pad_id=0, pad_type_id=0, pad_token="[PAD]",
                                   pad_to_multiple_of=multiple)
                batch = tok.encode_batch(texts)
                rows.append({"tokenizer": name, "batch": texts, "padding": "longest", "direction": direction,
                             "multiple": multiple, "ids": [e.ids for e in batch],
                             "attention_mask": [e.attention_mask for e in batch]})
                tok.enable_padding(direction=direction, pad_id=0, pad_type_id=0, pad_token="[PAD]", length=20,
                                   pad_to_multiple_of=multiple)
                e = tok.encode(texts[1])
                rows.append({"tokenizer": name, "text": texts[1], "padding": "fixed", "length": 20,
                             "direction": direction, "multiple": multiple, "ids": e.ids,
                             "attention_mask": e.attention_mask, "type_ids": e.type_ids})
        tok.no_padding()
    with open(os.path.join(out_dir, "truncation_cases.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print("wrote", len(rows), "truncation and padding cases")


if __name__ == "__main__" and len(sys.argv) > 2:
    truncation_cases(sys.argv[1], sys.argv[2])
