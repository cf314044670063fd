"""A run directory as records: what tach.bench, tach.train, tach.profile and tach.run return."""
import json
import os


def _read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _read_json(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Run:
    """The run directory a command wrote.

    records: its results, one dict per line of results.jsonl (a sweep's points), or of steps.jsonl
    (a training run's steps); summary: summary.json as a dict (None where the command writes none);
    config: config.json. to_pandas() gives the records as a DataFrame, nested fields flattened
    with '.' (pandas.json_normalize).
    """

    def __init__(self, directory):
        self.dir = os.fspath(directory)
        results = os.path.join(self.dir, "results.jsonl")
        self.kind = "sweep" if os.path.exists(results) else "training" if os.path.exists(
            os.path.join(self.dir, "steps.jsonl")) else "profile"
        self.records = _read_jsonl(results) if self.kind == "sweep" else _read_jsonl(
            os.path.join(self.dir, "steps.jsonl"))
        self.summary = _read_json(os.path.join(self.dir, "summary.json"))
        self.config = _read_json(os.path.join(self.dir, "config.json"))

    def to_pandas(self):
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Run.to_pandas() needs pandas (pip install pandas, or apt install python3-pandas); "
                              "Run.records holds the same data as dicts") from e
        return pandas.json_normalize(self.records)

    def __repr__(self):
        return f"tach.Run({self.dir!r}, {self.kind}, {len(self.records)} records)"
