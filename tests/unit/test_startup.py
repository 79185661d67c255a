"""Every command starts in well under a second of imports: its --help and every refused input
(exit 2 in bounded time) must not pay for the statistics stack, which only a finished sweep's
report needs (scipy.stats alone cost 1.5-20 s of wall time here, by the machine's load)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit
HEAVY = ("scipy", "numpy")


@pytest.mark.parametrize("module", ["workflow_bench.runner", "workflow_bench.cli", "workflow_bench.tasks"])
def test_a_command_imports_no_statistics_stack(module):
    probe = f"import sys, {module}; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"{module} imports {done.stdout.strip()} at start-up"


def test_the_statistics_still_compute():
    from workflow_bench.reports.stats import summarize_deltas

    summary = summarize_deltas([1.0, 2.0, -0.5, 3.0])
    assert summary.median_delta == 1.5 and summary.ci95 is not None and summary.sign_test.positive == 3
