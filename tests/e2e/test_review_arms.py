"""Review arms end to end: the README command, the reference's negative controls, the boundary.

Runs the real CLI in real bwrap with the scripted reviewer; the workspace is
read-only, the artifact lands outside it, and the hidden labels decide.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import as_row, result_dicts
from workflow_bench import runner
from workflow_bench.judging.outcomes import is_excluded, is_systemic_failure

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
CORPUS = REPO_ROOT / "workflow_bench" / "corpus"
REVIEW_TASKS = REPO_ROOT / "tasks.review.yaml"
PAIRED = ["--arms", "ce_review", "review", "candidate_review",
          "--candidate-overlay", str(CORPUS / "overlays" / "review-candidate"),
          "--ce-plugin-dir", str(CORPUS / "comparator-plugin"), "--ce-plugin-version", "0.3.0"]  # fmt: skip
# oracle_passed per case × arm; keep in sync with the table atop corpus/scripts/review-demo.yaml.
EXPECTED = {
    "review-report-prefix-defect": {"review": True, "ce_review": False, "candidate_review": True},
    "review-csv-export-defect": {"review": True, "ce_review": False, "candidate_review": False},
    "review-balance-cache-defect": {"review": True, "ce_review": False, "candidate_review": False},
    "review-amount-grouping-clean": {"review": True, "ce_review": True, "candidate_review": False},
    "review-negative-amounts-clean": {"review": True, "ce_review": False, "candidate_review": True},
}


def _rows(out: Path) -> dict[tuple[str, str], dict]:
    return {(r["task"], r["arm"]): r for r in result_dicts(out)}


@pytest.fixture(scope="module")
def review_sweep(tmp_path_factory, bwrap_bin, claude_bin):
    out = tmp_path_factory.mktemp("review") / "out"
    script = CORPUS / "scripts" / "review-demo.yaml"
    code = runner.main(["--tasks", str(REVIEW_TASKS), "--provider", "scripted", "--script", str(script),
                        *PAIRED, "--out", str(out)])  # fmt: skip
    return code, out, _rows(out)


def test_review_sweep_scores_every_arm_against_hidden_labels(review_sweep):
    code, out, rows = review_sweep
    assert code == 0
    assert len(rows) == 15
    for (task, arm), row in rows.items():
        assert row["oracle_passed"] is EXPECTED[task][arm], (
            task,
            arm,
            row["error_kind"],
            row["error_detail"],
        )
        assert row["review_evidence_valid"] is True and row["skill_invoked"] is True
        assert row["review_weighted_f1"] is not None or row["review_clean_control"]
        assert (out / row["review_artifact"]).is_file()
        assert row["diff_files"] == 0  # the review changed nothing
    assert all(rows[(t, "ce_review")]["ce_plugin_version"] == "0.3.0" for t in EXPECTED)
    assert all(rows[(t, "candidate_review")]["candidate_overlay_digest"] for t in EXPECTED)
    assert all(rows[(t, "review")]["candidate_overlay_digest"] is None for t in EXPECTED)
    assert "## Review quality" in (out / "report.md").read_text()


def test_reference_negative_controls(review_sweep):
    _, _, rows = review_sweep
    wrong_place = rows[("review-balance-cache-defect", "candidate_review")]
    assert (wrong_place["review_true_positives"], wrong_place["review_false_positives"]) == (1, 1)
    assert wrong_place["review_false_negatives"] == 1 and wrong_place["oracle_passed"] is False
    assert wrong_place["review_evidence_valid"] is True
    approved_defect = rows[("review-csv-export-defect", "candidate_review")]
    assert approved_defect["review_true_positives"] == 0 and approved_defect["review_precision"] is None
    assert approved_defect["review_false_negatives"] == 2
    spurious = rows[("review-amount-grouping-clean", "candidate_review")]
    assert spurious["review_clean_control"] is True and spurious["review_clean_pass"] is False


def test_unscored_reviews(task_file_for, tmp_path, bwrap_bin, claude_bin):
    corpus = yaml.safe_load(REVIEW_TASKS.read_text())
    task = next(t for t in corpus["tasks"] if t["id"] == "review-csv-export-defect")
    folder = tmp_path / "corpus"
    (folder / "labels").mkdir(parents=True)
    source = REPO_ROOT / task["oracle"]["files"][0]["source"]
    (folder / "labels" / source.name).write_bytes(source.read_bytes())
    task = {**task, "repo": str(REPO_ROOT / task["repo"])}
    task["oracle"]["files"][0]["source"] = f"labels/{source.name}"
    (folder / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [task]}, sort_keys=False))
    out = tmp_path / "out"
    script = Path(__file__).parent / "scripts" / "review-negative.yaml"
    runner.main(["--tasks", str(folder / "tasks.yaml"), "--provider", "scripted", "--script", str(script),
                 *PAIRED, "--out", str(out)])  # fmt: skip
    rows = {arm: row for (_, arm), row in _rows(out).items()}
    assert rows["review"]["error_kind"] == "skill-not-invoked" and rows["review"]["skill_invoked"] is False
    invalid = rows["candidate_review"]
    assert invalid["error_kind"] == "review-evidence-invalid" and invalid["review_evidence_valid"] is False
    assert "approve" in invalid["error_detail"]
    transcript = b"".join((out / t["path"]).read_bytes() for t in invalid["transcript_artifacts"])
    assert b"Read-only file system" in transcript  # the repository could not be edited
    missing = rows["ce_review"]
    assert missing["error_kind"] == "review-evidence-invalid" and missing["review_artifact"] is None
    # The agent writes the artifact: a bad or missing one is its arm's failure (issue 8), never a
    # way out of the denominator or into the outage breaker.
    for row in (invalid, missing):
        typed = as_row(row)
        assert not is_excluded(typed) and not is_systemic_failure(typed) and row["resolved"] is False
