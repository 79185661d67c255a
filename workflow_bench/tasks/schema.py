"""The task-file schema: keys, error types, field checks, declaration parts and strict loading.
Over 400 lines on purpose: each task-file key's check sits beside the loader that names file/task/key.

Owns what a task file may say (reference harness §4.1): the keys, the value checks shared by the
spec constructors and the loader (``*_problems``), the declaration part ``DependencySpec`` (the
oracle's own parts live in ``oracles``), and ``parse_task_file``, which reads YAML (bounded, through
``input_files``) that rejects duplicate keys and reports **every** defect at once, each naming
the file, the task and the key.

Parsing may read oracle sources and run read-only ``git`` queries (through ``repos``); it never
clones, writes or runs anything else. It returns keyword arguments, not specs: ``tasks`` builds
``TaskSpec``. Callers: ``tasks.spec`` only, which re-exports the public names here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from workflow_bench.input_files import InputFileError, load_yaml, read_bounded

from .oracles import (
    MAX_ORACLE_COMMAND_BYTES,
    MAX_ORACLE_FILES,
    OracleCaptureError,
    OracleFileSpec,
    OracleSpec,
    command_problem,
    read_beneath,
    read_oracle_sources,
    relative_path_problem,
    target_problem,
    target_set_problem,
)
from .repos import repo_ref_problem

# Reference harness §4.1: slug used in rows, report and artifact file names.
TASK_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# A ref becomes a git argument: refusing a leading "-" keeps it from ever reading as an option.
_REF_PATTERN = re.compile(r"[^\s\x00-\x1f\x7f-][^\s\x00-\x1f\x7f]{0,254}")

TASK_KEYS = (
    "id",
    "class",
    "repo",
    "prompt",
    "verify",
    "verify_min_tests",
    "ref",
    "setup",
    "expensive",
    "sandbox_copy",
    "sandbox_dependencies",
    "oracle",
    "reference_patch",
    "base_expected",
)
# Size limits, checked when the file is read so a task that cannot run is refused before any
# clone. A task file is text; 1 MiB is ~60x the review corpus's file. verify and setup run as
# `/bin/sh -c <command>`: Linux caps ONE argv string at 32 pages (131072 bytes with its NUL;
# measured here through bwrap: 131071 runs, 131072 is E2BIG) and all of argv+env at ARG_MAX
# (`getconf ARG_MAX` = 2 MiB here); 64 KiB leaves room for the harness's own wrapping. The
# prompt reaches the CLI on stdin, which the CLI refuses above 10 MB; arms add a few KiB of
# framing and a real task prompt is a few KiB, so 256 KiB is generous and far inside (and below
# the file cap, so an oversized prompt is named as such). Every other string gets 4 KiB.
MAX_TASK_FILE_BYTES = 1024 * 1024
# A reference patch is a known-good diff for one task; the demo's largest is about 6 KiB.
MAX_REFERENCE_PATCH_BYTES = 1024 * 1024
MAX_TEXT_BYTES = 4 * 1024
TEXT_LIMITS_BYTES = {
    "prompt": 256 * 1024,
    "verify": 64 * 1024,
    "setup": 64 * 1024,
    "oracle.command": MAX_ORACLE_COMMAND_BYTES,
}

_REQUIRED_KEYS = ("id", "class", "repo", "prompt", "verify", "oracle")
_TOP_LEVEL = "<top level>"


# ── errors ─────────────────────────────────────────────────────────────────


class TaskSpecError(ValueError):
    """One defect in a task file: ``"<file>: task '<id>': <key>: <message>"``.

    ``task_id`` is ``None`` when the defect is above any task or the task has no valid id; the
    task is then named by ``index`` (``tasks[2]``) or as ``<top level>``.
    """

    def __init__(
        self, path: Path | str, task_id: str | None, key: str, message: str, index: int | None = None
    ) -> None:
        self.path = Path(path)
        self.task_id = task_id
        self.key = key
        self.message = message
        self.index = index
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.task_id is not None:
            where = f"task '{self.task_id}'"
        elif self.index is not None:
            where = f"tasks[{self.index}]"
        else:
            where = _TOP_LEVEL
        return f"{self.path}: {where}: {self.key}: {self.message}"

    def __reduce__(self):
        return (type(self), (self.path, self.task_id, self.key, self.message, self.index))


class TaskFileError(ValueError):
    """Every defect found in one or more task files; ``str()`` lists one per line."""

    def __init__(self, errors: Iterable[TaskSpecError]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

    def __reduce__(self):
        return (type(self), (self.errors,))


class Problem(NamedTuple):
    """One defect before it is tied to a file and task: the key and what is wrong with it."""

    key: str
    message: str


# ── value checks, shared by the constructors and the loader ───────────────


def text_problems(key: str, value: object, *, optional: bool = False) -> list[Problem]:
    if optional and value is None:
        return []
    if not isinstance(value, str):
        return [Problem(key, f"want a string, got {type(value).__name__}")]
    if not value.strip():
        return [Problem(key, "must not be blank")]
    if "\0" in value:
        return [Problem(key, "must not contain NUL")]
    limit = TEXT_LIMITS_BYTES.get(key, MAX_TEXT_BYTES)
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > limit:
        return [Problem(key, f"is {size} bytes; the limit is {limit}")]
    return []


def id_problems(value: object) -> list[Problem]:
    if not isinstance(value, str):
        return [Problem("id", f"want a string, got {type(value).__name__}")]
    if not TASK_ID_PATTERN.fullmatch(value):
        return [
            Problem(
                "id",
                f"{value!r} does not match {TASK_ID_PATTERN.pattern} "
                "(start with a letter or digit; then letters, digits, '.', '_', '-'; at most 128)",
            )
        ]
    return []


def ref_problems(value: object) -> list[Problem]:
    if not isinstance(value, str):
        return [Problem("ref", f"want a string, got {type(value).__name__}")]
    if not _REF_PATTERN.fullmatch(value):
        return [Problem("ref", f"{value!r} is not a usable git ref (blank, whitespace or leading '-')")]
    return []


def repo_path_problems(key: str, value: object) -> list[Problem]:
    if not isinstance(value, str):
        return [Problem(key, f"want a string, got {type(value).__name__}")]
    problem = relative_path_problem(value)
    return [Problem(key, problem)] if problem else []


def oracle_problems(command: object, files: Sequence[OracleFileSpec]) -> list[Problem]:
    problems = text_problems("oracle.command", command)
    if not problems and isinstance(command, str) and (problem := command_problem(command)):
        problems.append(Problem("oracle.command", problem))
    if not 1 <= len(files) <= MAX_ORACLE_FILES:
        problems.append(Problem("oracle.files", f"want 1 to {MAX_ORACLE_FILES} entries, got {len(files)}"))
    for i, item in enumerate(files):
        problems += text_problems(f"oracle.files[{i}].source", item.source)
        target_key = f"oracle.files[{i}].target"
        if not isinstance(item.target, str):
            problems.append(Problem(target_key, f"want a string, got {type(item.target).__name__}"))
        elif problem := target_problem(item.target):
            problems.append(Problem(target_key, problem))
    targets = [f.target for f in files if isinstance(f.target, str) and not target_problem(f.target)]
    if problem := target_set_problem(targets):
        problems.append(Problem("oracle.files", problem))
    return problems


# ── specs ──────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class DependencySpec:
    """A directory in the repository's working tree (``source``), mounted read-only at ``target``.

    Both are relative to the repository's top level; ``bind_tasks`` checks the source on disk.
    """

    source: str
    target: str

    def __post_init__(self) -> None:
        problems = repo_path_problems("source", self.source) + repo_path_problems("target", self.target)
        if problems:
            raise ValueError(f"sandbox dependency {problems[0].key}: {problems[0].message}")


MAX_MIN_TESTS = 100_000  # the judge runner counts at most this many distinct tests


def min_tests_problems(key: str, value: object) -> list[Problem]:
    """``min_tests``-style counts: an integer from 1 to ``MAX_MIN_TESTS`` (booleans refused)."""
    if type(value) is not int or not 1 <= value <= MAX_MIN_TESTS:
        return [Problem(key, f"want an integer from 1 to {MAX_MIN_TESTS}, got {value!r}")]
    return []


def resolve_repo_location(task_dir: Path, repo: str) -> Path:
    """``repo`` with ``~`` expanded, made absolute against the task file's directory."""
    return task_dir / Path(repo).expanduser()


