"""Two scripted agents usable on any corpus and on every arm: the **oracle agent** and the **no-op agent**.

Each is a scripted-provider script generated from a task file, so the real Claude Code CLI runs
it in a real cell like any model; only the model's choices are scripted. Every arm gets the
sessions its recipe runs (``arms.ArmSpec``), and a session that expects a skill first invokes it
the way a model would: a ``Skill`` tool call for the skill that plays its role (the evaluated
toolkit's, or the comparator plugin's ``<plugin>:ce-*``), then the work. So the skill evidence
the cell checks from the relay's wire record (the model requested the skill and a later request
carried its successful result) holds on every arm, and a cell is judged on its work alone:

- the **oracle agent** writes a plan document in a plan session (``docs/plans/<task>.md``, the
  only change planning may make), and in the session that works (work, direct work, baseline)
  applies the task's ``reference_patch`` with one ``git apply`` Bash call from a here-document.
  The patch travels only inside the generated script (the model's reply): nothing is staged into
  normal cells, and a sweep without this script never sees a reference patch.
- the **no-op agent** plans the same way (a plan is not work) and changes nothing else.

A corpus is sound when the oracle agent resolves every implementation task on every arm and the
no-op agent none (``tests/e2e/test_task_check.py`` holds the demo corpus to it on the default arms).
Review tasks are skipped: there is no fix to apply to a review, and review arms are not scripted.

Callers: ``python -m workflow_bench.tasks agent-script``, tests.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from workflow_bench.arms import ARMS, ArmSpec, SessionSpec
from workflow_bench.taskspec.spec import TaskBinding, TaskSpec
from workflow_bench.toolkit.comparator import COMPARATOR_SKILLS
from workflow_bench.toolkit.spec import Toolkit
from workflow_bench.workspace.snapshot import PLAN_DIR

from .check import is_review_task, reference_patch_bytes

AGENTS = ("oracle", "noop")


class AgentScriptError(ValueError):
    """A task cannot be driven by the requested agent (e.g. no reference patch)."""


def scripted_arms(*, comparator: str | None) -> tuple[ArmSpec, ...]:
    """The implementation arms a script covers: every built-in one, the ``ce_*`` arms only when the
    comparator plugin's name is known (its skills are invoked as ``<plugin>:ce-*``)."""
    return tuple(
        arm
        for arm in ARMS.values()
        if arm.implementation and (arm.family != "comparator" or comparator is not None)
    )


def agent_script(
    bindings: Sequence[TaskBinding],
    *,
    agent: str,
    toolkit: Toolkit,
    comparator: str | None = None,
    model: str = "scripted-agent",
) -> dict[str, Any]:
    """The scripted-provider script (schema_version 1) that plays ``agent`` on every task and arm.

    ``comparator`` is the comparator plugin's name (from its ``plugin.json``), or None to leave the
    ``ce_*`` arms unscripted.
    """
    if agent not in AGENTS:
        raise AgentScriptError(f"unknown agent {agent!r}; known: {', '.join(AGENTS)}")
    cells = []
    for binding in bindings:
        if is_review_task(binding):
            continue
        spec = binding.spec
        work = _noop_work() if agent == "noop" else _oracle_work(spec, reference_patch_bytes(binding))
        for arm in scripted_arms(comparator=comparator):
            sessions = [
                _session(spec, session, work=work, skill=_skill(arm, session, toolkit, comparator))
                for session in arm.sessions
            ]
            cells.append({"match": {"task": spec.task_id, "arm": arm.name}, "sessions": sessions})
    return {"schema_version": 1, "model": model, "cells": cells}


def _skill(arm: ArmSpec, session: SessionSpec, toolkit: Toolkit, comparator: str | None) -> str | None:
    """The name a model would pass to the Skill tool for this session, or None (no skill expected)."""
    if session.skill_role is None:
        return None
    if arm.family == "comparator":
        return f"{comparator}:{COMPARATOR_SKILLS[session.skill_role]}"
    return toolkit.skill_for(session.skill_role)


def _session(
    spec: TaskSpec, session: SessionSpec, *, work: list[dict[str, Any]], skill: str | None
) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    if skill is not None:
        call = {"name": "Skill", "input": {"skill": skill}}
        turns.append({"text": f"I'll use the {skill} skill.", "tool_calls": [call]})
    turns += _plan_turns(spec) if session.phase == "plan" else work
    return {"turns": turns}


def _plan_turns(spec: TaskSpec) -> list[dict[str, Any]]:
    """One plan document, the only change a plan session may make."""
    plan = (
        f"# Plan: {spec.task_id}\n\n"
        "## Steps\n1. Apply the change the task asks for.\n2. Run the task's tests.\n"
    )
    write = {"file_path": f"{{cwd}}/{PLAN_DIR}/{spec.task_id}.md", "content": plan}
    return [
        {"text": "Writing the plan.", "tool_calls": [{"name": "Write", "input": write}]},
        {"text": f"Plan written to {PLAN_DIR}/{spec.task_id}.md."},
    ]


def _noop_work() -> list[dict[str, Any]]:
    return [{"text": "I will leave the repository exactly as it is."}]


def _oracle_work(spec: TaskSpec, patch: bytes | None) -> list[dict[str, Any]]:
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
