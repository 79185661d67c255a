"""Every canary suite's work root is a runner-style work root (``workspace.paths.make_work_root``):
named for its process, so a canary killed mid-run (its cells' volumes and devpts still mounted) is
collected by the next runner's stale-root cleanup or ``./dev clean``, like a killed sweep's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
CANARY = Path(__file__).resolve().parents[2] / "workflow_bench" / "canary"
# The planted host secret must live outside every work root (the sandbox must not see it): no cell
# ever mounts anything there.
ALLOWED = {'tempfile.mkdtemp(prefix="wfbench-canary-secret-")'}


def _own_temp_roots(source: str) -> list[str]:
    """``mkdtemp`` calls that make a top-level directory (no ``dir=``) other than the allowed ones."""
    calls = re.findall(r"tempfile\.mkdtemp\([^)]*\)", source)
    return [c for c in calls if "dir=" not in c and c not in ALLOWED]


def test_no_canary_suite_makes_a_work_root_a_stale_cleanup_cannot_find():
    offenders = {
        p.name: found for p in sorted(CANARY.glob("*.py")) if (found := _own_temp_roots(p.read_text()))
    }
    assert offenders == {}
    # Negative control: the names the suites used before are caught.
    assert _own_temp_roots('work_root = Path(tempfile.mkdtemp(prefix="wfbench-canary-limits-"))')
    assert not _own_temp_roots('Path(tempfile.mkdtemp(prefix="probe-", dir=self.work_root))')
