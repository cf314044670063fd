"""Which family and head the onnxruntime engine exports: for every family and head with a tiny
fixture in tests/fixtures (encoders, decoders, heads; a family's bare body from any of its
checkpoints), the export `tach bench --engine onnxruntime` makes, checked in ONNX Runtime against
transformers on a padded batch of another shape, in f32. Prints the table of docs/engines.md
("The ONNX export") and each refusal's reason.

    ~/tach-ref/bin/python scripts/peers/onnx_export_table.py
"""
import argparse
import json
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

from tach.engines._errors import EngineError  # noqa: E402
from tach.engines._onnx_export import export  # noqa: E402
from tach.engines._requests import Load  # noqa: E402

FAMILIES = {"bert": "BERT", "distilbert": "DistilBERT", "roberta": "RoBERTa", "xlm-roberta": "XLM-RoBERTa",
            "mpnet": "MPNet", "modernbert": "ModernBERT", "llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2",
            "qwen3": "Qwen3", "gemma3_text": "Gemma 3"}
# (column, architecture suffix, task)
HEADS = [("bare body", "Model", "feature-extraction"),
         ("sequence classification", "ForSequenceClassification", "sequence-classification"),
         ("token classification", "ForTokenClassification", "token-classification"),
         ("question answering", "ForQuestionAnswering", "question-answering"),
         ("masked LM", "ForMaskedLM", "masked-lm"),
         ("causal LM", "ForCausalLM", "causal-lm")]


def fixtures():
    """{model_type: {task: fixture directory}}: the first fixture of each head, by name."""
    found = {}
    for group in ("encoders", "decoders", "heads"):
        root = os.path.join(REPO, "tests", "fixtures", group)
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name, "config.json")
            if not os.path.isfile(path):
                continue
            with open(path) as f:
                config = json.load(f)
            heads = found.setdefault(config["model_type"], {})
            for _, suffix, task in HEADS:
                if config["architectures"][0].endswith(suffix):
                    heads.setdefault(task, os.path.dirname(path))
            heads.setdefault("any", os.path.dirname(path))
    return found


def main():
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    found = fixtures()
    rows, refusals = [], []
    for model_type, family in FAMILIES.items():
        heads = found.get(model_type, {})
        cells = []
        for _, _, task in HEADS:
            model = heads.get(task) or (heads.get("any") if task == "feature-extraction" else None)
            if model is None:
                cells.append("—")
                continue
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory() as scratch:
                try:
                    export(Load(model=model, task=task, dtype="f32", device="cpu", threads=1), scratch)
                    cells.append("yes")
                except EngineError as e:
                    cells.append("refused")
                    refusals.append(str(e))
            print(f"{family} {task} ({os.path.relpath(model, REPO)}): {cells[-1]}, {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
        rows.append(f"| {family} | " + " | ".join(cells) + " |")
    print("| family | " + " | ".join(column for column, _, _ in HEADS) + " |")
    print("|---" * (len(HEADS) + 1) + "|")
    print("\n".join(rows))
    for reason in refusals:
        print(f"- {reason}")


if __name__ == "__main__":
    main()
