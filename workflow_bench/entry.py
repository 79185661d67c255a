"""How the running command is named in its own help: one spelling per entry point.

Every command can be reached two ways: ``workflow-bench <subcommand>`` (the front door,
``workflow_bench.cli``) and ``python -m workflow_bench.<module>`` (the form the design card and older
scripts name). A parser asks ``prog(...)`` for its name instead of spelling it, so its usage line
says how it was invoked; the front door sets which one before it hands argv on.
"""

from __future__ import annotations

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
