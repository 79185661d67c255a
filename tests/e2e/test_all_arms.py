"""Every implementation arm runs offline, and bad arm combinations are refused before any clone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import result_dicts
from workflow_bench import runner

from .conftest import DEMO_TASKS, REPO_ROOT

pytestmark = pytest.mark.e2e
CORPUS = REPO_ROOT / "workflow_bench" / "corpus"
PLUGIN = ["--ce-plugin-dir", str(CORPUS / "comparator-plugin"), "--ce-plugin-version", "0.3.0"]
WORK_OVERLAY = ["--candidate-overlay", str(CORPUS / "overlays" / "work-candidate")]


@pytest.mark.parametrize(
    "arms",
    [
        ["workflow", "candidate_workflow", "workflow_direct", "candidate_workflow_direct", *WORK_OVERLAY],
        ["ce_workflow", "ce_workflow_direct", "baseline", "baseline_nomcp", *PLUGIN],
    ],
    ids=["candidate-pairs", "comparator-and-baselines"],
)
def test_every_implementation_arm_runs(arms, task_file_for, tmp_path, bwrap_bin, claude_bin):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    code = runner.main(["--tasks", str(tasks), "--provider", "scripted", "--arms", *arms, "--out", str(out)])
    rows = {r["arm"]: r for r in result_dicts(out)}
    assert code == 0
    for arm, row in rows.items():
        assert row["resolved"] is True, (arm, row["error_kind"], row["error_detail"])
        assert row["skill_invoked"] is (None if arm.startswith("baseline") else True), arm
    if "candidate_workflow" in rows:
        assert rows["candidate_workflow"]["candidate_overlay_digest"]
        assert rows["candidate_workflow"]["skill_digest"] != rows["workflow"]["skill_digest"]
        assert rows["candidate_workflow"]["variant_head_sha"] != rows["workflow"]["variant_head_sha"]
    if "ce_workflow" in rows:
        assert (
            rows["ce_workflow"]["ce_plugin_version"] == "0.3.0"
            and rows["ce_workflow"]["ce_plugin_manifest_digest"]
        )
        assert rows["baseline"]["ce_plugin_version"] is None
        assert "Skill" in rows["ce_workflow"]["tool_use_counts"]


def _overlay_with(tmp_path: Path, relative: str) -> Path:
    root = tmp_path / "overlay"
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text("changed\n")
    return root


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--arms", "candidate_review", "review", "ce_review", *PLUGIN], "need --candidate-overlay"),
        (["--arms", "workflow", *WORK_OVERLAY], "needs the candidate arms"),
        (
            ["--arms", "workflow", "candidate_workflow", *WORK_OVERLAY],
            "must be exactly workflow candidate_workflow",
        ),
        (["--arms", "ce_workflow"], "need both --ce-plugin-dir and --ce-plugin-version"),
        (["--arms", "baseline", *PLUGIN], "only for ce_* arms"),
        (
            [
                "--arms",
                "ce_workflow",
                "--ce-plugin-dir",
                str(CORPUS / "comparator-plugin"),
                "--ce-plugin-version",
                "9.9.9",
            ],
            "does not match",
        ),
        ("non-skill-overlay", "not Markdown under skills"),
    ],
    ids=[
        "candidate-without-overlay",
        "overlay-without-candidate",
        "unpaired-candidate",
        "ce-without-plugin",
        "plugin-without-ce",
        "plugin-version-mismatch",
        "overlay-non-skill-path",
    ],
)
def test_bad_arm_combinations_exit_2_before_any_clone(argv, message, tmp_path, capsys, private_tmpdir):
    if argv == "non-skill-overlay":
        overlay = _overlay_with(tmp_path, "scripts/evil.sh")
        argv = ["--arms", "workflow", "candidate_workflow", "--candidate-overlay", str(overlay)]
    out = tmp_path / "out"
    code = runner.main(["--tasks", str(DEMO_TASKS), "--provider", "scripted", *argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert not out.exists()
    assert not any(private_tmpdir.iterdir())  # no clone, no leftover snapshot
