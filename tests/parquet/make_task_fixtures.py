#!/usr/bin/env python3
"""Writes the Parquet files of the per-token tasks that tests/fixtures/parquet/ holds, with
`datasets` (development virtualenv) as it writes a Hub dataset's split, from the JSONL fixtures
beside them (so a Parquet run and a JSONL run of one model must agree):
  squad-v2.parquet   rajpurkar/squad_v2's layout: id, title, context, question, answers
                     {text: list<string>, answer_start: list<int32>} (a struct of two lists),
                     from tests/fixtures/question_answering/squad-v2.jsonl
  ner.parquet        conll2003's layout: id, tokens list<string>, ner_tags
                     list<ClassLabel> whose names (the footer's `huggingface` metadata) are
                     TAG_NAMES, in an order other than the test model's id2label, from
                     tests/fixtures/token_classes/ner.jsonl (its integer tags in that order);
                     two row groups, dictionary pages, snappy
  lists-v1.parquet,  pyarrow's list levels in data pages v1 and v2: a list<int64> with an empty
  lists-v2.parquet   list, a null list and a null element; a struct holding a list<string>, null
                     once; a flat string column between them; 3 rows per row group
Run from the repository root:  ~/tach-ref/bin/python tests/parquet/make_task_fixtures.py"""
import json

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from datasets import ClassLabel, Dataset, Features, List, Value

OUT = "tests/fixtures/parquet"
TAG_NAMES = ["I-LOC", "B-LOC", "I-PER", "B-PER", "O"]


def rows(path):
    return [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]


squad = Features({"id": Value("string"), "title": Value("string"), "context": Value("string"),
                  "question": Value("string"),
                  "answers": {"text": List(Value("string")), "answer_start": List(Value("int32"))}})
Dataset.from_list(rows("tests/fixtures/question_answering/squad-v2.jsonl"), features=squad).to_parquet(
    f"{OUT}/squad-v2.parquet")

ner = Features({"id": Value("string"), "tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=TAG_NAMES))})
table = Dataset.from_list(rows("tests/fixtures/token_classes/ner.jsonl"), features=ner).data.table
meta = {b"huggingface": json.dumps({"info": {"features": ner.to_dict()}}).encode()}
pq.write_table(table.replace_schema_metadata(meta), f"{OUT}/ner.parquet", compression="snappy", row_group_size=10)
lists = pa.table({"n": pa.array([[1, 2], [], None, [None, 3], [-4], [5, 6, 7]], pa.list_(pa.int64())),
                  "name": ["a", "b", None, "d", "e", "f"],
                  "s": pa.array([{"x": ["p", "q"]}, {"x": []}, None, {"x": None}, {"x": ["r"]}, {"x": ["é", None]}],
                                pa.struct([("x", pa.list_(pa.string()))]))})
pq.write_table(lists, f"{OUT}/lists-v1.parquet", row_group_size=3)
pq.write_table(lists, f"{OUT}/lists-v2.parquet", row_group_size=3, data_page_version="2.0", compression="zstd")
print("datasets", datasets.__version__, "wrote", f"{OUT}/squad-v2.parquet", f"{OUT}/ner.parquet")
