#!/usr/bin/env bash
# tach train --task on ModernBERT: the masked LM (its decoder tied to the embeddings, so saved
# without one), a token classifier made new on a masked-LM checkpoint (its head block lent by the
# checkpoint, the classifier new), question answering with LoRA (the `classifier` it answers with
# saved whole); a causal decoder refuses the masked LM naming the tasks it trains.
# Usage: train_modernbert_tasks.sh path/to/tach fixtures_dir
set -euo pipefail
tach=$1
fixtures=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tok="$fixtures/token_classes/tokenizer-wordpiece"
mlm="$fixtures/train_tasks/modernbert-mlm-f32/model"
common=(-s 32 -b 4 --runs-dir "$dir" --no-progress --no-tensorboard)
fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v:=v[k] for k in sys.argv[2:]]; print(json.dumps(v))' "$@"; }
tensors() { python3 -c '
import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
print(" ".join(sorted(k for k in json.loads(f.read(n)) if k != "__metadata__")))' "$1"; }

# The masked LM: perplexity reported, saved as ModernBertForMaskedLM with decoder.bias and no
# decoder.weight (tied: transformers takes the embeddings).
"$tach" train -m "$mlm" -k "$tok" "${common[@]}" -d "$fixtures/train/tiny.csv" --eval-dataset "$fixtures/train/tiny.csv" \
  --task mlm --epochs 1 --run-id mlm >"$dir/mlm.out" 2>"$dir/mlm.err" || { cat "$dir/mlm.err"; fail "mlm run"; }
grep -Eq "epoch 1: train loss [0-9.]+, eval loss [0-9.]+, perplexity [0-9.]+" "$dir/mlm.out" ||
  fail "no perplexity: $(cat "$dir/mlm.out")"
[ "$(field "$dir/mlm/model/config.json" architectures)" = '["ModernBertForMaskedLM"]' ] || fail "mlm architecture"
saved=$(tensors "$dir/mlm/model/model.safetensors")
[[ " $saved " == *" decoder.bias "* && " $saved " == *" head.dense.weight "* ]] || fail "mlm head not saved: $saved"
[[ " $saved " != *" decoder.weight "* ]] || fail "the tied decoder was saved as a tensor of its own"

# Token classification on the masked LM: a new classifier of the sorted tags, head.dense and
# head.norm taken from the checkpoint, the decoder's bias left out.
"$tach" train -m "$mlm" -k "$tok" "${common[@]}" -d "$fixtures/token_classes/ner.conll" --task token-classification \
  --max-steps 2 --run-id ner >"$dir/ner.out" 2>"$dir/ner.err" || { cat "$dir/ner.err"; fail "token classification run"; }
grep -q "newly initialised (the checkpoint has none): classifier.weight, classifier.bias" "$dir/ner.err" ||
  fail "no new-head note: $(cat "$dir/ner.err")"
! grep -q "newly initialised.*head\.dense" "$dir/ner.err" || fail "head.dense was not taken from the checkpoint"
[ "$(field "$dir/ner/model/config.json" architectures)" = '["ModernBertForTokenClassification"]' ] || fail "ner architecture"
[ "$(field "$dir/ner/model/config.json" id2label 0)" = '"B-LOC"' ] || fail "ner labels"
[[ " $(tensors "$dir/ner/model/model.safetensors") " != *" decoder.bias "* ]] || fail "the masked LM's bias was kept"

# Question answering with LoRA: the answering head, `classifier` here, is saved whole besides
# PEFT's qa_outputs, so that it trains.
"$tach" train -m "$fixtures/train_tasks/modernbert-qa-f32/model" -k "$fixtures/question_answering/tokenizer-tiny" \
  -d "$fixtures/train_tasks/squad_train.jsonl" --task question-answering -s 24 --doc-stride 6 -b 4 --method lora \
  --runs-dir "$dir" --no-progress --no-tensorboard --max-steps 2 --run-id qa >"$dir/qa.out" 2>"$dir/qa.err" ||
  { cat "$dir/qa.err"; fail "question answering run"; }
[ "$(field "$dir/qa/model/adapter_config.json" modules_to_save)" = '["classifier", "qa_outputs"]' ] ||
  fail "qa modules_to_save: $(field "$dir/qa/model/adapter_config.json" modules_to_save)"
[ "$(field "$dir/qa/model/adapter_config.json" task_type)" = '"QUESTION_ANS"' ] || fail "qa task_type"

# A causal decoder has no masked-LM head: refused before training, naming what it trains.
if "$tach" train -m preset:qwen2-tiny -k "$tok" "${common[@]}" -d "$fixtures/train/tiny.csv" --task mlm \
  --max-steps 1 --run-id refused >"$dir/refused.out" 2>"$dir/refused.err"; then
  fail "a causal decoder trained as a masked LM"
fi
grep -q "are causal language models with no masked-LM head; --task sequence-classification, token-classification, question-answering train them" "$dir/refused.err" ||
  fail "refusal: $(cat "$dir/refused.err")"
echo "PASS"
