"""The resource-limit and agent-text attacks: each judge says "blocked" only on the defended outcome."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.builders import row
from workflow_bench.canary.attacks_limits import LIMIT_ATTACKS, LIMIT_CELLS, LimitEvidence
from workflow_bench.redaction import REDACTED
from workflow_bench.rows.model import Row

pytestmark = pytest.mark.unit

FILLED = "\n".join(
    [
        "fill / 0 Read-only file system",
        "fill /dev 0 Read-only file system",
        "fill /run 4194304 No space left on device",
        "fill /dev/shm 67108864 No space left on device",
        "fill /home/agent 268357632 No space left on device",
        "fill /tmp 536870912 No space left on device",
    ]
)
ROW = {
    "error_kind": "oracle-failed",
    "error_detail": "hidden oracle failed",
    "tool_use_counts": {"Bash\ufffd": 1, REDACTED: 1, f"{REDACTED}#2": 1, "\\x1b[2JBash": 1},
}
CONSOLE = ("cell: tool call 2: \\x1b[2J\\x1b[31mBash\\x0afake: resolved=True",)
CLEAN = LimitEvidence(output=FILLED, row=row(**ROW), transcripts="", console=CONSOLE, sentinel_alive=True)


def _limit_row(detail: str) -> Row:
    return row(**{**ROW, "error_kind": "resource-limit", "error_detail": f"{detail} (primary=session-error)"})


# Per attack: the defended evidence (judge must say blocked) and a broken one (must say NOT blocked).
CASES = {
    "fill-every-tmpfs": (
        {},
        {"output": FILLED.replace("fill / 0 Read-only file system", "fill / 8388608 no error")},
    ),
    "control-chars-tool-name": ({}, {"console": ("cell: tool call 2: \x1b[2JBash",)}),
    "lone-surrogate-tool-name": ({}, {"row": row(**{**ROW, "error_kind": "infra-error"})}),
    "redaction-collision-1": ({}, {"row": row(**{**ROW, "error_kind": "infra-error"})}),
    "redaction-collision-2": ({}, {"row": row(**{**ROW, "tool_use_counts": {REDACTED: 2}})}),
    "memory-exhaustion": (
        {"row": _limit_row("memory limit 768 MiB: 1 process(es) OOM-killed")},
        {"row": row(**ROW), "output": "ALLOCATED"},
    ),
    "process-exhaustion": (
        {"row": _limit_row("process limit 128: 2 fork(s) refused")},
        {"row": row(**ROW), "output": "started 2000"},
    ),
    "disk-exhaustion": (
        {"row": _limit_row("disk limit 64 MiB over the clone: volume full")},
        {"row": _limit_row("memory limit 768 MiB: 1 process(es) OOM-killed")},
    ),
}


def test_every_attack_has_cases_and_names_are_unique():
    names = [a.name for a in LIMIT_ATTACKS]
    assert len(set(names)) == len(names) and set(names) == set(CASES)
    assert sum(len(c.attacks) for c in LIMIT_CELLS) == len(LIMIT_ATTACKS)


@pytest.mark.parametrize("attack", LIMIT_ATTACKS, ids=lambda a: a.name)
def test_judge_blocks_only_the_defended_outcome(attack):
    defended, broken = CASES[attack.name]
    blocked, observed = attack.judge(replace(CLEAN, **defended))
    assert blocked, observed
    blocked, observed = attack.judge(replace(CLEAN, **{**defended, **broken}))
    assert not blocked, observed


def test_limit_judges_fail_when_the_host_sentinel_died():
    for attack in LIMIT_ATTACKS:
        if attack.name in ("memory-exhaustion", "process-exhaustion", "disk-exhaustion"):
            row = _limit_row(
                {"memory-exhaustion": "memory limit", "process-exhaustion": "process limit"}.get(
                    attack.name, "disk limit"
                )
            )
            assert not attack.judge(replace(CLEAN, row=row, sentinel_alive=False))[0]


def test_small_limits_stay_bounded():
    # The canary must keep the host responsive: every exhausting cell runs under small limits.
    for cell in LIMIT_CELLS[1:]:
        assert cell.limits.memory_mib <= 1024 and cell.limits.pids <= 256 and cell.limits.disk_mib <= 128
