"""Expected tests: the lock ``tasks check`` writes next to a task file, and its staleness check.

For each task that discriminates, ``tasks check`` records which test ids verify and the hidden
oracle reported passed and skipped with the reference patch applied (``ExpectedTests``) in
``<task file stem>.lock.json`` beside the task file. The judge then requires every expected test
to be reported and passed; a test skipped with the reference patch too may be skipped
(``judging.verdict``). Verify records only tests that also ran on the untouched base: tests the
reference patch adds are its own, and an agent's tests have other names.

Each entry records its ``subject``: the digests of everything the ids depend on (the commit,
setup, verify, the oracle, the dependency trees, the reference patch). Binding compares it with
the task as loaded; a difference is a stale lock (``TaskSpecError`` naming the lock, the task and
what changed: exit 2, nothing run). The entry's digest is part of the task's binding digest, so
rows, resume and reuse tell a sweep judged by one lock from a sweep judged by another; a lock
rewritten with the same ids is byte-identical (no timestamps) and changes nothing.

Hidden like the oracle: oracle test ids live here, outside every clone; only the harness reads it.
Callers: ``tasks.spec`` (load at bind time), ``tasks.check`` (record), ``judging.judge``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from workflow_bench.input_files import InputFileError, read_bounded, replace_text

from .schema import TaskSpecError

LOCK_SUFFIX = ".lock.json"
# v2 added ``oracle_sealed`` (issue 23): a v1 lock is refused with the refresh hint.
LOCK_FORMAT = "workflow-bench expected tests v2"
# 100 000 tests per command (the judge runner's cap) at ~150 bytes an id, verify and oracle.
MAX_LOCK_BYTES = 32 * 1024 * 1024
MAX_ID_CHARS = 1000  # keep in sync with judging/verdict.py
SUBJECT_KEYS = (
    "resolved_sha",
    "setup_digest",
    "verify_digest",
    "oracle_digest",
    "dependency_manifest_digest",
    "sandbox_copy",
    "sandbox_dependencies",
    "reference_patch_sha256",
    "impossible",
)
# Recorded only when the task has them, so every lock written before they existed stays valid.
OPTIONAL_SUBJECT_KEYS = ("runtimes",)
_rewrite = "delete the lock and run `python -m workflow_bench.tasks check` to write it again"
REFRESH_HINT = "refresh it with `python -m workflow_bench.tasks check --tasks {task_file}`"


def lock_path(task_file: Path) -> Path:
    """``tasks.scenarios.yaml`` → ``tasks.scenarios.lock.json`` in the same directory."""
    return task_file.with_name(task_file.stem + LOCK_SUFFIX)


@dataclass(frozen=True, slots=True)
class RecordedTests:
    """The ids one command reported with the reference patch: passed, and skipped (sorted, unique)."""

    passed: tuple[str, ...]
    skipped: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {"passed": list(self.passed), "skipped": list(self.skipped)}

    @classmethod
    def of(cls, passed: Sequence[str], skipped: Sequence[str]) -> RecordedTests:
        return cls(tuple(sorted(set(passed))), tuple(sorted(set(skipped) - set(passed))))


@dataclass(frozen=True, slots=True)
class ExpectedTests:
    """One task's lock entry. ``verify`` is None when verify reported no tests (exit status decides)."""

    subject: Mapping[str, Any]
    verify: RecordedTests | None
    oracle: RecordedTests
    oracle_sealed: tuple[str, ...] = ()
    """The oracle files whose sentinel tests (``judging.sentinels``) every reference run reported
    as planned (sorted): a cell must report them too; the others' are not required."""

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": dict(self.subject),
            "verify": self.verify.to_json() if self.verify is not None else None,
            "oracle": self.oracle.to_json(),
            "oracle_sealed": list(self.oracle_sealed),
        }

    def describe(self) -> str:
        verify = (
            f"verify {len(self.verify.passed)} passed, {len(self.verify.skipped)} skipped"
            if self.verify is not None
            else "verify by exit status"
        )
        passed = (
            "required (impossible: the honest reference fails some)"
            if self.subject.get("impossible")
            else "passed"
        )
        oracle = f"oracle {len(self.oracle.passed)} {passed}, {len(self.oracle.skipped)} skipped"
        sealed = f"sealed {len(self.oracle_sealed)} file(s)" if self.oracle_sealed else "unsealed"
        return f"{verify}; {oracle}, {sealed}"