# ── loading ────────────────────────────────────────────────────────────────


class _Collector:
    """Accumulates defects for one file; knows which task it is looking at."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[TaskSpecError] = []

    def add(self, key: str, message: str, *, task_id: str | None = None, index: int | None = None) -> None:
        self.errors.append(TaskSpecError(self.path, task_id, key, message, index))


def parse_task_file(path: Path) -> tuple[Path, tuple[dict[str, Any], ...], tuple[TaskSpecError, ...]]:
    """(the absolute file path, ``TaskSpec`` keyword arguments of each valid task, every defect).

    Checks the schema, the repository (a git top level or a ``*.bundle`` file), that the ref
    exists where that can be known without cloning, that every oracle source can be captured,
    and that ids are unique. The keyword arguments omit ``source_file`` (the returned path).
    """
    file_path = Path(os.path.abspath(Path(path).expanduser()))
    out = _Collector(file_path)
    raw = _read_yaml(file_path, out)
    entries: list[dict[str, Any]] = []
    if raw is not None:
        first_index: dict[str, int] = {}
        for index, item in enumerate(raw):
            fields = _task_fields(item, index, out)
            if fields is None:
                continue
            task_id = fields["task_id"]
            if task_id in first_index:
                out.add(
                    "id", f"duplicate id (first defined at tasks[{first_index[task_id]}])", task_id=task_id
                )
                continue
            first_index[task_id] = index
            entries.append(fields)
    return file_path, tuple(entries), tuple(out.errors)


def _read_yaml(path: Path, out: _Collector) -> list[Any] | None:
    try:
        text = read_bounded(path, max_bytes=MAX_TASK_FILE_BYTES).decode("utf-8")
    except FileNotFoundError:
        out.add("(file)", "no such file")
        return None
    except InputFileError as err:
        out.add("(file)", str(err))
        return None
    except UnicodeDecodeError as err:
        out.add("(file)", f"cannot read as UTF-8: {err}")
        return None
    try:
        data = load_yaml(text)
    except InputFileError as err:
        out.add("(yaml)", str(err))
        return None
    if not isinstance(data, Mapping):
        out.add("(document)", f"want a mapping with a 'tasks' list, got {type(data).__name__}")
        return None
    for key in data:
        if key != "tasks":
            out.add(str(key), "unknown top-level key; the only key is 'tasks'")
    if "tasks" not in data:
        out.add("tasks", "missing required key")
        return None
    tasks = data["tasks"]
    if not isinstance(tasks, list):
        out.add("tasks", f"want a list of task mappings, got {type(tasks).__name__}")
        return None
    if not tasks:
        out.add("tasks", "the task list is empty; a task file must declare at least one task")
        return None
    return tasks


def _task_fields(item: object, index: int, out: _Collector) -> dict[str, Any] | None:
    """One entry's ``TaskSpec`` keyword arguments, or ``None`` after adding its defects to ``out``."""
    if not isinstance(item, Mapping):
        out.add("(task)", f"want a mapping, got {type(item).__name__}", index=index)
        return None
    task_id = item.get("id") if not id_problems(item.get("id")) else None
    problems: list[Problem] = []
    for key in item:
        if key not in TASK_KEYS:
            problems.append(Problem(str(key), f"unknown key; known keys: {', '.join(TASK_KEYS)}"))
    for key in _REQUIRED_KEYS:
        if key not in item:
            problems.append(Problem(key, "missing required key"))
    if "id" in item:
        problems += id_problems(item["id"])
    for key in ("class", "repo", "prompt", "verify"):
        if key in item:
            problems += text_problems(key, item[key])
    if "ref" in item:
        problems += ref_problems(item["ref"])
    if "setup" in item:
        problems += text_problems("setup", item["setup"])
    if "verify_min_tests" in item:
        problems += min_tests_problems("verify_min_tests", item["verify_min_tests"])
    if "expensive" in item and type(item["expensive"]) is not bool:
        problems.append(Problem("expensive", f"want true or false, got {item['expensive']!r}"))
    copies = _string_list(item.get("sandbox_copy", []), "sandbox_copy", problems)
    for i, entry in enumerate(copies):
        problems += repo_path_problems(f"sandbox_copy[{i}]", entry)
    dependencies = _pairs(item.get("sandbox_dependencies", []), "sandbox_dependencies", problems)
    for i, (source, target) in enumerate(dependencies):
        problems += repo_path_problems(f"sandbox_dependencies[{i}].source", source)
        problems += repo_path_problems(f"sandbox_dependencies[{i}].target", target)
    oracle, oracle_files = _oracle_declaration(item["oracle"], problems) if "oracle" in item else (None, ())
    reference = item.get("reference_patch")
    if reference is not None:
        problems += text_problems("reference_patch", reference) or _reference_problems(
            out.path.parent, reference
        )
    base_verify_passes = _base_expected(item.get("base_expected", {}), problems)
    # The outside-world checks run for every part whose declaration is valid, so one pass
    # reports a bad ref next to, say, a bad `expensive`.
    bad_keys = {p.key for p in problems}
    repo = item["repo"] if "repo" in item and "repo" not in bad_keys else None
    ref = item.get("ref", "HEAD") if "ref" not in bad_keys else None
    problems += _io_problems(out.path.parent, repo=repo, ref=ref, oracle_files=oracle_files)
    if problems:
        for problem in problems:
            out.add(problem.key, problem.message, task_id=task_id, index=index)
        return None
    return dict(
        task_id=item["id"],
        task_class=item["class"],
        repo=item["repo"],
        prompt=item["prompt"],
        verify=item["verify"],
        verify_min_tests=item.get("verify_min_tests"),
        oracle=oracle,
        ref=item.get("ref", "HEAD"),
        setup=item.get("setup"),
        expensive=item.get("expensive", False),
        sandbox_copy=tuple(copies),
        sandbox_dependencies=tuple(DependencySpec(s, t) for s, t in dependencies),
        reference_patch=reference,
        base_verify_passes=base_verify_passes,
    )


