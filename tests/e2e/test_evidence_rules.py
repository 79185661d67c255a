"""Evidence rules through runner.main(): each cell of scripts/evidence-rules.yaml breaks one.

- a plan session that leaves anything beside its one plan document -> plan-evidence-invalid;
- a session that tries to move the seeded skills away -> refused (the harness's read-only
  ``.claude``), judged as any unfixed cell;
- a task setup that changes the seeded skills -> the cell fails before any session;
- a "resolved" implementation cell that changed nothing but its plan -> no-work-produced;
- a harness failure after the sessions finished keeps their usage and cost on the row.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import result_dicts
from workflow_bench import runner

from .conftest import tool_results

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "evidence-rules.yaml"


def _sweep(tasks, out, *arms: str, extra: tuple[str, ...] = ()) -> dict:
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(SCRIPT), *extra]
    runner.main([*argv, "--arms", *arms, "--out", str(out)])
    return {(r["task"], r["arm"]): r for r in result_dicts(out)}


def test_sessions_that_break_the_evidence_rules(task_file_for, tmp_path, bwrap_bin, claude_bin):
    out = tmp_path / "out"
    rows = _sweep(task_file_for("trivial-amount-grouping"), out, "workflow", "workflow_direct")

    plan = rows[("trivial-amount-grouping", "workflow")]
    assert plan["error_kind"] == "plan-evidence-invalid", plan["error_detail"]
    assert "'doc'" in plan["error_detail"] and plan["plan_doc"] is None
    assert plan["resolved"] is False and plan["sessions"] == 1  # the work session never ran
    assert plan["input_tokens"] == 300  # the plan session's spend is still counted

    work = rows[("trivial-amount-grouping", "workflow_direct")]
    (transcript,) = (out / "transcripts").glob("trivial-amount-grouping-workflow_direct-*.jsonl")
    # The session's .claude is the harness's read-only mount (issue 30): the move is refused, the
    # seeded skills stay intact, and the cell is judged as any unfixed one. The fingerprint rule
    # behind implementation-evidence-invalid still runs after every session (its check is the one
    # the setup case below trips).
    assert "MOVED-1" in tool_results(transcript.read_bytes()), tool_results(transcript.read_bytes())
    assert work["error_kind"] == "oracle-failed", work["error_detail"]
    assert work["resolved"] is False


def test_setup_tamper_no_work_and_a_late_infra_error(task_file_for, tmp_path, bwrap_bin, claude_bin):
    path = task_file_for("trivial-amount-grouping")
    (base,) = yaml.safe_load(path.read_text())["tasks"]
    # An oracle that passes on the untouched base (the authored tests, with a real outcome report):
    # a no-op work session then "resolves" and must be caught as no-work-produced. Its staged file
    # is not a test file (so it carries no sentinel tests, which a command that never runs it
    # could not report: that is tampering without a lock saying otherwise).
    base_tests = 'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" tests.test_money'
    [oracle_file] = base["oracle"]["files"]
    unsealed = [{**oracle_file, "target": "unused_oracle_data.txt"}]
    passing = {"oracle": {**base["oracle"], "command": base_tests, "min_tests": 1, "files": unsealed}}
    tasks = [
        {**base, "id": "tamper-setup", "setup": "echo tampered >> .claude/skills/plan/SKILL.md"},
        {**base, "id": "slow-verify", "verify": "sleep 60"},
        {**base, **passing, "id": "no-work"},
    ]
    path.write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    rows = _sweep(path, tmp_path / "out", "workflow", extra=("--verify-timeout", "3"))

    tamper = rows[("tamper-setup", "workflow")]
    assert tamper["ok"] is False and tamper["resolved"] is False
    assert "setup changed the seeded skill files" in tamper["error_detail"]
    assert tamper["session_ids"] == [] and tamper["input_tokens"] is None  # no session ran

    idle = rows[("no-work", "workflow")]
    assert idle["authored_tests_passed"] is True and idle["oracle_passed"] is True
    assert idle["error_kind"] == "no-work-produced" and idle["resolved"] is False
    assert idle["plan_doc"] == "docs/plans/p.md"  # the plan alone is not work

    late = rows[("slow-verify", "workflow")]
    # A verify that hangs on the agent's code fails after the sessions finished: charged to the
    # arm (verify-timeout), and the spend the sessions measured is kept, not blanked.
    assert late["resolved"] is False and late["error_kind"] == "verify-timeout", late["error_detail"]
    assert "exceeded 3 s" in late["error_detail"], late["error_detail"]
    assert (late["input_tokens"], late["output_tokens"]) == (500, 50) and late["num_turns"]
    assert late["cost_usd"] is not None and late["cost_usd"] > 0
    assert len(late["session_ids"]) == 2 and late["plan_doc"] == "docs/plans/p.md"
