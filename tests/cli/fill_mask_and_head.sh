#!/bin/sh
# tach fill-mask through the binary: --json equals transformers' fill-mask pipeline (the golden
# file of make_fill_mask_golden.py) for one and two masks, batched (-b) and timed (--repeat) alike; a text without the mask token and a
# model with another head are refused. --head on the commands: classify --json gives every head's
# raw outputs in the documented shapes, bench records the head in config.json, embed and bad
# values are usage errors (exit 2).
# usage: fill_mask_and_head.sh TACH FIXTURES_DIR WORK_DIR
set -eu
command -v python3 > /dev/null || { echo "skip: python3 (to read the JSON) is not installed"; exit 77; }
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
mlm=$fx/heads/bert-mlm-f32
tok=$fx/fill_mask/wordpiece-120

# 1. fill-mask --json against the pipeline's golden output.
"$tach" fill-mask -m "$mlm" -k "$tok" --text "paris is the [MASK] of france." \
  --text "[MASK] is the [MASK] of France." --top-k 5 --json > "$work/fill.json"
python3 - "$work/fill.json" "$fx/fill_mask/expected.json" <<'EOF'
import json, sys
got = json.load(open(sys.argv[1]))
want = {t["text"]: t for c in json.load(open(sys.argv[2]))["cases"] if c["model"] == "bert-mlm-f32" for t in c["texts"]}
assert got["schema"] == "tach.fill_mask/1" and got["model"]["head"] == "masked-lm", got["model"]
# Its timing comes with the load it was taken under, as every timed command's does.
assert set(got["load"]) == {"measured", "other_cores_mean", "other_cores_max", "load_average_1m", "contended"}, got
assert got["tokenizer"]["mask_token"] == "[MASK]", got["tokenizer"]
for r in got["results"]:
    w = want[r["text"]]
    assert r["input_ids"] == w["input_ids"], (r["input_ids"], w["input_ids"])
    assert len(r["masks"]) == len(w["masks"])
    for m, wm in zip(r["masks"], w["masks"]):
        assert r["input_ids"][m["position"]] == 4, m["position"]
        for p, wp in zip(m["predictions"], wm[:w["top_k"]]):
            assert (p["token"], p["token_str"], p["sequence"]) == (wp["token"], wp["token_str"], wp["sequence"]), (p, wp)
            assert abs(p["score"] - wp["score"]) < 1e-4, (p, wp)
print("ok: fill-mask --json equals the pipeline (%d texts)" % len(got["results"]))
EOF

# 1b. The same texts in one padded forward (-b 2), timed over 3 runs: the same predictions, the
# median of the runs' times, one forward per run.
"$tach" fill-mask -m "$mlm" -k "$tok" --text "paris is the [MASK] of france." \
  --text "[MASK] is the [MASK] of France." --top-k 5 --json -b 2 --warmup 1 --repeat 3 > "$work/fill_b2.json"
python3 - "$work/fill.json" "$work/fill_b2.json" <<'EOF'
import json, statistics, sys
one, two = (json.load(open(p)) for p in sys.argv[1:3])
for a, b in zip(one["results"], two["results"]):
    assert a["input_ids"] == b["input_ids"]
    for ma, mb in zip(a["masks"], b["masks"]):
        assert [p["token"] for p in ma["predictions"]] == [p["token"] for p in mb["predictions"]], (ma, mb)
        assert all(abs(p["score"] - q["score"]) < 1e-5 for p, q in zip(ma["predictions"], mb["predictions"]))
t = two["timing"]
assert t["repetitions"] == 3 and t["warmup"] == 1 and len(t["samples"]) == 3 and t["forwards"] == 1, t
assert t["fill_s"] == statistics.median(t["samples"]) and t["min"] <= t["fill_s"] <= t["max"], t
assert one["timing"]["forwards"] == 2 and len(one["timing"]["samples"]) == 1, one["timing"]
print("ok: fill-mask -b 2 --repeat 3 gives the same predictions, timed as the median of 3 runs")
EOF

expect_failure() {  # expect_failure STATUS TEXT COMMAND...: exits STATUS and says TEXT
  want_code=$1
  want_text=$2
  shift 2
  set +e
  msg=$("$@" 2>&1)
  code=$?
  set -e
  if [ "$code" -ne "$want_code" ] || ! echo "$msg" | grep -qF -- "$want_text"; then
    echo "FAIL: $* exited $code (want $want_code) saying:"
    echo "$msg" | tail -3
    exit 1
  fi
  echo "ok: exit $code: $(echo "$msg" | grep -F -- "$want_text" | head -1)"
}
expect_failure 2 'has no mask token ([MASK])' "$tach" fill-mask -m "$mlm" -k "$tok" --text "paris is the capital."
expect_failure 1 'fill-mask needs a masked LM' "$tach" fill-mask -m "$fx/heads/bert-qa-f32" -k "$tok" --text "a [MASK]"
expect_failure 2 'not one of auto, sequence-classification' "$tach" classify -m "$mlm" --head masked_lm
expect_failure 2 'embeddings pool the body' "$tach" embed -m "$mlm" -k "$tok" --text hi --head masked-lm

