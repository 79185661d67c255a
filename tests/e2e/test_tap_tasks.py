"""TAP as an outcome format, end to end: a Perl project whose tests ``prove`` runs (``t/*.t``,
Test::More) becomes a task with ``tasks new`` alone; the harness's TAP adapter reads each
file's stream strictly. Self-check passes (base fails, reference passes, sentinels as planned);
the oracle agent resolves it, the no-op agent does not. Negative controls: a test file that
forges its TAP (a doubled number, a plan the stream does not keep, a bail-out, a death after
its tests) is one errored ``<file>::[tap]``, never a pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.fix_tasks import sanity_rows, task_from_fix

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
    return task_from_fix(tmp_path_factory.mktemp("perl"), "calc", "perl-clamp", BASE, FIX, prompt=PROMPT)


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
    solved, untouched = sanity_rows(perl_task, tmp_path, capsys)
    assert solved["oracle_sealed"] == "sealed" and solved["oracle_tests_passed"] == 2
    assert "high" in untouched["oracle_output"]
