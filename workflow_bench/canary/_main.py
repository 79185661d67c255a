"""``python -m workflow_bench.canary``: preflight, then the escape suite; exit 0 only if all blocked.

Offline: the attacker is the scripted provider driving the real, pinned
Claude Code CLI inside the real bubblewrap sandbox the benchmark uses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workflow_bench import argtypes
from workflow_bench.claude_cli import ClaudeCliError, claude_version, locate_claude
from workflow_bench.sandbox import SandboxError, SandboxKind, preflight

from ._suite import ATTACKS, CANARY_TASKS, VerdictRow, render_table, run_suite
from .attacks_budgets import BUDGET_ATTACKS, run_budget_cells
from .attacks_confine import CONFINE_ATTACKS, run_confine_cells
from .attacks_fork import FORK_ATTACKS, run_fork_cell
from .attacks_graphs import GRAPH_ATTACKS, run_graph_suite
from .attacks_host_cost import HOST_COST_ATTACKS, run_host_cost_cell
from .attacks_judging import ATTACKS as JUDGING_ATTACKS
from .attacks_judging import BREAKER_ATTACK, run_judging_suite
from .attacks_limits import LIMIT_ATTACKS, run_limit_cells
from .attacks_relay import BREACH_ATTACKS, run_breach_cell
from .attacks_replay import REPLAY_ATTACKS, run_replay_cell
from .attacks_sealing import SEALING_ATTACKS, run_sealing_suite

EXIT_OK, EXIT_ESCAPED, EXIT_PREFLIGHT = 0, 1, 2


def declared_attacks() -> tuple[str, ...]:
    """Every attack the suites declare, by name, in the order the canary runs them: the table must
    hold exactly these, one verdict each."""
    suites: tuple[Sequence[Any], ...] = (ATTACKS, LIMIT_ATTACKS, HOST_COST_ATTACKS, BUDGET_ATTACKS)
    suites += (REPLAY_ATTACKS, BREACH_ATTACKS, FORK_ATTACKS, CONFINE_ATTACKS, JUDGING_ATTACKS)
    names = [a.name for suite in suites for a in suite] + [BREAKER_ATTACK]
    return (*names, *(a.name for suite in (SEALING_ATTACKS, GRAPH_ATTACKS) for a in suite))


@dataclass(frozen=True, slots=True)
class _Declared:
    name: str
    expected: str = "one verdict"


@dataclass(frozen=True, slots=True)
class _Unaccounted:
    attack: _Declared
    observed: str
    blocked: bool = False


def account_for_every_attack(verdicts: Sequence[VerdictRow]) -> list[VerdictRow]:
    """The verdicts, plus a NOT BLOCKED row for each declared attack that gave none or gave more
    than one, and for each verdict naming no declared attack: a suite that silently skipped an
    attack must not read as a clean run."""
    declared = declared_attacks()
    counts: dict[str, int] = {}
    for verdict in verdicts:
        counts[verdict.attack.name] = counts.get(verdict.attack.name, 0) + 1
    out: list[VerdictRow] = list(verdicts)
    for name in dict.fromkeys(declared):
        if (seen := counts.get(name, 0)) != 1:
            out.append(_Unaccounted(_Declared(name), f"{seen} verdicts (declared once)"))
    out += [
        _Unaccounted(_Declared(n), "a verdict for no declared attack") for n in counts if n not in declared
    ]
    return out


def run_canary(
    *, claude_bin_arg: str | None = None, bwrap_bin: str = "bwrap", progress=print
) -> tuple[int, str]:
    """Returns (exit code, printable table). Used by this command and by ``runner --canary``."""
    try:
        bwrap = preflight(SandboxKind.BWRAP, bwrap_bin=bwrap_bin)
        claude_bin = locate_claude(claude_bin_arg)
        version = claude_version(claude_bin)
    except (SandboxError, ClaudeCliError) as exc:
        return EXIT_PREFLIGHT, f"preflight failed: {exc}"
    cli = {"claude_bin": claude_bin, "claude_version": version, "bwrap_bin": bwrap, "progress": progress}
    verdicts: list[VerdictRow] = [*run_suite(**cli)]
    verdicts += run_limit_cells(**cli)  # attacks_limits.py: one cell per resource bound, own limits
    verdicts += run_host_cost_cell(**cli)  # attacks_host_cost.py: the harness's copies of a full bound
    verdicts += run_budget_cells(**cli)  # attacks_budgets.py: per-user kernel budgets, host and 2nd cell
    verdicts += run_replay_cell(**cli)  # attacks_replay.py: a byte-identical replay of a CLI request
    verdicts += run_breach_cell(**cli)  # attacks_relay.py: a breached relay key, hidden turns, smuggling
    verdicts += run_fork_cell(**cli)  # attacks_fork.py: the CLI's bytes and key, its conversation forked
    verdicts += run_confine_cells(**cli)  # attacks_confine.py: the CLI's settings, an unprefixed tool
    verdicts += run_judging_suite(**cli, canary_tasks=CANARY_TASKS)  # attacks_judging.py
    verdicts += run_sealing_suite(**cli)  # attacks_sealing.py: forging the oracle's outcome
    verdicts += run_graph_suite(**cli)  # attacks_graphs.py: MCP servers, the index, tool grants
    verdicts = account_for_every_attack(verdicts)
    table = render_table(verdicts)
    return (EXIT_OK if all(v.blocked for v in verdicts) else EXIT_ESCAPED), table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=argtypes.prog("canary"), description=__doc__)
    parser.add_argument(
        "--claude-bin", help="Claude Code binary (default: the pinned version installed by ./dev)"
    )
    parser.add_argument("--verbose", action="store_true", help="print the attacker cell's live progress")
    args = parser.parse_args(argv)
    code, table = run_canary(
        claude_bin_arg=args.claude_bin, progress=print if args.verbose else (lambda _line: None)
    )
    print(table)
    return code


if __name__ == "__main__":
    sys.exit(main())
