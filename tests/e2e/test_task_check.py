"""Task self-check and the two scripted agents, on the demo corpus and on broken tasks.

- ``tasks check`` on the demo corpus: every task discriminates (exit 0, one table line each);
  a task whose oracle passes on the base, or that has no reference patch, exits 1 named.
- The oracle agent (a generated script applying each reference patch through the real CLI)
  resolves every demo implementation task on every default arm, invoking each arm's skills first;
  the no-op agent resolves none, and no cell of either is skill-not-invoked or unusable.
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.builders import agent_sweep
from workflow_bench import runner
from workflow_bench.arms import DEFAULT_ARMS
from workflow_bench.tasks.__main__ import main as tasks_main

from .conftest import DEMO_TASKS, REPO_ROOT

pytestmark = pytest.mark.e2e
DEMO_IDS = (
    "trivial-amount-grouping",
    "bug-negative-amounts",
    "feature-report-filter",
    "cross-module-report-cutoff",
)


def test_demo_corpus_discriminates_and_its_committed_lock_is_current(capsys, bwrap_bin, private_tmpdir):
    lock = DEMO_TASKS.with_name("tasks.scenarios.lock.json")
    before = lock.read_bytes()
    # --frozen: compare with the committed expected-tests lock, never write it.
    code = tasks_main(["check", "--tasks", str(DEMO_TASKS), "--frozen"])
    out = capsys.readouterr().out
    assert code == 0, out
    for task_id in DEMO_IDS:
        (line,) = [ln for ln in out.splitlines() if ln.startswith(task_id + " ")]
        assert "  discriminates (reference sha256 " in line and "3/3" in line, line
        assert "; lock unchanged)" in line, line
        # Every probe says why: the judge's reason and the counts.
        assert f"[check] {task_id} base oracle: fail (" in out and " tests failed: " in out
    assert lock.read_bytes() == before
    assert not any(private_tmpdir.iterdir())


def test_review_corpus_labels_are_checked(capsys, bwrap_bin, private_tmpdir):
    code = runner.main(["--tasks", str(REPO_ROOT / "tasks.review.yaml"), "--check-tasks"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "review-report-prefix-defect" in out and "review-amount-grouping-clean" in out
    assert "(0 label(s))" in out and "CANNOT" not in out


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        # An oracle that passes on the base: the authored tests (they already pass there), with a
        # report. The reference patch adds tests to them, so under the expected tests the base run
        # "fails" only by missing those: no expected test failed, so it cannot discriminate.
        (
            {"oracle_command": 'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" tests.test_money'},
            "no expected test fails on the untouched base: no proof of success: 2 expected tests "
            "were not reported: tests.test_money.FormatAmountTest.test_default_is_ungrouped",
        ),
        # An oracle that crashes on the base (as one importing a name only the fix adds would)
        # never ran its tests there: failing is not discriminating.
        (
            {
                "oracle_command": "grep -q 'grouping: bool' ledger/money.py || exit 3; "
                'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" "$WORKFLOW_BENCH_ORACLE_ROOT/'
                'trivial_amount_grouping_oracle_test.py"'
            },
            "the oracle did not run on the base (a crash, an import error or no tests): no proof of "
            "success: no test reported a result (the command exited 3)",
        ),
        ({"reference_patch": None}, "no reference_patch"),
        ({"base_expected": None}, "verify passes on the untouched base"),
    ],
    ids=["oracle-passes-on-base", "oracle-never-runs", "no-reference-patch", "undeclared-base-verify-pass"],
)
def test_a_task_that_cannot_discriminate_exits_1_named(
    override, problem, task_file_for, capsys, bwrap_bin, private_tmpdir
):
    path = task_file_for("trivial-amount-grouping")
    data = yaml.safe_load(path.read_text())
    task = data["tasks"][0]
    if "oracle_command" in override:
        task["oracle"]["command"] = override["oracle_command"]
    for key in ("reference_patch", "base_expected"):
        if key in override:
            task.pop(key)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code = tasks_main(["check", "--tasks", str(path), "--repeats", "1"])
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert "cannot discriminate: trivial-amount-grouping" in captured.err
    assert problem in captured.out, captured.out


def _sweep_with_agent(agent: str, tmp_path, capsys) -> list[dict]:
    code, rows = agent_sweep(DEMO_TASKS, agent, tmp_path, "--include-expensive", "--workers", "2")
    # Every arm measured something: no cell is skill-not-invoked, no arm UNUSABLE (that is exit 1).
    assert code == 0, capsys.readouterr().err
    return rows


def test_oracle_agent_resolves_everything_and_noop_agent_nothing(
    tmp_path, capsys, bwrap_bin, claude_bin, private_tmpdir
):
    cells = sorted((task, arm) for task in DEMO_IDS for arm in DEFAULT_ARMS)
    solved = _sweep_with_agent("oracle", tmp_path, capsys)
    assert sorted((r["task"], r["arm"]) for r in solved) == cells
    for row in solved:
        assert row["resolved"] is True, (row["task"], row["arm"], row["error_kind"], row["error_detail"])
        assert row["skill_invoked"] is (None if row["arm"] == "baseline" else True), row["arm"]
    untouched = _sweep_with_agent("noop", tmp_path, capsys)
    assert sorted((r["task"], r["arm"]) for r in untouched) == cells
    for row in untouched:
        assert row["resolved"] is False and row["oracle_passed"] is False, (row["task"], row["arm"])
        assert row["error_kind"] in ("verify-failed", "oracle-failed"), (row["task"], row["error_detail"])
        assert row["skill_invoked"] is (None if row["arm"] == "baseline" else True), row["arm"]
    # The reference patches reach cells only through the oracle agent's script.
    patches = [
        p.read_bytes() for p in (REPO_ROOT / "workflow_bench" / "corpus" / "reference").glob("*.patch")
    ]
    noop_bytes = b"".join(p.read_bytes() for p in (tmp_path / "out-noop").rglob("*") if p.is_file())
    assert patches and not any(patch[:200] in noop_bytes for patch in patches)
    shutil.rmtree(tmp_path / "out-noop")
