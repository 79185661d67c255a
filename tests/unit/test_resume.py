"""Resume: which rows are kept (torn tail, tampered transcripts, duplicates) and the lock check."""

from __future__ import annotations

import json

import pytest

from tests.builders import row, rows_text
from workflow_bench.output.directory import OutputDir
from workflow_bench.providers.access import CellKey
from workflow_bench.schedule.resume import LOCK_FILE, ResumeError, check_lock, kept_rows, write_lock

pytestmark = pytest.mark.unit
PLAN = [CellKey(task_id="t", run=r, arm=a) for r in range(2) for a in ("baseline", "workflow")]


def _persist(out, key):
    artifacts = {
        f"transcripts/{key.slug}-s0-x.jsonl": f"stream of {key.slug}\n".encode(),
        "patch.diff": b"diff\n",
    }
    return OutputDir(out).persist(key.slug, row(task=key.task_id, arm=key.arm, run=key.run), artifacts)


def test_intact_rows_are_kept_and_a_torn_last_line_is_dropped(tmp_path):
    for key in PLAN[:2]:
        _persist(tmp_path, key)
    with open(tmp_path / "results.jsonl", "a") as handle:
        handle.write('{"task": "t", "arm": "baseline", "ru')  # killed mid-write
    kept = kept_rows(tmp_path, PLAN, log=lambda _: None)
    assert [(r.run, r.arm) for r in kept] == [(0, "baseline"), (0, "workflow")]
    assert (tmp_path / "results.jsonl").read_text().count("\n") == 2
    assert (tmp_path / "results.jsonl").read_text().endswith("\n")
    (aside,) = (tmp_path / "superseded").iterdir()
    assert '"ru' in (aside / "results.jsonl").read_text()


def test_a_row_whose_transcript_changed_runs_again_and_its_artifacts_move_aside(tmp_path):
    rows = [_persist(tmp_path, key) for key in PLAN[:2]]
    transcript = tmp_path / rows[1].transcript_artifacts[0].path
    transcript.write_bytes(b"edited\n")
    logs = []
    kept = kept_rows(tmp_path, PLAN, log=logs.append)
    assert [(r.run, r.arm) for r in kept] == [(0, "baseline")]
    assert any("does not match its recorded sha256" in line for line in logs)
    assert not transcript.exists() and not (tmp_path / f"{PLAN[1].slug}.patch").exists()
    # the rerun can now write its own artifacts (exclusive create) without colliding
    _persist(tmp_path, PLAN[1])


def test_artifacts_of_a_cell_killed_before_its_row_are_moved_aside(tmp_path):
    _persist(tmp_path, PLAN[0])
    (tmp_path / "transcripts" / f"{PLAN[1].slug}-s0-y.jsonl").write_text("partial\n")
    kept_rows(tmp_path, PLAN, log=lambda _: None)
    assert not (tmp_path / "transcripts" / f"{PLAN[1].slug}-s0-y.jsonl").exists()
    assert (tmp_path / "transcripts" / f"{PLAN[0].slug}-s0-x.jsonl").exists()


def test_a_duplicate_row_keeps_the_first(tmp_path):
    stored = _persist(tmp_path, PLAN[0])
    with open(tmp_path / "results.jsonl", "a") as handle:
        handle.write(rows_text([stored]))
    assert len(kept_rows(tmp_path, PLAN, log=lambda _: None)) == 1
    assert (tmp_path / "results.jsonl").read_text().count("\n") == 1


@pytest.mark.parametrize(
    "line",
    [
        "not json\n",
        rows_text([row(task="other", arm="baseline", run=0)]),  # a valid row of another plan
        json.dumps({"task": "t", "arm": "baseline", "run": 1}) + "\n",  # not a valid row at all
    ],
)
def test_a_corrupt_or_foreign_complete_line_is_refused_and_nothing_changes(tmp_path, line):
    _persist(tmp_path, PLAN[0])
    with open(tmp_path / "results.jsonl", "a") as handle:
        handle.write(line)
    before = (tmp_path / "results.jsonl").read_bytes()
    with pytest.raises(ResumeError, match="line 2"):
        kept_rows(tmp_path, PLAN, log=lambda _: None)
    assert (tmp_path / "results.jsonl").read_bytes() == before


def test_lock_mismatch_names_every_differing_field(tmp_path):
    write_lock(tmp_path, {"model": "m", "runs": 3, "arms": ["baseline"], "effort": None})
    check_lock(tmp_path, {"model": "m", "runs": 3, "arms": ("baseline",), "effort": None})
    with pytest.raises(ResumeError, match=r"differs in arms, runs \("):
        check_lock(tmp_path, {"model": "m", "runs": 2, "arms": ["workflow"], "effort": None})


def test_a_directory_without_a_lock_is_refused(tmp_path):
    with pytest.raises(ResumeError, match=LOCK_FILE):
        check_lock(tmp_path, {})
