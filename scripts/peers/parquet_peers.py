#!/usr/bin/env python3
"""tach's Parquet reader against pyarrow on the same file, same run, alternating.

The file: SST-2 train (67,349 rows: sentence, label, idx) written by pyarrow with snappy and
dictionary encoding, as the Hub's Parquet export is. Each round runs, as whole processes:
  - `tach dataset FILE --head 0`: read every row into records (and report the columns);
  - python3 with pyarrow: `pq.read_table(FILE).to_pylist()`, rows as Python objects, the nearest
    thing to what tach builds (pyarrow's import is part of its time, as tach's start is of tach's);
  - `tach dataset` on the same rows as TSV, tach's reader of the original text format.
Reported: the median wall time over rounds (range) and the ratio pyarrow / tach (> 1: tach faster).
The cells are checked equal once, before timing (row count and a hash of every cell).
"""
import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

PYARROW_CHILD = "import sys, pyarrow.parquet as pq; rows = pq.read_table(sys.argv[1]).to_pylist(); print(len(rows))"


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def write_files(shared, out):
    with open(os.path.join(shared, "data/sst2/train.tsv"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    header, rows = lines[0].split("\t"), [l.split("\t") for l in lines[1:] if l]
    sentence, label = header.index("text"), header.index("label")
    table = pa.table({"sentence": [r[sentence] for r in rows], "label": [int(r[label]) for r in rows],
                      "idx": list(range(len(rows)))})
    parquet = os.path.join(out, "sst2-train.parquet")
    pq.write_table(table, parquet, compression="snappy", use_dictionary=True)
    tsv = os.path.join(out, "sst2-train.tsv")
    with open(tsv, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\tidx\n")
        for i, r in enumerate(rows):
            f.write(f"{r[sentence]}\t{r[label]}\t{i}\n")
    return parquet, tsv, table


def check_equal(tach, parquet, table):
    out = subprocess.run([tach, "dataset", parquet, "--jsonl"], check=True, capture_output=True, text=True).stdout
    import json
    got = [json.loads(l) for l in out.splitlines() if l.strip()]
    want = table.to_pylist()
    assert len(got) == len(want), f"rows: tach {len(got)}, pyarrow {len(want)}"
    h = lambda rows: hashlib.sha256("\n".join(f"{r['sentence']}|{r['label']}|{r['idx']}" for r in rows).encode()).hexdigest()
    assert h([{k: str(v) for k, v in r.items()} for r in got]) == h([{k: str(v) for k, v in r.items()} for r in want]), \
        "cells differ between tach and pyarrow"
    return len(got)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tach", default="build/tach")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        parquet, tsv, table = write_files(a.shared, d)
        n = check_equal(a.tach, parquet, table)
        runs = {"tach parquet": [a.tach, "dataset", parquet, "--head", "0"],
                "pyarrow parquet": [sys.executable, "-c", PYARROW_CHILD, parquet],
                "tach tsv": [a.tach, "dataset", tsv, "--head", "0"]}
        times = {k: [] for k in runs}
        for _ in range(a.rounds):
            for k, cmd in runs.items():
                times[k].append(timed(cmd))
        print(f"SST-2 train, {n} rows, {os.path.getsize(parquet)} bytes of snappy Parquet; "
              f"whole-process wall time, median of {a.rounds} alternating rounds (range)")
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in times.items():
            print(f"  {k:16s} {med[k]:.3f} s ({min(v):.3f}-{max(v):.3f})")
        print(f"  pyarrow / tach (parquet): {med['pyarrow parquet'] / med['tach parquet']:.2f}x")
        print(f"  tach tsv / tach parquet:  {med['tach tsv'] / med['tach parquet']:.2f}x")


if __name__ == "__main__":
    main()
