"""Argparse value types with bounds, and ``Flag``: a command-line flag declared once, added anywhere.

Owns the types every numeric flag of every command parses with (``bounded_int``,
``positive_float``, ``bounded_seconds``): a typo (``--runs 10000000``) is exit 2 at parse time,
never a plan of ten million cells. ``Flag`` is one flag's names and argparse options; a command
adds it with ``Flag.add`` and may change only how it is presented there (default, help,
required), never its type or bounds, so the runner and the evolve driver cannot drift apart.

Lowest layer: imports nothing of the package. Callers: ``runner_args`` (the runner's flags),
``promotion.flags`` (the gate's), ``evolve.args`` (the evolve driver's, reusing the runner's).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# What a command may change when it adds a shared flag: how the flag reads, never what it accepts.
PRESENTATION = frozenset({"default", "help", "required", "metavar"})


def bounded_int(low: int, high: int, unit: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high]."""
    suffix = f" {unit}" if unit else ""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not a whole number{' of' + suffix if unit else ''}"
            ) from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}{suffix}, got {number}")
        return number

    parse.__name__ = "whole number"
    return parse


def positive_int(value: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def positive_float(value: str) -> float:
    """An argparse type: a finite number above 0."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number")
    return number


def bounded_seconds(maximum: float) -> Callable[[str], float]:
    """An argparse type: a number of seconds in (0, maximum]."""

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
        if not 0 < number <= maximum:
            raise argparse.ArgumentTypeError(f"must be in (0, {maximum}] seconds, got {value}")
        return number

    parse.__name__ = "seconds"
    return parse


@dataclass(frozen=True, slots=True)
class Flag:
    """One flag: its name and argparse options, declared once, added to any parser."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    @property
    def dest(self) -> str:
        """The attribute argparse stores it under (``--max-retries`` → ``max_retries``)."""
        return str(self.options.get("dest", self.name.lstrip("-").replace("-", "_")))

    def add(self, parser: argparse.ArgumentParser | argparse._ArgumentGroup, **presentation: Any) -> None:
        """Add the flag; ``presentation`` may change its default, help, required or metavar only."""
        changed = set(presentation) - PRESENTATION
        if changed:
            raise TypeError(
                f"{self.name}: only {sorted(PRESENTATION)} may differ per command, not {sorted(changed)}"
            )
        parser.add_argument(self.name, **{**self.options, **presentation})

    def argv(self, value: object) -> list[str]:
        """This flag and ``value`` as argv words: nothing for ``None`` or ``False``, the flag alone for
        ``True`` (a ``store_true`` flag), one word per item of a list or tuple."""
        if value is None or value is False:
            return []
        if value is True:
            return [self.name]
        if isinstance(value, list | tuple):
            return [self.name, *(str(v) for v in value)]
        return [self.name, str(value)]


# ── how a command names itself in its help ──────────────────────────────────────────────
# Every command is reached two ways: ``workflow-bench <subcommand>`` (the front door, ``cli``) and
# ``python -m workflow_bench.<module>``. A parser asks ``prog(...)`` for its name instead of spelling
# it, so its usage line names the form that was typed; the front door sets which one.
FRONT_DOOR = "workflow-bench"
_invoked_as: str | None = None


def invoked_as(subcommand: str | None) -> None:
    """Set by the front door (``workflow-bench <subcommand>``) before it calls a command's ``main``."""
    global _invoked_as
    _invoked_as = subcommand


def prog(module: str) -> str:
    """The usage name of the command the ``python -m workflow_bench.<module>`` form also runs."""
    if _invoked_as is not None:
        return f"{FRONT_DOOR} {_invoked_as}"
    return f"python -m workflow_bench.{module}"
