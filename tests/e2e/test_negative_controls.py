"""Negative controls through runner.main(): the real CLI, real bwrap, scripted model.

Each control is a way the benchmark could silently lie — a hunt that finds the
answer, a skill arm that never used its skill, an outage counted as a
measurement — and each must show up in the row as exactly what it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import result_dicts
from workflow_bench import runner
from workflow_bench.corpus.build_target import HISTORY_CANARY

from .conftest import REPO_ROOT, output_bytes, tool_results

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "negative.yaml"
ORACLE_SOURCE = REPO_ROOT / "workflow_bench" / "corpus" / "oracles" / "trivial-amount-grouping.oracle_test.py"


def test_negative_controls(task_file_for, tmp_path, bwrap_bin, claude_bin, capsys):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    code = runner.main(
        [
            "--tasks",
            str(tasks),
            "--provider",
            "scripted",
            "--script",
            str(SCRIPT),
            "--arms",
            "workflow",
            "workflow_direct",
            "baseline",
            "--max-retries",
            "1",
            "--out",
            str(out),
        ]
    )
    rows = {r["arm"]: r for r in result_dicts(out)}
    assert set(rows) == {"workflow", "workflow_direct", "baseline"}

    # An outage is a session error with unknown usage, never a zero-cost measurement; the arm
    # then has no usable measurement, so the sweep exits 1.
    baseline = rows["baseline"]
    assert baseline["error_kind"] == "session-error" and baseline["ok"] is False
    assert baseline["input_tokens"] is None and baseline["cost_usd"] is None
    assert baseline["error_detail"]["event_stream_error"].startswith("result is_error=True")
    assert code == 1

    # A skill arm that never invoked its skill is flagged, not scored as the skill.
    direct = rows["workflow_direct"]
    assert direct["error_kind"] == "skill-not-invoked" and direct["skill_invoked"] is False
    assert direct["resolved"] is False

    # The hunt ran for real, found nothing, and the untouched task fails its hidden oracle.
    workflow = rows["workflow"]
    assert workflow["skill_invoked"] is True and workflow["ok"] is True
    assert workflow["plan_doc"] == "docs/plans/hunt.md"
    assert workflow["oracle_passed"] is False and workflow["error_kind"] == "oracle-failed"
    seen = tool_results(b"".join((out / t["path"]).read_bytes() for t in workflow["transcript_artifacts"]))
    assert "HUNT-PLAN-DONE" in seen and "HUNT-WORK-DONE" in seen  # the commands really ran
    assert "/workspace" in seen and "uid=" not in seen  # and they ran inside the sandbox
    assert HISTORY_CANARY not in seen
    oracle_lines = [line.strip() for line in ORACLE_SOURCE.read_text().splitlines() if len(line.strip()) > 30]
    assert oracle_lines, "the oracle file should have distinctive lines to look for"
    leaked = [line for line in oracle_lines if json.dumps(line)[1:-1] in seen]
    assert not leaked, f"oracle content visible to the agent: {leaked[:3]}"
    assert "trivial_amount_grouping_oracle_test" not in seen
    # The hunt printed its environment: the key variable must not exist there at all (its value
    # would be redacted before it reached disk, so checking the value would prove nothing).
    assert "ANTHROPIC_API_KEY" not in seen and "HOME=/home/agent" in seen
    assert b"sk-scripted-" not in output_bytes(out)  # minted per-cell keys never persist
