"""Task self-check and the two scripted agents, on the demo corpus and on broken tasks.

- ``tasks check`` on the demo corpus: every task discriminates (exit 0, one table line each);
  a task whose oracle passes on the base, or that has no reference patch, exits 1 named.
- The oracle agent (a generated script applying each reference patch through the real CLI)
  resolves every demo implementation task; the no-op agent resolves none.
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.builders import result_dicts
from workflow_bench import runner
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
    script = tmp_path / f"{agent}.yaml"
    assert (
        tasks_main(["agent-script", "--tasks", str(DEMO_TASKS), "--agent", agent, "--out", str(script)]) == 0
    )
    out = tmp_path / f"out-{agent}"
    code = runner.main(
        [
            "--tasks", str(DEMO_TASKS), "--provider", "scripted", "--script", str(script),
            "--arms", "baseline", "--include-expensive", "--out", str(out),
        ]
    )  # fmt: skip
    capsys.readouterr()
    assert code in (0, 1)
    return result_dicts(out)


def test_oracle_agent_resolves_everything_and_noop_agent_nothing(
    tmp_path, capsys, bwrap_bin, claude_bin, private_tmpdir
):
    solved = _sweep_with_agent("oracle", tmp_path, capsys)
    assert sorted(r["task"] for r in solved) == sorted(DEMO_IDS)
    for row in solved:
        assert row["resolved"] is True, (row["task"], row["error_kind"], row["error_detail"])
    untouched = _sweep_with_agent("noop", tmp_path, capsys)
    assert sorted(r["task"] for r in untouched) == sorted(DEMO_IDS)
    for row in untouched:
        assert row["resolved"] is False and row["oracle_passed"] is False, row["task"]
    # The reference patches reach cells only through the oracle agent's script.
    patches = [
        p.read_bytes() for p in (REPO_ROOT / "workflow_bench" / "corpus" / "reference").glob("*.patch")
    ]
    noop_bytes = b"".join(p.read_bytes() for p in (tmp_path / "out-noop").rglob("*") if p.is_file())
    assert patches and not any(patch[:200] in noop_bytes for patch in patches)
    shutil.rmtree(tmp_path / "out-noop")
