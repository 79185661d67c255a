"""``regrade`` through the real CLI and bwrap: the demo sweep's saved patches re-judged in clean rooms.

The demo sweep runs once (runner.main, the scripted model); then:

- under its own task file: 0 changed verdicts, no model request (a scripted provider listening
  at the address a session would use served nothing) and no Claude Code process (the process
  table, sampled while the regrade ran, shows bubblewrap judges but never the CLI), the source
  directory byte-identical, every row naming its source;
- under a task file whose oracle gains a failing test: every cell of that task is listed changed;
- a SWE-bench predictions file with the gold, an empty and a wrong patch resolves 1, 0, 0;
- bad input (a task the sweep never ran, an unknown instance id, a bad line) exits 2 naming it,
  with nothing written.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path

import pytest

from tests.builders import result_dicts
from tests.conftest import short_dir
from workflow_bench import cli, runner
from workflow_bench.providers.scripted import ScriptedProvider, load_script
from workflow_bench.runner_args import DEMO_SCRIPT

from .conftest import DEMO_TASKS, REPO_ROOT, output_bytes

pytestmark = pytest.mark.e2e
GROUPING = "trivial-amount-grouping"


@pytest.fixture(scope="module")
def demo(tmp_path_factory, bwrap_bin, claude_bin):
    out = tmp_path_factory.mktemp("regrade-demo") / "out"
    with short_dir() as private_tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(private_tmp))
        code = runner.main(
            ["--tasks", str(DEMO_TASKS), "--runs", "1", "--provider", "scripted", "--out", str(out)]
        )
    assert code == 0
    return out


class ProcessTable:
    """Every command line of this process's descendants seen in /proc while running (sampled every
    10 ms). Only descendants: the suite's other worker (or anything else on the machine) may start
    a CLI at the same moment, which says nothing about this regrade."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @staticmethod
    def _parents() -> dict[int, int]:
        parents = {}
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    parents[int(pid)] = int(stat.rsplit(")", 1)[1].split()[1])
        return parents

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            children: dict[int, list[int]] = {}
            for pid, parent in self._parents().items():
                children.setdefault(parent, []).append(pid)
            todo = list(children.get(os.getpid(), []))
            while todo:
                pid = todo.pop()
                todo += children.get(pid, [])
                with contextlib.suppress(OSError):
                    self.seen.add(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())

    def __enter__(self) -> ProcessTable:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _regrade(*args: str) -> int:
    with short_dir() as private_tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(private_tmp))
        return cli.main(["regrade", *args])


def test_regrade_under_its_own_tasks_changes_nothing_and_pays_nothing(demo, tmp_path, monkeypatch):
    before = output_bytes(demo)
    new = tmp_path / "new"
    with ScriptedProvider(load_script(DEMO_SCRIPT)) as provider, ProcessTable() as table:
        # Where a session's CLI would send its requests, were one started.
        monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.base_url)
        code = _regrade(str(demo), "--tasks", str(DEMO_TASKS), "--out", str(new))
        served = provider.all_ledger()
    assert code == 0
    assert served == ()
    assert any("bwrap" in line for line in table.seen), "the sampler must see the judges' sandboxes"
    assert not [line for line in table.seen if "claude" in line.split(" ")[0]], "no CLI may start"
    assert output_bytes(demo) == before, "the source sweep must stay byte-identical"
    changes = json.loads((new / "regrade.json").read_text())
    assert changes["changed"] == [] and changes["rows"] == changes["rejudged"] == 9
    rows = result_dicts(new)
    old = {(r["task"], r["arm"], r["run"]): r for r in result_dicts(demo)}
    assert len(rows) == len(old) == 9
    for row in rows:
        source = old[(row["task"], row["arm"], row["run"])]
        assert row["regraded_from"] == f"{demo} {row['task']}/{row['arm']}/{row['run']}"
        assert (row["resolved"], row["oracle_passed"]) == (source["resolved"], source["oracle_passed"])
        assert row["regrade_before"]["oracle_digest"] == source["oracle_digest"] == row["oracle_digest"]
        assert row["cleanroom_oracle_passed"] == source["cleanroom_oracle_passed"] == row["oracle_passed"]
        assert row["regrade_change"] is None
    for name in ("report.md", "report.html", "stats.json", "viewer.html", "sweep.json"):
        assert (new / name).is_file(), name
    assert "No verdict changed." in (new / "report.md").read_text()


DEMO_IDS = ("trivial-amount-grouping", "bug-negative-amounts", "feature-report-filter")