def _reference_problems(task_dir: Path, source: str) -> list[Problem]:
    """The reference patch must be readable like an oracle source: beneath the file's dir, no links."""
    try:
        read_beneath(task_dir, source, max_bytes=MAX_REFERENCE_PATCH_BYTES)
    except ValueError as err:
        return [Problem("reference_patch", str(err))]
    return []


def _base_expected(value: object, problems: list[Problem]) -> bool:
    """``base_expected: {verify: pass|fail}`` → whether verify is expected to pass on the base."""
    if not isinstance(value, Mapping) or any(k != "verify" for k in value):
        problems.append(Problem("base_expected", "want a mapping with only 'verify: pass' or 'verify: fail'"))
        return False
    verdict = value.get("verify", "fail")
    if verdict not in ("pass", "fail"):
        problems.append(Problem("base_expected.verify", f"want 'pass' or 'fail', got {verdict!r}"))
        return False
    return verdict == "pass"


def _string_list(value: object, key: str, problems: list[Problem]) -> list[str]:
    if not isinstance(value, list):
        problems.append(Problem(key, f"want a list of paths, got {type(value).__name__}"))
        return []
    good = []
    for i, entry in enumerate(value):
        entry_problems = text_problems(f"{key}[{i}]", entry)
        problems += entry_problems
        if not entry_problems:
            good.append(entry)
    return good


