"""The kernel-budget attacks: each judge says "blocked" only when the cell stopped at its bound and
the host and a second cell still got theirs (``canary/attacks_budgets.py``)."""

from __future__ import annotations

import pytest

from tests.builders import resource_limits, row
from workflow_bench.canary import attacks_budgets
from workflow_bench.canary.attacks_budgets import BUDGET_ATTACKS, PROBES
from workflow_bench.canary.attacks_limits import LimitEvidence

pytestmark = pytest.mark.unit

ROW = row(error_kind="oracle-failed", resolved=False, resource_limits=resource_limits(ptys=128))


def _judge(name):
    return next(a for a in BUDGET_ATTACKS if a.name == name).judge


def _ev(output: str, row=ROW) -> LimitEvidence:
    return LimitEvidence(output, row, "", (), True)


@pytest.mark.parametrize(
    ("attack", "probe", "held", "blocked"),
    [
        ("inotify-exhaustion", "inotify", "budget-held 31 Too many open files", True),
        ("inotify-exhaustion", "inotify", "budget-held 127 Too many open files", False),  # no cell bound
        ("keyring-exhaustion", "keys", "budget-held 0 Operation not permitted", True),
        ("keyring-exhaustion", "keys", "budget-held 38 Disk quota exceeded", False),  # no seccomp
        ("mqueue-exhaustion", "mqueue", "budget-held 62 Too many open files", True),
        ("mqueue-exhaustion", "mqueue", "budget-held 195 Too many open files", False),  # no rlimit
        ("pty-exhaustion", "pty", "budget-held 128 No space left on device", True),
        ("pty-exhaustion", "pty", "budget-held 4095 No space left on device", False),  # no devpts max
    ],
)
def test_a_budget_judge_needs_the_cells_bound(monkeypatch, attack, probe, held, blocked):
    monkeypatch.setitem(PROBES, probe, (True, True if probe != "keys" else None))
    assert _judge(attack)(_ev(held))[0] is blocked


@pytest.mark.parametrize("probes", [(False, True), (True, False)], ids=["host refused", "2nd cell refused"])
def test_a_cell_within_its_bound_is_still_not_blocked_when_others_were_refused(monkeypatch, probes):
    monkeypatch.setitem(PROBES, "inotify", probes)
    assert _judge("inotify-exhaustion")(_ev("budget-held 31 Too many open files"))[0] is False


def test_without_root_a_cell_has_no_pty_at_all(monkeypatch):
    monkeypatch.setitem(PROBES, "pty", (True, True))
    no_devpts = ROW.replace(resource_limits=resource_limits(ptys=None))
    assert _judge("pty-exhaustion")(_ev("budget-held 0 Input/output error", no_devpts))[0] is True
    assert _judge("pty-exhaustion")(_ev("budget-held 3 No space left on device", no_devpts))[0] is False
    monkeypatch.setitem(PROBES, "pty", (True, False))  # the second cell has none either: nothing lost
    assert _judge("pty-exhaustion")(_ev("budget-held 0 Input/output error", no_devpts))[0] is True
    monkeypatch.setitem(PROBES, "pty", (False, False))
    assert _judge("pty-exhaustion")(_ev("budget-held 0 Input/output error", no_devpts))[0] is False


def test_the_descriptor_judge_needs_the_watchdogs_verdict():
    judge = _judge("descriptor-exhaustion")
    killed = ROW.replace(
        error_kind="resource-limit", error_detail="descriptor limit 65536: 93309 open (watchdog)"
    )
    assert judge(_ev("", killed))[0] is True
    assert judge(_ev("descriptors-survived 65536", ROW))[0] is False


def test_nothing_printed_proves_nothing(monkeypatch):
    for name in ("inotify", "keys", "mqueue", "pty"):
        monkeypatch.setitem(PROBES, name, (True, True))
    for attack in BUDGET_ATTACKS:
        assert attack.judge(_ev(""))[0] is False, attack.name
    assert attacks_budgets.INOTIFY == 32


CPU_ROW = row(error_kind="oracle-failed", resolved=False, resource_limits=resource_limits(cpus=0.25))


@pytest.mark.parametrize(
    ("printed", "probes", "blocked"),
    [
        ("cpu-held 0.228 2.97", (True, True), True),
        ("cpu-held 0.31 2.97", (True, True), True),  # within the quota's tolerance (1.2x + 0.02)
        ("cpu-held 0.33 2.97", (True, True), False),  # over it: the quota did not hold
        ("cpu-held 1.61 2.97", (True, True), False),  # no quota at all (the removed defence)
        ("cpu-held 0.228 2.97", (False, True), False),  # the host was starved
        ("cpu-held 0.228 2.97", (True, False), False),  # the second cell was starved
    ],
)
def test_the_cpu_hog_judge_needs_the_quota_and_both_neighbours(monkeypatch, printed, probes, blocked):
    monkeypatch.setitem(PROBES, "cpu", probes)
    assert _judge("cpu-hog")(_ev(printed, CPU_ROW))[0] is blocked


def test_a_cpu_hog_without_a_recorded_bound_is_blocked_only_for_a_non_root_runner(monkeypatch):
    """Root has the cpu cgroup: no bound recorded is a failure. Without root the row must say so."""
    monkeypatch.setitem(PROBES, "cpu", (True, True))
    unbounded = CPU_ROW.replace(resource_limits=resource_limits(cpus=None))
    monkeypatch.setattr(attacks_budgets.os, "geteuid", lambda: 0)
    assert _judge("cpu-hog")(_ev("cpu-held 0.2 2.9", unbounded))[0] is False
    monkeypatch.setattr(attacks_budgets.os, "geteuid", lambda: 1000)
    assert _judge("cpu-hog")(_ev("cpu-held 1.6 2.9", unbounded))[0] is True
