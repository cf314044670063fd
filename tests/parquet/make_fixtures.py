#!/usr/bin/env python3
"""Writes the small Parquet files tests/fixtures/parquet/ holds, with pyarrow (development
virtualenv), as `datasets` writes a Hub dataset's split: a sentence column, a ClassLabel label
whose names are in the footer's `huggingface` metadata, an index. Run from the repository root:
  ~/tach-ref/bin/python tests/parquet/make_fixtures.py"""
import json

import pyarrow as pa
import pyarrow.parquet as pq

OUT = "tests/fixtures/parquet"
FEATURES = {"sentence": {"dtype": "string", "_type": "Value"},
            "label": {"names": ["negative", "positive"], "_type": "ClassLabel"},
            "idx": {"dtype": "int32", "_type": "Value"}}
SENTENCES = ["it 's a charming and often affecting journey . ", "unflinchingly bleak and desperate ",
             "allows us to hope that nolan is poised to embark a major career as a commercial yet inventive filmmaker . ",
             "the acting , costumes , music , cinematography and sound are all astounding given the production 's "
             "austere locales . ", "it 's slow -- very , very slow . ", "although laced with humor and a few fanciful "
             "touches , the film is a refreshingly serious look at young women . ", "a sometimes tedious film . ",
             "or doing last year 's taxes with your ex-wife . "]
LABELS = [1, 0, 1, 1, 0, 1, 0, 0]


def split_table(n, offset=0):
    rows = [SENTENCES[(i + offset) % len(SENTENCES)] for i in range(n)]
    labels = [LABELS[(i + offset) % len(LABELS)] for i in range(n)]
    t = pa.table({"sentence": rows, "label": pa.array(labels, pa.int64()), "idx": pa.array(range(n), pa.int32())})
    return t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": FEATURES}})})


# The Hub's layout of a configuration's splits (nyu-mll/glue: sst2/validation-00000-of-00001.parquet).
pq.write_table(split_table(24, 3), f"{OUT}/sst2-validation.parquet", compression="snappy")
pq.write_table(split_table(40), f"{OUT}/sst2-train.parquet", compression="zstd", data_page_version="2.0",
               use_dictionary=False, row_group_size=16)
pq.write_table(split_table(16, 5), f"{OUT}/sst2-test-gzip.parquet", compression="gzip", data_page_size=64)
