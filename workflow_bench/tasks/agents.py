"""Two scripted agents usable on any corpus: the **oracle agent** and the **no-op agent**.

Each is a scripted-provider script generated from a task file, so the real Claude Code CLI runs
it in a real cell like any model; only the model's choices are scripted:

- the oracle agent answers each task's first request with one Bash tool call that applies the
  task's ``reference_patch`` with ``git apply`` from a here-document, then says it is done. The
  patch travels only inside the generated script (the model's reply): nothing is staged into
  normal cells, and a sweep without this script never sees a reference patch.
- the no-op agent answers every request with text and changes nothing.

A corpus is sound when the oracle agent resolves every implementation task and the no-op agent
none (``tests/e2e/test_task_check.py`` holds the demo corpus to it). Review tasks are skipped:
there is no fix to apply to a review.

Callers: ``python -m workflow_bench.tasks agent-script``, tests.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from workflow_bench.taskspec.spec import TaskBinding, TaskSpec

from .check import is_review_task, reference_patch_bytes

AGENTS = ("oracle", "noop")
ALL_ARMS = "*"


class AgentScriptError(ValueError):
    """A task cannot be driven by the requested agent (e.g. no reference patch)."""


def agent_script(
    bindings: Sequence[TaskBinding], *, agent: str, model: str = "scripted-agent"
) -> dict[str, Any]:
    """The scripted-provider script (schema_version 1) that plays ``agent`` on every task."""
    if agent not in AGENTS:
        raise AgentScriptError(f"unknown agent {agent!r}; known: {', '.join(AGENTS)}")
    cells = []
    for binding in bindings:
        if is_review_task(binding):
            continue
        spec = binding.spec
        if agent == "noop":
            turns = [{"text": "I will leave the repository exactly as it is."}]
        else:
            turns = _oracle_turns(spec, reference_patch_bytes(binding))
        # One session per arm recipe step: a multi-session arm replays the same answer; the
        # second `git apply` of an applied patch fails harmlessly and changes nothing.
        cells.append({"match": {"task": spec.task_id, "arm": ALL_ARMS}, "sessions": [{"turns": turns}] * 2})
    return {"schema_version": 1, "model": model, "cells": cells}


def _oracle_turns(spec: TaskSpec, patch: bytes | None) -> list[dict[str, Any]]:
    if patch is None:
        raise AgentScriptError(
            f"task {spec.task_id!r} has no reference_patch: the oracle agent cannot solve it"
        )
    text = patch.decode("utf-8")
    delimiter = f"WFBENCH_PATCH_{secrets.token_hex(8)}"
    if delimiter in text:  # cannot happen with 64 random bits, but a collision would truncate the patch
        raise AgentScriptError("here-document delimiter collision; try again")
    command = f"cd {{cwd}} && git apply --whitespace=nowarn <<'{delimiter}'\n{text}{delimiter}\n"
    return [
        {"text": "Applying the known fix.", "tool_calls": [{"name": "Bash", "input": {"command": command}}]},
        {"text": "Done: the fix is applied."},
    ]
