"""tools/compare_rows.py: the before/after row comparison a refactor's proof rests on."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.builders import resource_limits, row, rows_text

pytestmark = pytest.mark.unit
TOOL = Path(__file__).resolve().parents[2] / "tools" / "compare_rows.py"


def _tool():
    spec = importlib.util.spec_from_file_location("compare_rows", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compare_rows"] = module
    spec.loader.exec_module(module)
    return module


def _sweep(path: Path, *rows) -> Path:
    path.mkdir()
    (path / "results.jsonl").write_text(rows_text(rows))
    return path


def test_times_ids_and_test_timings_are_not_differences(tmp_path, capsys):
    before = _sweep(
        tmp_path / "a", row(duration_s=1.0, session_ids=["x"], verify_output="Ran 3 tests in 0.001s")
    )
    after = _sweep(
        tmp_path / "b", row(duration_s=9.0, session_ids=["y"], verify_output="Ran 3 tests in 0.250s")
    )
    assert _tool().main([str(before), str(after)]) == 0
    assert "1 cells compared, 0 difference(s)" in capsys.readouterr().out


def test_a_cells_random_uid_is_compared_only_as_present(tmp_path, capsys):
    def sweep(name: str, uid: int | None):
        return _sweep(tmp_path / name, row(resource_limits=resource_limits(memory_mib=4096, cell_uid=uid)))

    tool = _tool()
    assert tool.main([str(sweep("a", 1_500_000_001)), str(sweep("b", 1_900_000_002))]) == 0
    assert tool.main([str(tmp_path / "a"), str(sweep("c", None))]) == 1  # one ran as its own uid, one not
    assert "resource_limits" in capsys.readouterr().out


def test_a_changed_measurement_or_a_missing_cell_is_reported(tmp_path, capsys):
    before = _sweep(tmp_path / "a", row(), row(run=1))
    after = _sweep(tmp_path / "b", row(resolved=False, error_kind="oracle-failed"))
    assert _tool().main([str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert "resolved: true -> false" in out and "only before" in out


def test_an_expected_change_is_allowed_only_as_declared(tmp_path):
    stored = json.loads(rows_text([row()]))
    before, after = tmp_path / "a", tmp_path / "b"
    for path, version in ((before, 4), (after, 5)):
        path.mkdir()
        (path / "results.jsonl").write_text(json.dumps({**stored, "schema_version": version}) + "\n")
    tool = _tool()
    assert tool.main([str(before), str(after)]) == 1
    assert tool.main([str(before), str(after), "--expect", "schema_version=4:5"]) == 0
    assert tool.main([str(before), str(after), "--expect", "schema_version=3:5"]) == 1
