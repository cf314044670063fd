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
