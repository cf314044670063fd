#!/bin/sh
# The checkpoints users download, through the binary: bert-base-uncased's published config.json
# (BertForMaskedLM) is estimated with transformers' parameter count; tach info says the head a
# masked-LM, token-classification or QA checkpoint was published with and the count transformers
# gives; tach estimate counts the same; tach bench times the masked LM's forward.
# usage: heads.sh TACH FIXTURES_DIR WORK_DIR
set -eu
command -v python3 > /dev/null || { echo "skip: python3 (to read the JSON) is not installed"; exit 77; }
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work/bert-base-uncased"

# 1. bert-base-uncased's config.json as published: refused before ("architecture ... is not supported").
cat > "$work/bert-base-uncased/config.json" <<'JSON'
{"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false,
 "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
 "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
 "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute",
 "transformers_version": "4.6.0.dev0", "type_vocab_size": 2, "use_cache": true, "vocab_size": 30522}
JSON
"$tach" estimate -m "$work/bert-base-uncased" --json > "$work/estimate.json"
python3 - "$work/estimate.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
# transformers' BertForMaskedLM(BertConfig(...)): 109,514,298 parameters (the decoder tied).
assert e["parameters"] == 109514298 and e["architecture"] == "BertForMaskedLM", (e["parameters"], e["architecture"])
PY

# 2. tach info and tach estimate on tiny checkpoints of each head: the head, and transformers' count.
for case in bert-mlm-f32 distilbert-tokcls-f32 roberta-qa-f32 modernbert-mlm-f32; do
  "$tach" info -m "$fx/heads/$case" > "$work/$case.txt"
  "$tach" info -m "$fx/heads/$case" --json > "$work/$case.json"
  "$tach" estimate -m "$fx/heads/$case" -s 16 --json > "$work/$case.estimate.json"
  python3 - "$work/$case.txt" "$work/$case.json" "$work/$case.estimate.json" "$fx/heads/$case/expected.json" <<'PY'
import json, sys
text, info, est, want = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
head = {"ForMaskedLM": "masked-lm", "ForTokenClassification": "token-classification",
        "ForQuestionAnswering": "question-answering"}
expected_head = next(v for k, v in head.items() if want["architecture"].endswith(k))
assert info["head"] == expected_head and info["checkpoint_head"] == expected_head, info
assert ("head       " + expected_head + " (as published)") in text, text
assert info["parameters"] == want["parameters"] == est["parameters"], (info["parameters"], est["parameters"], want["parameters"])
PY
done
# 3. tach bench times the masked LM's forward (the head as published), and says so.
"$tach" bench -m "$fx/heads/bert-mlm-f32" -b 1 -s 8 -r 1 --warmup 0 --runs-dir "$work/runs" --run-id mlm \
  --no-progress > "$work/bench.txt" 2>&1
grep -q "each run times: masked-LM forward" "$work/runs/mlm/summary.txt" || { cat "$work/runs/mlm/summary.txt"; exit 1; }
echo "ok"
