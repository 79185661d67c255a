"""The confinement canary cells for real, with every defence and with each one removed once.

``attacks_confine``: the agent's own Claude Code settings (a shell prefix, helper commands) and
a tool running without the harness's prefix against the CLI process. All blocked with every
defence on; each negative control turns one ``Confinement`` field off and the attacks it stops
must come out NOT BLOCKED, so no verdict here holds whatever the harness does.
"""

from __future__ import annotations

import pytest

from workflow_bench.canary.attacks_confine import SETTINGS_CELL, UNPREFIXED_CELL, run_confine_cells

pytestmark = pytest.mark.e2e


def _verdicts(claude_bin, bwrap_bin, cells, without=()):
    from workflow_bench.claude_cli import claude_version

    verdicts = run_confine_cells(
        claude_bin=claude_bin,
        claude_version=claude_version(claude_bin),
        bwrap_bin=bwrap_bin,
        progress=lambda _line: None,
        cells=cells,
        without=without,
    )
    return {v.attack.name: (v.blocked, v.observed) for v in verdicts}


def test_every_confinement_attack_is_blocked(claude_bin, bwrap_bin):
    verdicts = _verdicts(claude_bin, bwrap_bin, (SETTINGS_CELL, UNPREFIXED_CELL))
    assert all(blocked for blocked, _ in verdicts.values()), verdicts
    assert "~/.claude/settings.json" in verdicts["cli-settings-env-prefix"][1]  # HOME took it, unread
    assert "refused 403" in verdicts["unprefixed-relay-key"][1]


@pytest.mark.parametrize(
    ("cell", "without", "escaped"),
    [
        (SETTINGS_CELL, ("harness_settings_only",), {"cli-settings-env-prefix", "cli-settings-helpers"}),
        (
            UNPREFIXED_CELL,
            ("exec_only_cli", "seccomp_process_access", "relay_peer_pin"),
            {"unprefixed-cli-environ-mem", "unprefixed-cli-ptrace", "unprefixed-relay-key"},
        ),
        # The seccomp rules alone still stop ptrace and process_vm_readv; the binary alone, environ.
        (UNPREFIXED_CELL, ("exec_only_cli",), {"unprefixed-cli-environ-mem"}),
    ],
    ids=["settings", "binary+seccomp+peer-pin", "binary-only"],
)
def test_each_defence_removed_lets_its_attack_through(claude_bin, bwrap_bin, cell, without, escaped):
    verdicts = _verdicts(claude_bin, bwrap_bin, (cell,), without)
    assert {name for name, (blocked, _) in verdicts.items() if not blocked} == escaped, verdicts
