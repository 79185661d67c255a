"""The attack table and its judges: enough attacks, and each judge can say "not blocked"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import row
from workflow_bench.canary.attacks import ATTACKS, Evidence, Plant

pytestmark = pytest.mark.unit

PLANT = Plant(
    secret_dir=Path("/tmp/s"),
    secret_file=Path("/tmp/s/secret.txt"),
    secret_token="CANARY-HOST-SECRET-1",
    home_file=Path("/root/.h"),
    home_token="CANARY-HOME-SECRET-1",
    host_key="sk-ant-canary-0000",
    listener_port=1234,
    sentinel_pid=4242,
    sentinel_name="wfbench-host-sentinel-1",
    background_name="wfbench-canary-bg-1",
)
CLEAN = dict(
    output="No such file or directory",
    row=row(error_kind="oracle-failed", authored_tests_passed=True, oracle_passed=False),
    patch="",
    transcripts="",
    listener_hits=0,
    sentinel_alive=True,
    background_survivors=0,
    host_paths_created=(),
)
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
    leaky = Evidence(**{**CLEAN, **LEAKS[attack.name]})
    blocked, observed = attack.judge(leaky, PLANT)
    assert blocked is False, observed


def test_commands_never_contain_their_own_success_markers():
    for attack in ATTACKS:
        text = str(attack.make_input(PLANT))
        for marker in ("ROUTE-OK", "CONNECTED", "USERNS-OK", "REMOUNT-OK", "WFBENCH-HISTORY-CANARY"):
            assert marker not in text, (attack.name, marker)
