"""TAP as an outcome format, end to end: a Perl project whose tests ``prove`` runs (``t/*.t``,
Test::More) becomes a task with ``tasks new`` alone; the harness's TAP adapter reads each
file's stream strictly. Self-check passes (base fails, reference passes, sentinels as planned);
the oracle agent resolves it, the no-op agent does not. Negative controls: a test file that
forges its TAP (a doubled number, a plan the stream does not keep, a bail-out, a death after
its tests) is one errored ``<file>::[tap]``, never a pass.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml

from tests.builders import agent_sweep, git_in
from tests.conftest import short_dir
from workflow_bench.tasks.__main__ import main as tasks_main

pytestmark = pytest.mark.e2e
PROMPT = "clamp returns the lower bound for values above the range; it should return the upper bound.\n"
CALC = (
    "package Calc;\nuse strict;\n"
    "sub clamp { my ($v, $lo, $hi) = @_; return $lo if $v < $lo; return $lo if $v > $hi; return $v; }\n1;\n"
)
BASE = {
    "lib/Calc.pm": CALC,
    "t/Calc.t": (
        "use strict;\nuse Test::More;\nuse Calc;\nis(Calc::clamp(-5, 0, 10), 0, 'low');\ndone_testing;\n"
    ),
}
FIX = {
    "lib/Calc.pm": CALC.replace("return $lo if $v > $hi", "return $hi if $v > $hi"),
    "t/high.t": (
        "use strict;\nuse Test::More;\nuse Calc;\nis(Calc::clamp(50, 0, 10), 10, 'high');\n"
        "is(Calc::clamp(10, 0, 10), 10, 'at the bound');\ndone_testing;\n"
    ),
}


@pytest.fixture(scope="module")
def perl_task(tmp_path_factory, bwrap_bin) -> Path:
    root = tmp_path_factory.mktemp("perl")
    repo = root / "calc"
    repo.mkdir()
    git_in(repo, "init", "-q", "-b", "main")
    for files, message in ((BASE, "base"), (FIX, "fix: the upper bound")):
        for name, text in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git_in(repo, "add", "-A")
        git_in(repo, "commit", "-q", "-m", message)
    tasks = root / "tasks" / "tasks.yaml"
    tasks.parent.mkdir()
    argv = ["new", "--repo", str(repo), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)]
    with short_dir() as tmpdir, pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmpdir))
        assert tasks_main([*argv, "--prompt", PROMPT, "--id", "perl-clamp", "--repeats", "1"]) == 0
    return tasks


def test_tasks_new_writes_a_prove_task_read_as_tap_with_a_sealed_lock(perl_task) -> None:
    (task,) = yaml.safe_load(perl_task.read_text())["tasks"]
    assert '"$WORKFLOW_BENCH_TAP" perl' in task["verify"] and task["verify"].endswith(" t/Calc.t")
    assert [f["target"] for f in task["oracle"]["files"]] == ["t/high.t"]
    entry = json.loads(perl_task.with_name("tasks.lock.json").read_text())["tasks"]["perl-clamp"]
    assert entry["oracle"]["passed"] == ["t/high.t::at the bound", "t/high.t::high"]
    assert entry["verify"]["passed"] == ["t/Calc.t::low"]
    assert entry["oracle_sealed"] == ["t/high.t"]


def test_the_oracle_agent_resolves_the_prove_task_and_the_noop_agent_does_not(
    perl_task, tmp_path, claude_bin, private_tmpdir, capsys
) -> None:
    code, solved = agent_sweep(perl_task, "oracle", tmp_path, "--arms", "baseline")
    capsys.readouterr()
    (row,) = solved
    why = (row["error_kind"], row["error_detail"], row["oracle_output"])
    assert code == 0 and row["resolved"] is True, why
    assert row["oracle_sealed"] == "sealed" and row["oracle_tests_passed"] == 2
    code, untouched = agent_sweep(perl_task, "noop", tmp_path, "--arms", "baseline")
    capsys.readouterr()
    (row,) = untouched
    assert row["resolved"] is False and row["error_kind"] == "oracle-failed", row["error_detail"]
    assert "high" in row["oracle_output"]
