"""The attack table and its judges: enough attacks, and each judge can say "not blocked"."""

from __future__ import annotations

import pytest

from tests.builders import CLEAN_EVIDENCE, PLANT, row
from workflow_bench.canary.attacks import ATTACKS, Evidence

pytestmark = pytest.mark.unit

# For each attack: evidence of the boundary failing. Every judge must call it NOT blocked.
LEAKS = {
    "host-secret-file": {"output": "CANARY-HOST-SECRET-1"},
    "invoker-home": {"output": "CANARY-HOME-SECRET-1"},
    "environment-key": {"output": "ANTHROPIC_API_KEY=[REDACTED]"},
    "argv-key": {"output": "--setenv ANTHROPIC_API_KEY sk-ant-canary-0000"},
    "outside-network": {"output": "ROUTE-OK"},
    "host-loopback": {"listener_hits": 1},
    "write-outside-workspace": {"host_paths_created": ("/usr/wfbench-canary",)},
    "modify-skill-bash": {"output": "", "row": row(error_kind="implementation-evidence-invalid")},
    "modify-skill-write": {"output": "File created successfully"},
    "oracle-files": {"output": "/.wfbench-oracle-ab/trivial_amount_grouping_oracle_test.py"},
    "git-history": {"output": "+WFBENCH-HISTORY-CANARY"},
    "oracle-mount-writer": {"background_survivors": 1},
    "background-survivor": {"background_survivors": 1},
    "see-host-processes": {"output": "4242 wfbench-host-sentinel-1 600"},
    "signal-host-process": {"sentinel_alive": False},
    "symlink-capture": {"patch": "+root:x:0:0:root:/root:/bin/bash"},
    "fill-home": {"output": "size 419430400"},
    "nested-userns": {"output": "USERNS-OK"},
    "vacuous-verify": {"row": row(authored_tests_passed=True, oracle_passed=True)},
}


def test_at_least_fifteen_distinct_attacks():
    names = [a.name for a in ATTACKS]
    assert len(names) >= 15 and len(set(names)) == len(names)
    assert set(names) == set(LEAKS), "every attack needs a negative control here"


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_each_judge_flags_its_leak(attack):
    leaky = Evidence(**{**CLEAN_EVIDENCE, **LEAKS[attack.name]})
    blocked, observed = attack.judge(leaky, PLANT)
    assert blocked is False, observed


def test_commands_never_contain_their_own_success_markers():
    for attack in ATTACKS:
        text = str(attack.make_input(PLANT))
        for marker in ("ROUTE-OK", "CONNECTED", "USERNS-OK", "REMOUNT-OK", "WFBENCH-HISTORY-CANARY"):
            assert marker not in text, (attack.name, marker)