def _pairs(value: object, key: str, problems: list[Problem]) -> list[tuple[str, str]]:
    """A list of exactly-``{source, target}`` mappings, as (source, target) string pairs."""
    if not isinstance(value, list):
        problems.append(
            Problem(key, f"want a list of {{source, target}} mappings, got {type(value).__name__}")
        )
        return []
    pairs = []
    for i, entry in enumerate(value):
        entry_key = f"{key}[{i}]"
        if not isinstance(entry, Mapping):
            problems.append(
                Problem(entry_key, f"want a {{source, target}} mapping, got {type(entry).__name__}")
            )
            continue
        if detail := _exact_keys_detail(entry, ("source", "target")):
            problems.append(Problem(entry_key, f"want exactly {{source, target}}: {detail}"))
            continue
        entry_problems = text_problems(f"{entry_key}.source", entry["source"])
        entry_problems += text_problems(f"{entry_key}.target", entry["target"])
        problems += entry_problems
        if not entry_problems:
            pairs.append((entry["source"], entry["target"]))
    return pairs


def _exact_keys_detail(mapping: Mapping[Any, Any], keys: tuple[str, ...]) -> str:
    """The unknown and missing keys of ``mapping`` against exactly ``keys``; empty if it matches."""
    extra = sorted(str(k) for k in mapping if k not in keys)
    missing = [k for k in keys if k not in mapping]
    return ", ".join([*(f"unknown key {k!r}" for k in extra), *(f"missing {k!r}" for k in missing)])


