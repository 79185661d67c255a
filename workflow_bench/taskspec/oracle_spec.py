"""What a task may declare about its hidden oracle: the declaration parts and the path rules.

Owns the task file's ``oracle`` key, declared once as models (``OracleSpec``: command, files,
``min_tests``; ``OracleFileSpec``: source, target), the count type ``MinTests`` shared with
``verify_min_tests``, and the pure rules the declaration and the snapshot share: which relative
paths are safe (``relative_path_problem``, also for the repository paths of a task file), which
oracle targets can be staged (``target_problem``, ``target_set_problem``) and which commands run
(``command_problem``). No I/O: reading and capturing the declared files is ``oracles``.
Callers: ``taskspec.oracles``, ``taskspec.schema``, ``taskspec.spec``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

from workflow_bench.input_files import InputModel, Text, text_check

# Limits from the reference harness's oracle declaration rules (§4.1): an oracle is a handful of
# test files, so anything past these is a mistake or an attempt to smuggle data into the sandbox.
MAX_ORACLE_FILES = 8
MAX_ORACLE_COMMAND_BYTES = 8 * 1024
# 240 bytes leaves room under the 255-byte NAME_MAX of common filesystems for the staging
# directory's own prefix when a target is a single file name.
MAX_TARGET_BYTES = 240
# POSIX portable filename characters plus "/": a target must mean the same file on every
# filesystem and in every shell quoting context the oracle command may use.
_PORTABLE_PATH = re.compile(r"[A-Za-z0-9._/-]+")


def relative_path_problem(path: str) -> str | None:
    """Why ``path`` is not a safe path relative to some root, or ``None`` if it is.

    Shared rule for oracle targets and the repository-relative paths in task files: not empty,
    not absolute, no NUL or backslash, no empty, ``.`` or ``..`` component, and nothing at or
    under a ``.git`` component (which would let a task reach into repository metadata).
    """
    if not path:
        return "must not be empty"
    if "\0" in path:
        return "must not contain NUL"
    if "\\" in path:
        return "must use '/' separators, not '\\'"
    if path.startswith("/"):
        return f"must be relative, got absolute path {path!r}"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return f"must be a normalized path without empty, '.' or '..' components, got {path!r}"
    if any(part.casefold() == ".git" for part in parts):
        return f"must not name .git or anything under it, got {path!r}"
    return None


def target_problem(target: str) -> str | None:
    """Why ``target`` is not a valid oracle target path, or ``None`` if it is."""
    problem = relative_path_problem(target)
    if problem is not None:
        return problem
    if len(target.encode()) > MAX_TARGET_BYTES:
        return f"must be at most {MAX_TARGET_BYTES} bytes, got {len(target.encode())}"
    if not _PORTABLE_PATH.fullmatch(target):
        return f"must use only portable characters [A-Za-z0-9._/-], got {target!r}"
    return None


def command_problem(command: str) -> str | None:
    """Why ``command`` is not a valid oracle command, or ``None`` if it is."""
    if not command.strip():
        return "must not be blank"
    if "\0" in command:
        return "must not contain NUL"
    size = len(command.encode())
    if size > MAX_ORACLE_COMMAND_BYTES:
        return f"must be at most {MAX_ORACLE_COMMAND_BYTES} bytes, got {size}"
    return None


def target_set_problem(targets: Sequence[str]) -> str | None:
    """Why a list of targets cannot be staged together (duplicates, file-vs-directory clashes)."""
    seen: set[str] = set()
    for target in targets:
        if target in seen:
            return f"duplicate target {target!r}"
        seen.add(target)
    for target in targets:
        parents = PurePosixPath(target).parents
        clash = next((str(p) for p in parents if str(p) in seen), None)
        if clash is not None:
            return f"target {clash!r} is a file but {target!r} needs it to be a directory"
    return None


# ── capture ────────────────────────────────────────────────────────────────


MAX_MIN_TESTS = 100_000  # the judge runner counts at most this many distinct tests


def _min_tests(value: object) -> int:
    if type(value) is not int or not 1 <= value <= MAX_MIN_TESTS:
        raise ValueError(f"want an integer from 1 to {MAX_MIN_TESTS}, got {value!r}")
    return value


MinTests = Annotated[int, BeforeValidator(_min_tests)]
"""A ``min_tests``-style count: an integer from 1 to ``MAX_MIN_TESTS`` (booleans refused)."""


def _target(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"want a string, got {type(value).__name__}")
    if problem := target_problem(value):
        raise ValueError(problem)
    return value


class OracleFileSpec(InputModel):
    """One declared oracle file: ``source`` relative to the task file's directory, staged at ``target``."""

    source: Text = Field(description="the file, relative to the task file's directory (no symlinks)")
    target: Annotated[str, BeforeValidator(_target)] = Field(
        description="where it is staged under WORKFLOW_BENCH_ORACLE_ROOT (portable, relative)"
    )


def _files(files: tuple[OracleFileSpec, ...]) -> tuple[OracleFileSpec, ...]:
    if not 1 <= len(files) <= MAX_ORACLE_FILES:
        raise ValueError(f"want 1 to {MAX_ORACLE_FILES} entries, got {len(files)}")
    if problem := target_set_problem([f.target for f in files]):
        raise ValueError(problem)
    return files


class OracleSpec(InputModel):
    """The hidden oracle as declared (the task file's ``oracle``): a shell command, 1–8 files and,
    optionally, the fewest tests that must run and pass (``judging.verdict``)."""

    command: Annotated[str, BeforeValidator(text_check(MAX_ORACLE_COMMAND_BYTES))] = Field(
        description="run as /bin/sh -c in the repository after the model exits"
    )
    files: Annotated[tuple[OracleFileSpec, ...], Field(strict=False), AfterValidator(_files)] = Field(
        description="the oracle's files, captured once at load time"
    )
    min_tests: MinTests | None = Field(
        None,
        description="the fewest tests the oracle must run and pass; None: not declared (then the "
        "expected-tests lock decides, else at least one test)",
    )
