"""The canary's table holds exactly the declared attacks, one verdict each: a suite that silently
skips an attack, repeats one or reports one nobody declared is NOT BLOCKED, never a clean run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from workflow_bench.canary import declared_attacks
from workflow_bench.canary._main import account_for_every_attack
from workflow_bench.canary._suite import render_table

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class _Attack:
    name: str
    expected: str = "blocked"


@dataclass(frozen=True)
class _Verdict:
    attack: _Attack
    blocked: bool = True
    observed: str = "refused"


def _all_blocked() -> list[_Verdict]:
    return [_Verdict(_Attack(name)) for name in declared_attacks()]


def test_declared_attacks_are_unique_and_include_the_breaker():
    names = declared_attacks()
    assert len(names) == len(set(names)) and "breaker-abuse" in names
    assert len(names) > 70  # every suite is registered (a dropped suite would fall far below)


def test_a_complete_blocked_run_is_left_as_it_is():
    verdicts = _all_blocked()
    assert account_for_every_attack(verdicts) == verdicts


@pytest.mark.parametrize("change", ["missing", "twice", "unknown"])
def test_an_unaccounted_attack_is_not_blocked(change):
    verdicts = _all_blocked()
    if change == "missing":
        gone = verdicts.pop(5).attack.name
    elif change == "twice":
        verdicts.append(verdicts[0])
        gone = verdicts[0].attack.name
    else:
        verdicts.append(_Verdict(_Attack("nobody-declared-me")))
        gone = "nobody-declared-me"
    accounted = account_for_every_attack(verdicts)
    unblocked = [v for v in accounted if not v.blocked]
    assert [v.attack.name for v in unblocked] == [gone]
    assert "NOT BLOCKED" in render_table(accounted)


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_documented_attack_count_is_the_declared_one(page):
    counts = re.findall(r"`\./dev canary` \((\d+) attacks", (ROOT / page).read_text())
    assert counts and all(int(c) == len(declared_attacks()) for c in counts), counts
