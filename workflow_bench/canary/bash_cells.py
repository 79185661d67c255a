"""Canary cells made of Bash commands: how the judging and sealing suites run an attack.

Owns ``bash_cells_script`` (one scripted model turn per command, then "Done.") and
``run_bash_attack_cells`` (one real cell per attack, the real CLI in real bubblewrap through the
real scheduler, two at a time, behind a scripted provider of their own).
Callers: ``attacks_judging``, ``attacks_sealing``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from workflow_bench.arms import resolve_arm
from workflow_bench.cells.context import CellResult, TaskContext
from workflow_bench.cells.run import run_cell
from workflow_bench.providers.access import CellKey
from workflow_bench.providers.scripted import Script, ScriptedProvider, parse_script
from workflow_bench.schedule.pool import SchedulePolicy, SweepOutcome, run_cells
from workflow_bench.toolkit.spec import Toolkit

from ._suite import ARM, TURN_USAGE, canary_settings, scripted_canary_access


def bash_cells_script(cells: Sequence[tuple[str, Sequence[str]]], *, model: str, source: str) -> Script:
    """A script of one cell per (task id, Bash commands) on the canary arm: one command per turn,
    then "Done." (the judging and sealing suites: each attack is a cell of its own)."""
    doc = {
        "schema_version": 1,
        "model": model,
        "cells": [
            {
                "match": {"task": task, "arm": ARM},
                "sessions": [
                    {
                        "turns": [
                            *(
                                {
                                    "tool_calls": [{"name": "Bash", "input": {"command": c}}],
                                    "usage": TURN_USAGE,
                                }
                                for c in commands
                            ),
                            {"text": "Done.", "usage": TURN_USAGE},
                        ]
                    }
                ],
            }
            for task, commands in cells
        ],
    }
    return parse_script(doc, source=source)


class BashAttack(Protocol):
    """An attack that is one cell of Bash commands (the judging and sealing suites)."""

    @property
    def name(self) -> str: ...

    @property
    def commands(self) -> tuple[str, ...]: ...


BashAttackT = TypeVar("BashAttackT", bound=BashAttack)


def run_bash_attack_cells(
    attacks: Sequence[BashAttackT],
    *,
    prefix: str,
    task_of: Callable[[BashAttackT], TaskContext],
    model: str,
    verify_timeout_s: float,
    toolkit: Toolkit,
    work_root: Path,
    claude_bin: Path,
    claude_version: str,
    bwrap_bin: str,
    progress: Callable[[str], None],
) -> SweepOutcome[CellResult]:
    """One cell per attack (task id ``<prefix>-<name>``, its commands one per turn) through the real
    scheduler, two at a time, behind a scripted provider of their own."""
    script = bash_cells_script(
        [(f"{prefix}-{a.name}", a.commands) for a in attacks], model=model, source=f"<{prefix} canary>"
    )
    with ScriptedProvider(script) as provider:
        settings = canary_settings(
            access=scripted_canary_access(provider),
            toolkit=toolkit,
            work_root=work_root,
            claude_bin=claude_bin,
            claude_version=claude_version,
            bwrap_bin=bwrap_bin,
            progress=progress,
            session_timeout_s=300,
            verify_timeout_s=verify_timeout_s,
            model=model,
        )
        arm = resolve_arm(ARM)

        def execute(attack: BashAttackT) -> CellResult:
            key = CellKey(task_id=f"{prefix}-{attack.name}", run=0, arm=ARM)
            return run_cell(settings, task_of(attack), arm, key)

        return run_cells(
            attacks,
            execute=execute,
            persist=lambda _attack, _result: None,
            row_of=lambda result: result.row,
            policy=SchedulePolicy(workers=2),
            cancel=threading.Event(),
        )