def _with_failing_oracle_test(tasks: Path) -> Path:
    """``tasks`` (written by ``task_file_for``) with the grouping oracle gaining a failing test."""
    oracle = tasks.parent / "oracles" / "trivial-amount-grouping.oracle_test.py"
    text = oracle.read_text()
    marker = "class GroupingOracle(unittest.TestCase):\n"
    assert marker in text
    oracle.write_text(
        text.replace(
            marker,
            marker + "    def test_added_by_the_corrected_oracle(self):\n"
            "        self.assertEqual(money.format_amount(5, grouping=True), 'never')\n\n",
        )
    )
    return tasks


def test_an_oracle_gaining_a_failing_test_lists_every_affected_cell(demo, tmp_path, task_file_for):
    tasks = _with_failing_oracle_test(task_file_for(*DEMO_IDS))
    new = tmp_path / "new"
    assert _regrade(str(demo), "--tasks", str(tasks), "--out", str(new)) == 0
    changed = json.loads((new / "regrade.json").read_text())["changed"]
    resolved_before = {
        (r["task"], r["arm"], r["run"]) for r in result_dicts(demo) if r["task"] == GROUPING and r["resolved"]
    }
    assert resolved_before, "the demo resolves the grouping task in some arm"
    assert {(c["task"], c["arm"], c["run"]) for c in changed} == resolved_before
    for entry in changed:
        assert entry["before"]["resolved"] is True and entry["after"]["resolved"] is False
        assert "the oracle changed" in entry["why"]
    report = (new / "report.md").read_text()
    assert all(f"| {c['task']} | {c['arm']} |" in report for c in changed)
    rows = {(r["task"], r["arm"]): r for r in result_dicts(new)}
    row = rows[(GROUPING, "baseline")]
    assert row["regrade_before"]["oracle_digest"] != row["oracle_digest"]


def test_predictions_gold_empty_and_wrong_resolve_one_zero_zero(tmp_path, task_file_for):
    tasks = task_file_for(GROUPING)
    gold = (REPO_ROOT / "workflow_bench/corpus/reference/trivial-amount-grouping.patch").read_text()
    # Wrong: the signature of the fix without its effect, and no new tests (verify still passes).
    fix = gold.split("diff --git a/tests/")[0]
    wrong = fix.replace('+    digits = f"{whole:,}" if grouping else str(whole)', "+    digits = str(whole)")
    assert wrong != fix
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(
        "".join(
            json.dumps({"instance_id": GROUPING, "model_name_or_path": model, "model_patch": patch}) + "\n"
            for model, patch in (("gold", gold), ("empty", ""), ("wrong", wrong))
        )
    )
    new = tmp_path / "new"
    assert _regrade("--predictions", str(predictions), "--tasks", str(tasks), "--out", str(new)) == 0
    rows = {r["arm"]: r for r in result_dicts(new)}
    assert {arm: row["resolved"] for arm, row in rows.items()} == {
        "gold": True,
        "empty": False,
        "wrong": False,
    }
    assert rows["wrong"]["error_kind"] == "oracle-failed" and rows["wrong"]["authored_tests_passed"] is True
    assert rows["gold"]["regraded_from"] == f"{predictions}:1"
    stats = json.loads((new / "stats.json").read_text())
    assert set(stats["arms"]) == {"gold", "empty", "wrong"}
    assert {(c["arm"], c["reference"]) for c in stats["comparisons"]} == {
        ("empty", "gold"),
        ("wrong", "gold"),
    }


@pytest.mark.parametrize(
    "lines, named",
    [
        ('{"instance_id": "nope", "model_name_or_path": "m", "model_patch": ""}\n', ":1: instance_id"),
        (f'{{"instance_id": "{GROUPING}", "model_patch": ""}}\n', ":1: model_name_or_path"),
        (
            f'{{"instance_id": "{GROUPING}", "model_name_or_path": "m", "model_patch": ""}}\nnot json\n',
            ":2: not JSON",
        ),
    ],
)
def test_a_bad_predictions_line_exits_2_naming_it(tmp_path, capsys, lines, named):
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(lines)
    new = tmp_path / "new"
    code = _regrade("--predictions", str(predictions), "--tasks", str(DEMO_TASKS), "--out", str(new))
    assert code == 2
    assert f"{predictions}{named}" in capsys.readouterr().err
    assert not new.exists()


def test_a_task_the_sweep_never_ran_is_refused_by_name(demo, tmp_path, capsys, task_file_for):
    tasks = task_file_for(GROUPING)
    tasks.write_text(tasks.read_text().replace(f"id: {GROUPING}", "id: never-ran"))
    new = tmp_path / "new"
    before = output_bytes(demo)
    assert _regrade(str(demo), "--tasks", str(tasks), "--out", str(new)) == 2
    assert "task 'never-ran': the sweep" in capsys.readouterr().err
    assert not new.exists() and output_bytes(demo) == before
