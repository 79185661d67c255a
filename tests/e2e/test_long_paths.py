"""Paths that always fit: the longest task id the schema accepts, under the longest TMPDIR the
preflight accepts, still runs.

Cell directories are fixed-length (``cell_paths``), so the model socket's host path depends on
TMPDIR alone; the preflight refuses, before any clone, a TMPDIR too long for even that.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from tests.builders import result_dicts
from workflow_bench import runner
from workflow_bench.workspace.paths import (
    AF_UNIX_PATH_MAX,
    CellPathError,
    check_paths_fit,
    longest_socket_path,
)

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
CORPUS = REPO_ROOT / "workflow_bench" / "corpus"
LONG_ID = "t" + "x" * 126 + "z"  # 128 characters: TASK_ID_PATTERN's maximum
WORK_OVERLAY = ["--candidate-overlay", str(CORPUS / "overlays" / "work-candidate")]


def _padded_tmpdir(base: Path, length: int) -> Path:
    name = "p" * (length - len(str(base)) - 1)
    path = base / name
    path.mkdir()
    assert len(str(path)) == length
    return path


def _script_for(task_id: str, tmp_path: Path) -> Path:
    """The demo script with the trivial task's cells renamed to ``task_id``."""
    script = yaml.safe_load((CORPUS / "scripts" / "demo.yaml").read_text())
    for cell in script["cells"]:
        if cell["match"].get("task") == "trivial-amount-grouping":
            cell["match"]["task"] = task_id
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False))
    return path


def test_128_char_id_with_the_longest_arm_under_the_longest_tmpdir_the_preflight_accepts(
    task_file_for, tmp_path, short_tmpdir, monkeypatch, bwrap_bin, claude_bin
):
    longest = AF_UNIX_PATH_MAX - (len(longest_socket_path("/t")) - len("/t"))  # 66 bytes today
    tmpdir = _padded_tmpdir(short_tmpdir, longest)  # the session's TMPDIR is short enough to pad
    check_paths_fit(tmpdir)
    with pytest.raises(CellPathError):
        check_paths_fit(str(tmpdir) + "x")  # one byte more is refused: this is the bound
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    tasks = task_file_for("trivial-amount-grouping", id=LONG_ID)
    out = tmp_path / "out"
    arms = ["workflow", "candidate_workflow", "workflow_direct", "candidate_workflow_direct"]
    code = runner.main(
        [
            "--tasks", str(tasks), "--provider", "scripted",
            "--script", str(_script_for(LONG_ID, tmp_path)),
            "--arms", *arms, *WORK_OVERLAY, "--out", str(out),
        ]
    )  # fmt: skip
    rows = result_dicts(out)
    assert code == 0
    assert sorted(r["arm"] for r in rows) == sorted(arms)
    for row in rows:
        assert row["task"] == LONG_ID
        assert row["resolved"] is True, (row["arm"], row["error_kind"], row["error_detail"])
    assert not any(tmpdir.iterdir()), "the work root is removed after the sweep"


def test_a_tmpdir_too_long_for_any_socket_exits_2_before_any_clone(
    task_file_for, tmp_path, monkeypatch, capsys
):
    tmpdir = tmp_path / ("q" * 80)
    tmpdir.mkdir()
    assert len(longest_socket_path(tmpdir)) > AF_UNIX_PATH_MAX
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    out = tmp_path / "out"
    code = runner.main(
        [
            "--tasks",
            str(task_file_for("trivial-amount-grouping")),
            "--provider",
            "scripted",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "AF_UNIX" in err and "TMPDIR" in err, err
    assert not out.exists() and not any(tmpdir.iterdir())
