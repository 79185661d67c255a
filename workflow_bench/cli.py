"""``workflow-bench``: the one front door, a subcommand for every command the package has.

Each subcommand hands the rest of argv to the command's own ``main`` unchanged, so
``workflow-bench run …`` and ``python -m workflow_bench.runner …`` are one code path (the
``python -m`` forms keep working: the design card names ``python -m workflow_bench.runner``).
Commands are imported only when chosen: ``workflow-bench --help`` loads none of them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from workflow_bench import argtypes


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand: where its ``main(argv)`` lives, its ``python -m`` module, one line of help."""

    name: str
    target: str  # "package.module:function"
    module: str  # the X of ``python -m workflow_bench.X``
    summary: str

    def load(self) -> Callable[[Sequence[str] | None], int]:
        module_name, _, function = self.target.partition(":")
        main: Callable[[Sequence[str] | None], int] = getattr(importlib.import_module(module_name), function)
        return main


COMMANDS: Mapping[str, Command] = MappingProxyType(
    {
        c.name: c
        for c in (
            Command(
                "run", "workflow_bench.runner:main", "runner", "run a sweep: every (task, arm, run) cell"
            ),
            Command(
                "tasks",
                "workflow_bench.tasks.__main__:main",
                "tasks",
                "self-check, write and import tasks; agent scripts; test dependencies",
            ),
            Command(
                "report", "workflow_bench.report.cli:main", "report", "re-render a sweep directory's reports"
            ),
            Command(
                "view", "workflow_bench.view.server:main", "view", "serve a sweep's cell viewer on loopback"
            ),
            Command(
                "evolve",
                "workflow_bench.evolve.cli:main",
                "evolve",
                "propose, benchmark and gate a skill overlay",
            ),
            Command(
                "promotion",
                "workflow_bench.promotion.cli:main",
                "promotion",
                "verify a sweep's promotion decision, or apply it to a toolkit",
            ),
            Command(
                "regrade",
                "workflow_bench.regrade.cli:main",
                "regrade",
                "re-judge a sweep's saved patches (or a predictions file) in clean rooms, no session",
            ),
            Command(
                "canary", "workflow_bench.canary._main:main", "canary", "run the containment escape suite"
            ),
            Command(
                "clean",
                "workflow_bench.workspace.paths:main",
                "workspace.paths",
                "remove cell directories left by killed runners",
            ),
            Command(
                "rows", "workflow_bench.rows.docs:main", "rows", "print the generated row-schema documents"
            ),
        )
    }
)


CELL_COMMANDS = frozenset({"run", "evolve", "canary"})
"""Subcommands that run cells: as a program, a non-root one first enters its own mount namespace
(``sandbox.enter_private_mounts``), so its cells' clones are overlays."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=argtypes.FRONT_DOOR,
        description="Measure whether a Claude Code skill workflow beats a plain agent on repository tasks. "
        "Each subcommand is also `python -m workflow_bench.<module>`; `workflow-bench SUBCOMMAND --help` "
        "shows its flags.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for command in COMMANDS.values():
        sub.add_parser(
            command.name,
            help=f"{command.summary} (python -m workflow_bench.{command.module})",
            add_help=False,
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args or args[0] not in COMMANDS:
        parser.parse_args(args[:1] or [])  # prints help or "invalid choice", exits 0 or 2
        return 2
    command = COMMANDS[args[0]]
    if argv is None and command.name in CELL_COMMANDS:
        # A program (not an in-process call): cells mount their overlays in its own namespaces.
        from workflow_bench.sandbox import enter_private_mounts

        enter_private_mounts()
    argtypes.invoked_as(command.name)
    try:
        return command.load()(args[1:])
    finally:
        argtypes.invoked_as(None)


if __name__ == "__main__":
    raise SystemExit(main())
