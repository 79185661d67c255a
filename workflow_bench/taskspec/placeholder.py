"""The placeholder prompt ``tasks new`` writes for its author to replace, told apart from a prompt.

``tasks new`` fills its prompt template (``tasks/prompt-template.txt``), whose first words are
``PLACEHOLDER_MARK``: the draft is self-checked with it (the prompt does not change a judge),
but ``tasks check`` and the runner refuse a task that still carries it, so a sweep never sends an
agent the instructions meant for the task's author.

Pure. Callers: ``tasks.__main__`` (check), ``sweep.prepare``.
"""

from __future__ import annotations

from collections.abc import Iterable

PLACEHOLDER_MARK = "TODO: describe the problem the way a user would report it"


def placeholder_problems(tasks: Iterable[tuple[str, str]]) -> list[str]:
    """One line per (task id, prompt) whose prompt is still ``tasks new``'s placeholder."""
    return [
        f"task {task_id!r}: its prompt is still the placeholder `tasks new` wrote ({PLACEHOLDER_MARK}…): "
        "replace it with the problem as a user would report it"
        for task_id, prompt in tasks
        if PLACEHOLDER_MARK in prompt
    ]