# 2. classify --json: each head's raw outputs over the rows' real tokens.
for head in masked-lm token-classification question-answering sequence-classification; do
  "$tach" classify -m "$mlm" --ids "2 29 6 5 4 3" --ids "2 29 3" --head "$head" --repeat 1 --warmup 0 --json \
    > "$work/classify-$head.json"
done
python3 - "$work" <<'EOF'
import json, sys
d = sys.argv[1]
def rows(head):
    j = json.load(open("%s/classify-%s.json" % (d, head)))
    assert j["model"]["head"] == head, j["model"]["head"]
    return j["rows"], j
mlm, _ = rows("masked-lm")
assert [len(r["logits"]) for r in mlm] == [6, 3] and len(mlm[0]["logits"][0]) == 120, "masked LM: [tokens][vocabulary]"
tok, j = rows("token-classification")
labels = len(j["model"]["labels"])
assert [len(r["logits"]) for r in tok] == [6, 3] and all(len(t) == labels for r in tok for t in r["logits"])
qa, _ = rows("question-answering")
assert [(len(r["start_logits"]), len(r["end_logits"])) for r in qa] == [(6, 6), (3, 3)], "QA: [tokens] each"
seq, j = rows("sequence-classification")
assert all(len(r["logits"]) == len(j["model"]["labels"]) and "label" in r for r in seq), "classifier: [labels]"
print("ok: classify --json raw outputs: [tokens][vocabulary], [tokens][labels], start/end [tokens], [labels]")
EOF

# 3. bench --head: the points run the head asked for, and config.json records it.
(cd "$work" && "$tach" bench -m "$mlm" --head question-answering -b 1 -s 8 --runs 2 --warmup 0 --no-progress \
  --run-id head > /dev/null)
python3 - "$work/runs/head" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1] + "/config.json"))
assert c["head"] == "question-answering", c.get("head")
lines = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl") if l.strip()]
assert lines and all(l.get("status", "ok") == "ok" for l in lines), lines[:1]
print("ok: bench --head question-answering ran %d point(s), config.json head %s" % (len(lines), c["head"]))
EOF

# 4. The YAML key model.head, and a value that is not a head.
printf 'model:\n  name: %s\n  head: token-classification\n' "$mlm" > "$work/head.yaml"
(cd "$work" && "$tach" bench -c head.yaml -b 1 -s 8 --runs 2 --warmup 0 --no-progress --run-id yaml > /dev/null)
grep -q '"head": "token-classification"' "$work/runs/yaml/config.json" ||
  { echo "FAIL: model.head of the YAML is not in config.json"; exit 1; }
echo "ok: model.head in a bench YAML"
printf 'model:\n  name: %s\n  head: masked_lm\n' "$mlm" > "$work/bad.yaml"
expect_failure 2 "is not a head tach builds" "$tach" bench -c "$work/bad.yaml" -b 1 -s 8 --runs 2

# 5. train --head names the task (masked-lm: mlm), agrees with --task or is refused; info --head.
(cd "$work" && "$tach" train -m "$mlm" -k "$tok" -d "$fx/train/tiny.csv" --head masked-lm --max-steps 1 -b 4 \
  --no-progress --run-id train-head > /dev/null 2>&1)
grep -q '"task": "mlm"' "$work/runs/train-head/config.json" || { echo "FAIL: train --head masked-lm did not train mlm"; exit 1; }
echo "ok: train --head masked-lm trains --task mlm"
expect_failure 2 "does not train the task's head (token-classification)" \
  "$tach" train -m "$mlm" -d "$fx/train/tiny.csv" --head masked-lm --task token-classification
expect_failure 2 "training needs a head to train" "$tach" train -m "$mlm" -d "$fx/train/tiny.csv" --head none
"$tach" info -m "$mlm" --head question-answering | grep -q "head       question-answering (new; published with masked-lm)" ||
  { echo "FAIL: info --head question-answering"; exit 1; }
echo "ok: info --head builds the head asked for"

# 6. estimate --head counts the head asked for: the masked LM's own, a new token classifier, none.
count() { "$tach" estimate -m "$mlm" --head "$1" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print((j if isinstance(j, dict) else j[0])["parameters"])'; }
own=$(count auto)
new=$(count token-classification)
bare=$(count none)
[ "$own" -gt "$new" ] && [ "$new" -gt "$bare" ] ||
  { echo "FAIL: estimate --head: masked LM $own, token classifier $new, bare body $bare parameters"; exit 1; }
echo "ok: estimate --head: masked LM $own, token classifier $new, bare body $bare parameters"
