"""Task drafts: entries ``tasks new`` and ``tasks import`` built, staged for the self-check, then
committed beside an existing corpus all at once or not at all.

Owns ``TaskDraft`` (a task-file entry plus the files it names: oracle files and the reference
patch, paths relative to the task file's directory), ``stage`` (a private task file holding the
drafts, in a fresh directory beside the destination, so the self-check judges exactly what will
be written and writes its lock there; named for this process, so a run killed before it could
remove it leaves a directory the next ``stage`` beside it removes once that process is gone, as
stale work roots are: ``workspace.paths.stale_owned_dirs``) and ``commit`` (the drafts' files
created exclusively, the entries appended to the task file, their lock entries merged into its
lock; the task file and the lock are each replaced atomically, and a failure at any step removes
what this call wrote and restores the task file, so nothing is ever half-written).

Appending keeps the task file's comments and layout: the new entries are dumped as YAML and
appended to its ``tasks`` list at the list's own indentation, and the result must parse as the
old tasks plus the new ones, else nothing is written.

Callers: ``tasks.new``, ``tasks.importers``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from workflow_bench.input_files import InputFileError, load_yaml, read_bounded, replace_text
from workflow_bench.taskspec.expected_tests import ExpectedTests, load_lock, lock_path, write_lock
from workflow_bench.taskspec.schema import MAX_TASK_FILE_BYTES, TASK_ID_PATTERN, TaskSpecError
from workflow_bench.workspace.paths import collect_stale_owned_dirs, make_owned_dir
from workflow_bench.workspace.remove import remove_tree

STAGING_PREFIX = ".wfbench-staging-"


class DraftError(ValueError):
    """A draft cannot be written where it was asked to go; the message names the file and why."""


@dataclass(frozen=True, slots=True)
class TaskDraft:
    """One task ready to be written: its entry (``repo`` filled in per destination) and its files."""

    task_id: str
    repo: Path
    """The task repository (absolute); the entry names it relative to the task file's directory."""
    entry: Mapping[str, Any]
    """The task-file mapping without ``repo``: every other path in it is relative to the task file."""
    files: tuple[tuple[str, bytes], ...]
    """(path relative to the task file's directory, bytes): oracle sources, the reference patch."""

    def entry_for(self, task_dir: Path) -> dict[str, Any]:
        """The entry as written into a task file in ``task_dir`` (``repo`` relative to it)."""
        relative = os.path.relpath(self.repo, task_dir)
        entry = dict(self.entry)
        return {"id": entry.pop("id"), "class": entry.pop("class"), "repo": relative, **entry}


def existing_ids(tasks_file: Path) -> list[str]:
    """The ids declared in ``tasks_file`` (empty if it does not exist); ``DraftError`` if unreadable."""
    tasks = _read_tasks(tasks_file)[1]
    return [str(t.get("id")) for t in tasks if isinstance(t, Mapping)]


def preflight(drafts: Sequence[TaskDraft], tasks_file: Path) -> None:
    """Refuse before any work if a draft's id or file is already taken (``DraftError``)."""
    taken = set(existing_ids(tasks_file))
    task_dir = tasks_file.parent
    seen: set[str] = set()
    for draft in drafts:
        if not TASK_ID_PATTERN.fullmatch(draft.task_id):
            raise DraftError(f"task id {draft.task_id!r} does not match {TASK_ID_PATTERN.pattern}")
        if draft.task_id in taken or draft.task_id in seen:
            raise DraftError(f"{tasks_file}: a task {draft.task_id!r} exists already; choose another --id")
        seen.add(draft.task_id)
        for relative, _ in draft.files:
            if (task_dir / relative).exists() or (task_dir / relative).is_symlink():
                raise DraftError(f"{task_dir / relative} exists already; choose another --id or remove it")


def collect_stale_staging(beside: Path) -> tuple[list[Path], list[str]]:
    """Remove the staging directories in ``beside`` whose owner process is gone (a run killed
    mid-self-check); (removed, one message per directory that could not be removed)."""
    return collect_stale_owned_dirs(beside, STAGING_PREFIX)


