"""The placeholder prompt ``tasks new`` writes for its author to replace, told apart from a prompt.

``tasks new`` fills its prompt template (``tasks/prompt-template.txt``), whose first words are
``PLACEHOLDER_MARK``: the draft is self-checked with it (the prompt does not change a judge),
but ``tasks check`` and the runner refuse a task that still carries it, so a sweep never sends an
agent the instructions meant for the task's author.

Pure. Callers: ``tasks.__main__`` (check), ``sweep.prepare``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .schema import TaskSpec

PLACEHOLDER_MARK = "TODO: describe the problem the way a user would report it"


def placeholder_problems(specs: Iterable[TaskSpec]) -> list[str]:
    """One line per task whose prompt is still ``tasks new``'s placeholder, naming its file, the
    task and the key as a task-file defect does."""
    return [
        f"{spec.source_file}: task {spec.task_id!r}: prompt: still the placeholder `tasks new` wrote "
        f"({PLACEHOLDER_MARK}…): replace it with the problem as a user would report it"
        for spec in specs
        if PLACEHOLDER_MARK in spec.prompt
    ]
