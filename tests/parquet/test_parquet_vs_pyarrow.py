"""tach's Parquet reader against pyarrow: files written by pyarrow with every option it offers for
flat string, integer, float and boolean columns (compression, dictionary or not, data page v1 or
v2, each column encoding, small pages and row groups, nulls, statistics on or off) are read by
`tach dataset --jsonl`, and every cell must equal what pyarrow reads back. Also: the ClassLabel
names `datasets` stores in the footer, a nested column left out by name, and the codecs tach does
not read refused by name."""
import itertools
import json
import math
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

TACH = os.environ["TACH"]


def table(rows=300):
    words = ["good", "bad", "film", "plot", "actor", "slow", "fine", "é", "日本", ""]
    return pa.table({
        "text": pa.array([None if i % 17 == 5 else " ".join(words[(i * k) % 10] for k in range(1, 1 + i % 7))
                          for i in range(rows)], pa.string()),
        "label": pa.array([i % 3 for i in range(rows)], pa.int64()),
        "small": pa.array([None if i % 11 == 0 else (i * 7919) % 200 - 100 for i in range(rows)], pa.int32()),
        "big": pa.array([(i - 150) * 123456789012 for i in range(rows)], pa.int64()),
        "unsigned": pa.array([(i * 37) % 256 for i in range(rows)], pa.uint8()),
        "ratio": pa.array([None if i % 13 == 0 else i / 7.0 for i in range(rows)], pa.float64()),
        "score": pa.array([i * 0.1 for i in range(rows)], pa.float32()),
        "flag": pa.array([None if i % 5 == 4 else i % 2 == 0 for i in range(rows)], pa.bool_()),
        "topic": pa.array(["sports", "politics", "science"][i % 3] for i in range(rows)),
    })


def as_tach_text(value, arrow_type):
    if value is None:
        return ""
    if pa.types.is_boolean(arrow_type):
        return "true" if value else "false"
    return value


def same(cell, expected, arrow_type):
    if expected is None:
        return cell == ""
    if pa.types.is_floating(arrow_type):
        got = float(cell)
        if pa.types.is_float32(arrow_type):
            import struct
            return struct.pack("<f", got) == struct.pack("<f", expected)
        return got == expected or (math.isnan(got) and math.isnan(expected))
    if pa.types.is_integer(arrow_type):
        return int(cell) == expected
    return cell == as_tach_text(expected, arrow_type)


def tach_rows(path):
    out = subprocess.run([TACH, "dataset", str(path), "--jsonl"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [json.loads(l) for l in out.stdout.splitlines()]


def check_equal(path):
    expected = pq.read_table(path)
    rows = tach_rows(path)
    assert len(rows) == expected.num_rows
    for name in expected.column_names:
        column = expected.column(name).to_pylist()
        arrow_type = expected.schema.field(name).type
        for i, (row, want) in enumerate(zip(rows, column)):
            assert same(row[name], want, arrow_type), f"{path.name}: {name}[{i}]: tach {row[name]!r}, pyarrow {want!r}"


ENCODINGS = {  # per column, the encodings pyarrow offers without a dictionary
    "text": ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"],
    "small": ["PLAIN", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"],
    "big": ["PLAIN", "DELTA_BINARY_PACKED"],
    "ratio": ["PLAIN", "BYTE_STREAM_SPLIT"],
    "score": ["PLAIN", "BYTE_STREAM_SPLIT"],
    "flag": ["PLAIN", "RLE"],
}


@pytest.mark.parametrize("compression", ["none", "snappy", "gzip", "zstd"])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_every_compression_page_version_and_dictionary(tmp_path, compression, page_version, dictionary):
    path = tmp_path / "t.parquet"
    pq.write_table(table(), path, compression=compression, data_page_version=page_version, use_dictionary=dictionary,
                   row_group_size=128, data_page_size=512, write_statistics=dictionary)
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    check_equal(path)


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("variant", range(3))
def test_every_column_encoding(tmp_path, page_version, variant):
    encodings = {c: e[variant % len(e)] for c, e in ENCODINGS.items()}
    path = tmp_path / "t.parquet"
    try:
        pq.write_table(table(), path, use_dictionary=False, column_encoding=encodings, data_page_version=page_version,
                       compression="snappy", data_page_size=256)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        pytest.skip(f"pyarrow {pa.__version__} does not write {encodings}: {e}")
    used = {pq.ParquetFile(path).metadata.row_group(0).column(i).encodings for i in range(9)}
    assert used, "the encodings were recorded"
    check_equal(path)


def test_empty_strings_long_strings_and_extreme_integers(tmp_path):
    t = pa.table({
        "text": ["", "x" * 100000, "a\nb\tc\"d", "\u0000nul"],
        "label": pa.array([-(2**63), 2**63 - 1, 0, -1], pa.int64()),
    })
    for compression in ["none", "zstd"]:
        path = tmp_path / f"{compression}.parquet"
        pq.write_table(t, path, compression=compression)
        check_equal(path)


def test_label_names_from_the_datasets_features(tmp_path):
    features = {"sentence": {"dtype": "string", "_type": "Value"},
                "label": {"names": ["negative", "positive"], "_type": "ClassLabel"},
                "idx": {"dtype": "int32", "_type": "Value"}}
    t = pa.table({"sentence": ["it is great", "it is dull"], "label": pa.array([1, 0], pa.int64()),
                  "idx": pa.array([0, 1], pa.int32())})
    t = t.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    path = tmp_path / "validation-00000-of-00001.parquet"
    pq.write_table(t, path)
    out = subprocess.run([TACH, "dataset", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "label names of 'label' (id order, from the file's features): 0=negative 1=positive" in out.stdout


def test_nested_columns_are_named_not_read(tmp_path):
    t = pa.table({"text": ["a", "b"], "label": [0, 1], "tags": [[1, 2], []], "meta": [{"x": 1}, {"x": 2}]})
    path = tmp_path / "nested.parquet"
    pq.write_table(t, path)
    out = subprocess.run([TACH, "dataset", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "not read (nested: lists and structs): tags meta" in out.stdout
    assert tach_rows(path) == [{"text": "a", "label": "0"}, {"text": "b", "label": "1"}]


@pytest.mark.parametrize("codec", ["brotli", "lz4"])
def test_codecs_not_read_are_refused_by_name(tmp_path, codec):
    path = tmp_path / "t.parquet"
    pq.write_table(table(20), path, compression=codec)
    out = subprocess.run([TACH, "dataset", str(path)], capture_output=True, text=True)
    assert out.returncode != 0
    assert "tach reads Parquet compressed with snappy, gzip, zstd or none" in out.stderr


def test_a_truncated_file_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(table(50), path)
    data = path.read_bytes()
    for cut in [len(data) // 2, len(data) - 3, 10]:
        bad = tmp_path / f"cut{cut}.parquet"
        bad.write_bytes(data[:cut])
        out = subprocess.run([TACH, "dataset", str(bad)], capture_output=True, text=True)
        assert out.returncode != 0 and "Parquet" in out.stderr, out.stderr