@contextlib.contextmanager
def stage(
    drafts: Sequence[TaskDraft], beside: Path, *, progress: Callable[[str], None] = print
) -> Iterator[Path]:
    """A task file holding ``drafts`` in a fresh directory inside ``beside``, removed afterwards.

    First removes the staging directories of dead runs beside it (``collect_stale_staging``),
    saying so through ``progress``."""
    beside.mkdir(parents=True, exist_ok=True)
    removed, failed = collect_stale_staging(beside)
    for path in removed:
        progress(f"removed {path.name}, a staging directory left by a run that is gone")
    for message in failed:
        progress(f"could not remove a stale staging directory: {message}")
    root = make_owned_dir(STAGING_PREFIX, beside)
    try:
        for draft in drafts:
            for relative, data in draft.files:
                path = root / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        tasks = [d.entry_for(root) for d in drafts]
        path = root / "tasks.yaml"
        path.write_text(dump_tasks(tasks), encoding="utf-8")
        yield path
    finally:
        with contextlib.suppress(OSError):
            remove_tree(root)


class _Dumper(yaml.SafeDumper):
    """Block style; multi-line strings (prompts, commands) as literal blocks."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not re.search(r"[ \t]\n|\r", value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def dump_tasks(tasks: Sequence[Mapping[str, Any]]) -> str:
    return yaml.dump({"tasks": list(tasks)}, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)


def _read_tasks(tasks_file: Path) -> tuple[str, list[Any]]:
    """(the file's text, its tasks list); ("", []) for a file that does not exist."""
    try:
        text = read_bounded(tasks_file, max_bytes=MAX_TASK_FILE_BYTES).decode("utf-8")
    except FileNotFoundError:
        return "", []
    except (InputFileError, OSError, UnicodeDecodeError) as err:
        raise DraftError(f"{tasks_file}: {err}") from None
    try:
        data = load_yaml(text)
    except InputFileError as err:
        raise DraftError(f"{tasks_file}: {err}") from None
    if not isinstance(data, Mapping) or set(data) != {"tasks"} or not isinstance(data["tasks"], list):
        raise DraftError(f"{tasks_file}: want a mapping with one key, a 'tasks' list, to append to")
    return text, list(data["tasks"])


def appended_text(tasks_file: Path, entries: Sequence[Mapping[str, Any]]) -> str:
    """The task file's text with ``entries`` appended to its list, comments and layout kept."""
    old, tasks = _read_tasks(tasks_file)
    block = dump_tasks(entries).split("\n", 1)[1]  # drop the "tasks:" line
    if not old:
        text = "tasks:\n" + block
    else:
        found = re.search(r"^tasks:[ \t]*(#.*)?\n(?:[ \t]*(?:#.*)?\n)*([ \t]*)- ", old, re.MULTILINE)
        indent = found.group(2) if found else ""
        lines = [indent + line if line else line for line in block.split("\n")]
        text = old + ("" if old.endswith("\n") else "\n") + "\n".join(lines)
    reparsed = load_yaml(text)
    if not isinstance(reparsed, Mapping) or reparsed.get("tasks") != [*tasks, *[dict(e) for e in entries]]:
        raise DraftError(
            f"{tasks_file}: the new task(s) cannot be appended to this file's layout (a flow-style "
            "list?); write them to a new task file with --tasks"
        )
    return text


def commit(drafts: Sequence[TaskDraft], tasks_file: Path, locks: Mapping[str, ExpectedTests]) -> None:
    """Write every draft's files, append the entries, merge the lock entries; all or nothing."""
    preflight(drafts, tasks_file)
    task_dir = tasks_file.parent
    text = appended_text(tasks_file, [d.entry_for(task_dir) for d in drafts])
    old_text = _read_tasks(tasks_file)[0] if tasks_file.exists() else None
    lock = lock_path(tasks_file)
    try:
        entries = dict(load_lock(lock) or {})
    except TaskSpecError as err:
        raise DraftError(f"{lock}: {err}; fix or remove it first") from None
    entries.update(locks)
    written: list[Path] = []
    try:
        for draft in drafts:
            for relative, data in draft.files:
                path = task_dir / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "xb") as handle:
                    written.append(path)
                    handle.write(data)
        replace_text(tasks_file, text)
        write_lock(lock, entries)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
            _remove_empty_parents(path.parent, stop=task_dir)
        if old_text is None:
            tasks_file.unlink(missing_ok=True)
        elif tasks_file.exists():
            replace_text(tasks_file, old_text)
        raise


def _remove_empty_parents(directory: Path, *, stop: Path) -> None:
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()
        except OSError:  # not empty: someone else's files live here
            return
        directory = directory.parent
