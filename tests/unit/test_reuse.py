"""Comparator reuse: every condition has a negative control; canary cells; verified copies."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from tests import builders
from workflow_bench.providers.access import CellKey
from workflow_bench.schedule.reuse import (
    Expected,
    ReuseError,
    load_prior_rows,
    reused_copy,
    select_reuse,
    why_not,
)

pytestmark = pytest.mark.unit
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
VALUES = {
    "model": "m", "effort": None, "sandbox_backend": "bwrap", "provider": "scripted", "runtime_digest": "rt",
    "task_base_sha": "a" * 40, "task_prompt_digest": "p", "task_binding_digest": "b", "oracle_digest": "o",
    "oracle_command_digest": "oc", "oracle_manifest_digest": "om", "skill_digest": "s",
}  # fmt: skip
TRANSCRIPT = b'{"type": "result"}\n'


def _row(arm="workflow", run=0, **changes):
    fields = {
        "task": "t", "arm": arm, "run": run, "ok": True, "error_kind": None, "transcript_missing": False,
        "candidate_overlay_digest": None, "recorded_at": (NOW - timedelta(days=1)).isoformat(), **VALUES,
        "transcript_artifacts": [{"path": f"transcripts/t-{arm}-run{run}-s0-x.jsonl",
                                  "sha256": hashlib.sha256(TRANSCRIPT).hexdigest(),
                                  "bytes": len(TRANSCRIPT), "source": "parent-captured-stream-json"}],
    }  # fmt: skip
    return builders.row(**{**fields, **changes})


def _expected(arm="workflow", run=0, *, candidate=False, review=False, **values):
    return Expected(CellKey("t", run, arm), candidate, False, review, {**VALUES, **values})


def test_a_clean_matching_row_is_reusable():
    assert why_not(_row(), _expected(), now=NOW) is None


@pytest.mark.parametrize(
    ("row", "expected", "reason"),
    [
        (
            _row(arm="candidate_workflow"),
            _expected("candidate_workflow", candidate=True),
            "not a reusable arm",
        ),
        (_row(error_kind="oracle-failed"), _expected(), "not a clean measurement"),
        (_row(ok=False), _expected(), "not a clean measurement"),
        (_row(transcript_missing=True), _expected(), "not a clean measurement"),
        (_row(candidate_overlay_digest="c"), _expected(), "candidate overlay"),
        (_row(recorded_at=(NOW - timedelta(days=91)).isoformat()), _expected(), "90 days"),
        (_row(recorded_at=(NOW + timedelta(hours=1)).isoformat()), _expected(), "future"),
        (_row(recorded_at="yesterday"), _expected(), "does not parse"),
        (_row(runtime_digest=None), _expected(), "runtime_digest missing"),
        (_row(), _expected(runtime_digest=None), "runtime_digest missing"),
        (_row(runtime_digest="other"), _expected(), "runtime_digest differs"),
        (_row(model="other", benchmark_model="other"), _expected(), "model differs"),
        (_row(effort="high"), _expected(), "effort differs"),
        (_row(sandbox_backend="host-unsafe"), _expected(), "sandbox_backend differs"),
        (_row(task_prompt_digest="x"), _expected(), "task_prompt_digest differs"),
        (_row(oracle_manifest_digest="x"), _expected(), "oracle_manifest_digest differs"),
        (_row(skill_digest="x"), _expected(), "skill_digest differs"),
        (_row(arm="review"), _expected("review", review=True), "review evidence incomplete"),
        (_row(transcript_artifacts=[]), _expected(), "transcript list"),
        (
            _row(transcript_artifacts=[{"path": "../x", "sha256": "0", "bytes": 1, "source": "s"}]),
            _expected(),
            "transcript list",
        ),
    ],
)
def test_each_failed_condition_means_the_cell_is_paid(row, expected, reason):
    assert reason in (why_not(row, expected, now=NOW) or "")


def test_an_old_row_keeps_its_original_measurement_time():
    row = _row(reused_from_recorded_at=(NOW - timedelta(days=100)).isoformat())
    assert "90 days" in why_not(row, _expected(), now=NOW)


def test_one_paid_canary_per_fully_reusable_arm_and_candidates_always_paid():
    planned = [_expected(a, r, candidate=a.startswith("candidate")) for r in range(2)
               for a in ("workflow", "candidate_workflow", "baseline")]  # fmt: skip
    prior = [_row(a, r) for r in range(2) for a in ("workflow", "candidate_workflow")] + [_row("baseline", 1)]
    logs = []
    chosen = select_reuse(planned, prior, now=NOW, log=logs.append)
    # workflow: both reusable → run 0 stays paid (the canary); baseline run 0 has no row: no canary needed
    assert set(chosen) == {CellKey("t", 1, "baseline"), CellKey("t", 1, "workflow")}
    assert any("keeping one paid workflow cell" in line for line in logs)


def test_conflicting_duplicate_rows_drop_the_key():
    planned = [_expected("workflow", r) for r in range(2)]
    prior = [_row(run=0), _row(run=0, task_prompt_digest="p", num_turns=3), _row(run=1)]
    # run 0 has two differing rows: paid (which also makes the arm not fully reused: no canary needed)
    assert set(select_reuse(planned, prior, now=NOW, log=lambda _: None)) == {CellKey("t", 1, "workflow")}


def test_copy_rehashes_transcripts_and_marks_provenance(tmp_path):
    row = _row()
    (tmp_path / "transcripts").mkdir()
    transcript = row.transcript_artifacts[0].path
    (tmp_path / transcript).write_bytes(TRANSCRIPT)
    copied, artifacts = reused_copy(row, tmp_path)
    assert copied.reused is True and copied.reused_from_dir == str(tmp_path.resolve())
    assert copied.reused_from_recorded_at == row.recorded_at
    assert copied.transcript_artifacts is None  # written anew, from the copies, by the output directory
    assert artifacts == {transcript: TRANSCRIPT}
    (tmp_path / transcript).write_bytes(TRANSCRIPT + b"\n")
    with pytest.raises(ValueError, match="sha256"):
        reused_copy(row, tmp_path)


def test_the_source_must_be_another_directory_with_results(tmp_path):
    with pytest.raises(ReuseError, match="must not be the output"):
        load_prior_rows(tmp_path, out_dir=tmp_path)
    with pytest.raises(ReuseError, match=r"no regular results\.jsonl"):
        load_prior_rows(tmp_path, out_dir=tmp_path / "out")