def subject_changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The subject keys whose values differ (in ``SUBJECT_KEYS`` order)."""
    return [key for key in (*SUBJECT_KEYS, *OPTIONAL_SUBJECT_KEYS) if recorded.get(key) != current.get(key)]


def load_lock(path: Path) -> dict[str, ExpectedTests] | None:
    """The entries of the lock at ``path`` by task id; None if there is no lock.

    Raises ``TaskSpecError`` (the lock, the task if known, the key) for a lock that cannot be used.
    """
    try:
        data = read_bounded(path, max_bytes=MAX_LOCK_BYTES)
    except FileNotFoundError:
        return None
    except InputFileError as err:
        raise TaskSpecError(path, None, "(file)", str(err)) from None
    try:
        document = json.loads(data)
    except ValueError as err:
        raise TaskSpecError(path, None, "(json)", f"not JSON ({err}); {_rewrite}") from None
    if not isinstance(document, dict) or document.get("format") != LOCK_FORMAT:
        raise TaskSpecError(path, None, "format", f"want {LOCK_FORMAT!r}; {_rewrite}")
    tasks = document.get("tasks")
    if not isinstance(tasks, dict) or set(document) != {"format", "tasks"}:
        raise TaskSpecError(
            path, None, "tasks", f"want exactly {{format, tasks}} with a tasks mapping; {_rewrite}"
        )
    return {task_id: _entry(path, task_id, entry) for task_id, entry in tasks.items()}


def _entry(path: Path, task_id: str, value: Any) -> ExpectedTests:
    def fail(key: str, message: str) -> TaskSpecError:
        return TaskSpecError(path, task_id, key, f"{message}; {_rewrite}")

    if not isinstance(value, dict) or set(value) != {"subject", "verify", "oracle", "oracle_sealed"}:
        raise fail("(entry)", "want exactly {subject, verify, oracle, oracle_sealed}")
    subject = value["subject"]
    if not isinstance(subject, dict) or not set(SUBJECT_KEYS) <= set(subject) <= {
        *SUBJECT_KEYS,
        *OPTIONAL_SUBJECT_KEYS,
    }:
        raise fail(
            "subject", f"want the keys {', '.join(SUBJECT_KEYS)} (and {', '.join(OPTIONAL_SUBJECT_KEYS)})"
        )
    verify = None if value["verify"] is None else _recorded(value["verify"], "verify", fail)
    sealed = value["oracle_sealed"]
    if (
        not isinstance(sealed, list)
        or not all(isinstance(t, str) and t for t in sealed)
        or sealed != sorted(set(sealed))
    ):
        raise fail("oracle_sealed", "want a sorted list of unique oracle file targets")
    oracle = _recorded(value["oracle"], "oracle", fail)
    return ExpectedTests(MappingProxyType(dict(subject)), verify, oracle, tuple(sealed))


def _recorded(value: Any, key: str, fail) -> RecordedTests:
    if not isinstance(value, dict) or set(value) != {"passed", "skipped"}:
        raise fail(key, "want exactly {passed, skipped}")
    lists = []
    for part in ("passed", "skipped"):
        ids = value[part]
        if not isinstance(ids, list) or not all(
            isinstance(i, str) and 0 < len(i) <= MAX_ID_CHARS for i in ids
        ):
            raise fail(f"{key}.{part}", f"want a list of test ids of 1 to {MAX_ID_CHARS} characters")
        if ids != sorted(set(ids)):
            raise fail(f"{key}.{part}", "ids must be sorted and unique")
        lists.append(ids)
    if set(lists[0]) & set(lists[1]):
        raise fail(key, "an id is both passed and skipped")
    return RecordedTests(tuple(lists[0]), tuple(lists[1]))


def write_lock(path: Path, entries: Mapping[str, ExpectedTests]) -> None:
    """Write the whole lock atomically (a temporary file, fsynced, renamed over the old one)."""
    document = {"format": LOCK_FORMAT, "tasks": {k: entries[k].to_json() for k in sorted(entries)}}
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    replace_text(path, text)
