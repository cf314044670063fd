"""tach.analyze: torch.profiler traces analysed from Python, the same document `tach analyze
--json` prints, as dicts or pandas frames."""
import os

import pytest

import tach
from conftest import FIXTURES

TRAIN = os.path.join(FIXTURES, "analyze", "train")


def test_analyze_returns_the_json_document(tmp_path):
    a = tach.analyze(TRAIN, output=tmp_path / "run", frames=False, sort_by="calls")
    assert a["schema"] == "tach.analysis/1" and a["sort_by"] == "calls"
    mm = next(o for o in a["ops"] if o["name"] == "aten::mm")
    assert mm["calls"] == 44 and mm["flops"] > 0
    assert [s["step"] for s in a["steps"]] == [2, 3, 6, 7]
    assert a["ranks"][0]["gpu"] is None
    assert os.path.exists(tmp_path / "run" / "analysis.json")


def test_analyze_frames_and_errors(tmp_path):
    pytest.importorskip("pandas")
    a = tach.analyze(TRAIN, output=tmp_path / "run")
    assert list(a["ops"].columns[:3]) == ["name", "kind", "calls"]
    assert a["ops"]["calls"].sum() > 0 and len(a["steps"]) == 4
    with pytest.raises(tach.UsageError):
        tach.analyze(TRAIN, sort_by="speed", output=tmp_path / "bad")
    (tmp_path / "config.json").write_text('{"model": 1}')
    with pytest.raises(tach.Error, match="not a trace"):
        tach.analyze(tmp_path / "config.json", output=tmp_path / "bad")
