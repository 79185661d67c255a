"""`promotion verify`: exit 0 only on an exact recomputation; each tampering is caught and named."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.builders import SWEEP_FINISHED, make_toolkit, overlay_for, sweep_record, sweep_runs, write_sweep
from workflow_bench.promotion.cli import main as promotion_main
from workflow_bench.promotion.document import PROMOTION_SCHEMA
from workflow_bench.promotion.policy import PromotionPolicy
from workflow_bench.promotion.verify import VerifyError, verify_promotion
from workflow_bench.reports.sweep_record import read_sweep_record

pytestmark = pytest.mark.unit
NOW = datetime.fromisoformat(SWEEP_FINISHED) + timedelta(days=1)


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    return write_sweep(tmp_path / "out", sweep_record(), rows)


def fails(out: Path, match: str) -> None:
    with pytest.raises(VerifyError, match=match):
        verify_promotion(out, now=NOW)


def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def test_verifies_and_cli_exit_codes(sweep: Path, capsys) -> None:
    assert verify_promotion(sweep, now=NOW).decisions[0].decision == "promote"
    # real clock: the fixture's evidence is from 2026-11-30 (within 90 days of the test run's now)
    assert promotion_main(["verify", str(sweep)]) == (
        0 if datetime.now(UTC) < NOW + timedelta(days=88) else 1
    )
    (sweep / "results.jsonl").write_text("")
    assert promotion_main(["verify", str(sweep)]) == 1
    assert "FAILED" in capsys.readouterr().err


@pytest.mark.parametrize("line", [0, 3, 5])
def test_any_edited_row_fails(sweep: Path, line: int) -> None:
    lines = (sweep / "results.jsonl").read_text().splitlines()
    row = json.loads(lines[line])
    row["recorded_at"] = "edited"
    lines[line] = json.dumps(row, sort_keys=True)
    (sweep / "results.jsonl").write_text("\n".join(lines) + "\n")
    fails(sweep, f"line {line + 1}: sha256 differs")


def test_deleted_and_duplicated_rows_fail(sweep: Path) -> None:
    lines = (sweep / "results.jsonl").read_text().splitlines()
    (sweep / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    fails(sweep, "row deleted")
    (sweep / "results.jsonl").write_text("\n".join([*lines, lines[2]]) + "\n")
    fails(sweep, "line 7: not in promotion.json")
    (sweep / "results.jsonl").write_text("\n".join([lines[0], *lines]) + "\n")
    fails(sweep, "line 2: sha256 differs")


def test_edited_decision_fails(sweep: Path) -> None:
    edit_json(sweep / "promotion.json", lambda d: d["decisions"][0].update(decision="keep_incumbent"))
    fails(sweep, r"decisions\[0\]\.decision: stored 'keep_incumbent', recomputed 'promote'")


def test_edited_evidence_and_consistent_forgery_fail(sweep: Path) -> None:
    def forge(doc):
        doc["decisions"][0]["tasks"][0]["candidate"]["resolved"] = 2

    edit_json(sweep / "promotion.json", forge)
    fails(sweep, r"candidate\.resolved")


def test_run_count_inconsistency_is_named(sweep: Path) -> None:
    edit_json(sweep / "promotion.json", lambda d: d["decisions"][0]["tasks"][0]["incumbent"].update(runs=4))
    fails(sweep, "runs 4 != valid 3 \\+ excluded 0")


def test_non_finite_metric_fails(sweep: Path) -> None:
    text = (
        (sweep / "promotion.json")
        .read_text()
        .replace('"median_improvement": 10.0', '"median_improvement": NaN')
    )
    (sweep / "promotion.json").write_text(text)
    fails(sweep, "non-finite")


def test_policy_must_round_trip_and_match_sweep_json(sweep: Path) -> None:
    loose = PromotionPolicy.from_flags(min_improvement_pct=0.0).to_json()
    edit_json(sweep / "promotion.json", lambda d: d.update(policy=loose))
    fails(sweep, "policy differs from the policy sweep.json recorded")
    (sweep / "sweep.json").unlink()
    fails(sweep, "recomputed .median cost_usd improvement 10.0 % >= 0.0 %")  # reasons name the policy
    edit_json(sweep / "promotion.json", lambda d: d["policy"]["implementation"].update(min_runs="3"))
    fails(sweep, "min_runs")


def test_timestamps(sweep: Path) -> None:
    fails_at = lambda now, match: pytest.raises(VerifyError, match=match)  # noqa: E731
    with fails_at(None, "expired"):
        verify_promotion(sweep, now=NOW + timedelta(days=90))
    with fails_at(None, "in the future"):
        verify_promotion(sweep, now=datetime.fromisoformat(SWEEP_FINISHED) - timedelta(minutes=6))
    verify_promotion(sweep, now=datetime.fromisoformat(SWEEP_FINISHED) - timedelta(minutes=4))  # clock skew
    edit_json(sweep / "promotion.json", lambda d: d.update(evidence_expires_at="2027-06-01T00:00:00+00:00"))
    fails(sweep, "not generated_at \\+ 90 days")
    edit_json(sweep / "promotion.json", lambda d: d.update(generated_at="2026-11-30T12:00:00"))
    fails(sweep, "timezone-aware")


def test_schema_and_keys(sweep: Path) -> None:
    edit_json(sweep / "promotion.json", lambda d: d.update(extra=1))
    fails(sweep, "unknown \\['extra'\\]")
    edit_json(sweep / "promotion.json", lambda d: d.update(schema_version=PROMOTION_SCHEMA + 1))
    fails(sweep, "schema_version")


def test_run_status_cannot_be_upgraded(tmp_path: Path) -> None:
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    out = write_sweep(tmp_path / "aborted", sweep_record(status="aborted"), rows)
    doc = verify_promotion(out, now=NOW)
    assert doc.decisions[0].decision == "insufficient_evidence"
    edit_json(out / "promotion.json", lambda d: d.update(run_status="complete"))
    fails(out, "decision")


@pytest.mark.parametrize("origin", ["manual-initial-overlay", "model-proposer"])
def test_candidate_origin_comes_from_the_overlay_record_and_cannot_be_edited(tmp_path: Path, origin) -> None:
    overlay = overlay_for(make_toolkit(tmp_path / "toolkit"), origin=origin)
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    out = write_sweep(tmp_path / "out", sweep_record(overlay=overlay), rows)
    assert verify_promotion(out, now=NOW).candidate_origin == origin
    other = "model-proposer" if origin == "manual-initial-overlay" else "manual-initial-overlay"
    edit_json(out / "promotion.json", lambda d: d.update(candidate_origin=other))
    fails(out, "candidate_origin differs from the overlay origin sweep.json recorded")


def test_an_overlay_digest_other_than_sweep_json_fails(tmp_path: Path) -> None:
    overlay = overlay_for(make_toolkit(tmp_path / "toolkit"))
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    out = write_sweep(tmp_path / "out", sweep_record(overlay=overlay), rows)
    edit_json(out / "promotion.json", lambda d: d["candidate_overlay"].update(digest="sha256:" + "0" * 64))
    fails(out, "candidate_overlay differs from the overlay sweep.json recorded")


# ── the typed parse (issue 34): a field of the wrong type or shape is named, never coerced ──


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda d: d["decisions"][0]["tasks"][0]["candidate"].update(runs="3"),
            r"decisions\[0\]\.tasks\[0\]\.ImplementationTask\.candidate\.runs: want an integer, got '3'",
        ),
        (lambda d: d.update(runs=True), r"promotion\.json: runs: want an integer, got True"),
        (
            lambda d: d["candidate_overlay"]["files"][0].update(mode=420),
            r"candidate_overlay\.files\[0\]\.mode: unknown key",
        ),
        (lambda d: d["results"].pop("row_sha256"), r"results\.row_sha256: missing required key"),
        (lambda d: d["selected_tasks"][0].pop("id"), r"selected_tasks\[0\]: id: missing required key"),
        (lambda d: d.update(target_base_digests=None), "want both recorded or neither"),
        (lambda d: d["decisions"][0].update(decision="maybe"), r"decisions\[0\]\.decision: .*got 'maybe'"),
        # The parse accepts a field by its name as well as its stored alias ("class"); the stored
        # object, not the parsed model, is what the recomputation is compared with.
        (
            lambda d: d["decisions"][0]["tasks"][0].update(
                task_class=d["decisions"][0]["tasks"][0].pop("class")
            ),
            r"tasks\[0\]\.class: missing \(recomputed",
        ),
    ],
    ids=[
        "str-count",
        "bool-count",
        "overlay-file-key",
        "no-digests",
        "task-without-id",
        "bases-dropped",
        "verdict",
        "alias-renamed",
    ],
)
def test_a_forged_field_is_named_not_coerced(tmp_path: Path, capsys, change, match: str) -> None:
    overlay = overlay_for(make_toolkit(tmp_path / "toolkit"))
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    out = write_sweep(tmp_path / "out", sweep_record(overlay=overlay), rows)
    verify_promotion(out, now=NOW)
    edit_json(out / "promotion.json", change)
    fails(out, match)
    assert promotion_main(["verify", str(out)]) == 1  # a line saying what is wrong, no traceback
    err = capsys.readouterr().err
    assert "FAILED" in err and "Traceback" not in err


def test_a_malformed_overlay_record_in_sweep_json_is_named(tmp_path: Path) -> None:
    overlay = overlay_for(make_toolkit(tmp_path / "toolkit"))
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    out = write_sweep(tmp_path / "out", sweep_record(overlay=overlay), rows)
    edit_json(out / "sweep.json", lambda d: d["overlay"]["files"][0].update(bytes="12"))
    fails(out, r"sweep\.json: overlay: files\[0\]\.bytes: want an integer, got '12'")
    edit_json(out / "sweep.json", lambda d: d["tasks"][0].update(id=1))
    fails(out, r"sweep\.json: overlay: files\[0\]\.bytes")  # the first problem, in key order
    edit_json(out / "sweep.json", lambda d: d["overlay"]["files"][0].update(bytes=12))
    fails(out, r"sweep\.json: tasks\[0\]: id: want a string, got 1")


def test_an_overlay_record_older_than_origins_reads_writes_and_verifies_as_it_was(tmp_path: Path) -> None:
    """sweep.json's overlay had no ``origin`` before --candidate-origin: it means the default, and
    a record read and written again (regrade) keeps its keys."""
    overlay = overlay_for(make_toolkit(tmp_path / "toolkit"))
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    out = write_sweep(tmp_path / "out", sweep_record(overlay=overlay), rows)
    edit_json(out / "sweep.json", lambda d: d["overlay"].pop("origin"))
    text = (out / "sweep.json").read_text()
    record = read_sweep_record(out)
    assert record.overlay is not None and record.overlay.origin == "manual-initial-overlay"
    assert record.to_text() == text
    assert verify_promotion(out, now=NOW).candidate_origin == "manual-initial-overlay"