def _oracle_declaration(
    value: object, problems: list[Problem]
) -> tuple[OracleSpec | None, tuple[OracleFileSpec, ...]]:
    """(the spec if it is fully valid, the file entries whose shape is valid: their sources can be read)."""
    if not isinstance(value, Mapping):
        kind = type(value).__name__
        problems.append(Problem("oracle", f"want a mapping of {{command, files, min_tests?}}, got {kind}"))
        return None, ()
    keys = ("command", "files", "min_tests") if "min_tests" in value else ("command", "files")
    if detail := _exact_keys_detail(value, keys):
        problems.append(Problem("oracle", f"want {{command, files}} and optional min_tests: {detail}"))
        return None, ()
    min_tests = value.get("min_tests")
    if min_tests is not None and (count_problems := min_tests_problems("oracle.min_tests", min_tests)):
        problems += count_problems
        return None, ()
    shape: list[Problem] = []
    files = tuple(
        OracleFileSpec(source, target) for source, target in _pairs(value["files"], "oracle.files", shape)
    )
    if shape:
        problems += shape + text_problems("oracle.command", value["command"])
        return None, files
    values = oracle_problems(value["command"], files)
    problems += values
    spec = OracleSpec(command=value["command"], files=files, min_tests=min_tests)
    return (None if values else spec), files


def _io_problems(
    task_dir: Path, *, repo: str | None, ref: str | None, oracle_files: Sequence[OracleFileSpec]
) -> list[Problem]:
    """The checks that look outside the file, for the parts given (``None`` = already invalid):
    the repository, the ref where it is knowable without cloning, and the oracle sources."""
    problems: list[Problem] = []
    if (
        repo is not None
        and (found := repo_ref_problem(resolve_repo_location(task_dir, repo), ref)) is not None
    ):
        problems.append(Problem(*found))
    if oracle_files:
        try:
            read_oracle_sources(oracle_files, task_file_dir=task_dir)
        except OracleCaptureError as err:
            problems += [Problem(f"oracle.{key}", message) for key, message in err.problems]
    return problems
