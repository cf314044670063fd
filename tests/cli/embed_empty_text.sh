#!/bin/sh
# tach embed of an empty text: sentence-transformers encodes "" as [CLS] [SEP] and returns that
# forward's vector, not zeros; tach must do the same. And --json's machine block names the device
# (docs/formats.md lists machine.device).
# usage: embed_empty_text.sh TACH MODEL_DIR TOKENIZER_DIR [QWEN_TOKENIZER_DIR QWEN_EMBEDDING_MODEL_DIR]
set -eu
command -v python3 > /dev/null || { echo "skip: python3 (to read the JSON) is not installed"; exit 77; }
tach=$1
out=$("$tach" embed -m "$2" -k "$3" --text "hello world" --text "" --json)
echo "$out" | python3 -c '
import json, math, sys
j = json.load(sys.stdin)
assert j["machine"]["device"] == "cpu", "machine.device: %r" % j["machine"].get("device")
empty = j["rows"][1]
assert empty["text"] == "" and empty["tokens"] == 2, "the empty text has %d tokens, not [CLS] [SEP]" % empty["tokens"]
norm = math.sqrt(sum(x * x for x in empty["embedding"]))
assert norm > 1e-3, "the empty text embeds to a zero vector (norm %g)" % norm
assert empty["embedding"] != j["rows"][0]["embedding"]
print("ok: machine.device cpu; the empty text is [CLS] [SEP], norm %.4f" % norm)
'
# The same through a file of lines: an empty line is an empty text.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'hello world\n\n' > "$tmp/lines.txt"
"$tach" embed -m "$2" -k "$3" -f "$tmp/lines.txt" --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)["rows"]
assert len(rows) == 2 and rows[1]["tokens"] == 2 and any(x != 0 for x in rows[1]["embedding"])
print("ok: an empty line of a file")
'
# A tokenizer that adds no special tokens (Qwen's) gives an empty text no token at all: refused,
# naming the row, rather than a vector of padding (zeros).
if [ -n "${4:-}" ] && [ -d "$4" ]; then
  set +e
  msg=$("$tach" embed -m "$5" -k "$4" --text "hello world" --text "" 2>&1)
  code=$?
  set -e
  echo "$msg" | tail -2
  [ "$code" -ne 0 ] && echo "$msg" | grep -q 'error: text 1 (counting from 0, in the order given) is empty after tokenization' ||
    { echo "FAIL: an empty text without special tokens was not refused (exit $code)"; exit 1; }
  echo "ok: an empty text without special tokens is refused by row"
else
  echo "(the Qwen2.5 tokenizer is not here: the refusal is not checked)"
fi
