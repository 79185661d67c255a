"""The task file's schema: ``TaskSpec``, one declarative model whose fields are the file's keys.
Over 400 lines on purpose: each task-file key is declared beside the loader that names file/task/key.

Owns what a task file may say (reference harness §4.1). ``TaskSpec`` declares every key once
(its type, its rule and its meaning), built on the oracle's parts (``oracle_spec.OracleSpec``) and
``DependencySpec``; ``TASK_KEYS`` is read off it, so adding a task key is one field here.
``parse_task_file`` reads YAML through the bounded loader of ``input_files`` (duplicate keys and
alias bombs refused), validates each task once against the model, then runs the checks that look
outside the file (repository, ref, oracle sources, reference patch) in one separate pass, and
reports **every** defect at once, each naming the file, the task and the key.

Parsing may read oracle sources and run read-only ``git`` queries (through ``repos``); it never
clones, writes or runs anything else. Callers: ``taskspec.spec`` only, which re-exports the
public names here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, ValidationError

from workflow_bench.digests import canonical_digest
from workflow_bench.input_files import (
    InputFileError,
    InputModel,
    Text,
    load_yaml,
    problems,
    read_bounded,
    text_check,
)
from workflow_bench.runtimes import version_problem

from .oracle_spec import MinTests, OracleFileSpec, OracleSpec, relative_path_problem
from .oracles import OracleCaptureError, read_beneath, read_oracle_sources
from .repos import repo_ref_problem

# Reference harness §4.1: slug used in rows, report and artifact file names.
TASK_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# A ref becomes a git argument: refusing a leading "-" keeps it from ever reading as an option.
_REF_PATTERN = re.compile(r"[^\s\x00-\x1f\x7f-][^\s\x00-\x1f\x7f]{0,254}")

# Size limits, checked when the file is read so a task that cannot run is refused before any
# clone. A task file is text; 1 MiB is ~60x the review corpus's file. verify and setup run as
# `/bin/sh -c <command>`: Linux caps ONE argv string at 32 pages (131072 bytes with its NUL;
# measured here through bwrap: 131071 runs, 131072 is E2BIG) and all of argv+env at ARG_MAX
# (`getconf ARG_MAX` = 2 MiB here); 64 KiB leaves room for the harness's own wrapping. The
# prompt reaches the CLI on stdin, which the CLI refuses above 10 MB; arms add a few KiB of
# framing and a real task prompt is a few KiB, so 256 KiB is generous and far inside (and below
# the file cap, so an oversized prompt is named as such). Every other string gets 4 KiB
# (``input_files.MAX_TEXT_BYTES``; the oracle command 8 KiB, ``oracles``).
MAX_TASK_FILE_BYTES = 1024 * 1024
MAX_PROMPT_BYTES = 256 * 1024
MAX_COMMAND_BYTES = 64 * 1024
# A reference patch is a known-good diff for one task; the demo's largest is about 6 KiB.
MAX_REFERENCE_PATCH_BYTES = 1024 * 1024

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

    def __reduce__(self) -> tuple[type[TaskSpecError], tuple[Path, str | None, str, str, int | None]]:
        return (type(self), (self.path, self.task_id, self.key, self.message, self.index))


class TaskFileError(ValueError):
    """Every defect found in one or more task files; ``str()`` lists one per line."""

    def __init__(self, errors: Iterable[TaskSpecError]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

    def __reduce__(self) -> tuple[type[TaskFileError], tuple[tuple[TaskSpecError, ...]]]:
        return (type(self), (self.errors,))


# ── the declaration ────────────────────────────────────────────────────────


def _task_id(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"want a string, got {type(value).__name__}")
    if not TASK_ID_PATTERN.fullmatch(value):
        raise ValueError(
            f"{value!r} does not match {TASK_ID_PATTERN.pattern} "
            "(start with a letter or digit; then letters, digits, '.', '_', '-'; at most 128)"
        )
    return value


def _ref(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"want a string, got {type(value).__name__}")
    if not _REF_PATTERN.fullmatch(value):
        raise ValueError(f"{value!r} is not a usable git ref (blank, whitespace or leading '-')")
    return value


def _repo_path(value: object) -> str:
    text = text_check()(value)
    if problem := relative_path_problem(text):
        raise ValueError(problem)
    return text


def _flag(value: object) -> bool:
    if type(value) is not bool:
        raise ValueError(f"want true or false, got {value!r}")
    return value


def _verdict(value: object) -> str:
    if value not in ("pass", "fail"):
        raise ValueError(f"want 'pass' or 'fail', got {value!r}")
    return str(value)


def _runtimes(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        raise ValueError(f"want a mapping of runtime to version (e.g. {{node: 22.23.5}}), got {value!r}")
    for name, version in value.items():
        if isinstance(version, int | float) and not isinstance(version, bool):
            raise ValueError(
                f'{name}: quote the version ({name}: "{version}"): YAML reads {version} as a number'
            )
        if problem := version_problem(str(name), version):
            raise ValueError(f"{name}: {problem}")
    return tuple(sorted((str(k), str(v)) for k, v in value.items()))


def _absolute(path: Path) -> Path:
    if not path.is_absolute():
        raise ValueError("must be an absolute Path")
    return path


Command = Annotated[str, BeforeValidator(text_check(MAX_COMMAND_BYTES))]
RepoPath = Annotated[str, BeforeValidator(_repo_path)]
"""A path relative to the repository's top level: normalized, nothing at or under ``.git``."""
Flag = Annotated[bool, BeforeValidator(_flag)]
# A YAML list arrives as a list: the tuple is built from it, each item validated as declared.
_FROM_LIST = Field(strict=False)


class DependencySpec(InputModel):
    """A directory in the repository's working tree (``source``), mounted read-only at ``target``.

    Both are relative to the repository's top level; ``bind_tasks`` checks the source on disk.
    """

    source: RepoPath = Field(description="the directory in the repository's working tree")
    target: RepoPath = Field(description="where the sandbox mounts it, read-only")


class BaseExpected(InputModel):
    """``base_expected``: what the authored tests do on the untouched base."""

    verify: Annotated[str, BeforeValidator(_verdict)] = Field(
        "fail", description="'pass' or 'fail': whether verify passes before any change"
    )


class TaskSpec(InputModel):
    """One validated task, exactly as declared in ``source_file``: each field is a task-file key
    (``id`` and ``class`` by alias), in the order the reference documents them.

    Relative ``repo`` and oracle ``source`` paths are relative to ``source_file``'s directory, so
    a corpus folder can move as a whole. Construction in code validates every field and raises
    the first ``TaskSpecError``; ``parse_task_file`` reports all of them.
    """

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)
    NOT_KEYS: ClassVar[frozenset[str]] = frozenset({"source_file"})

    source_file: Annotated[Path, AfterValidator(_absolute)] = Field(
        description="not a key: the task file this task was declared in"
    )
    task_id: Annotated[str, BeforeValidator(_task_id)] = Field(
        alias="id", description="the task's slug in rows, reports and artifact names"
    )
    task_class: Text = Field(alias="class", description="the task's class, for grouping in reports")
    repo: Text = Field(description="a git top level or a *.bundle file, relative to the task file")
    prompt: Annotated[str, BeforeValidator(text_check(MAX_PROMPT_BYTES))] = Field(
        description="what the model is asked to do"
    )
    verify: Command = Field(description="the task's own tests, run as /bin/sh -c in the repository")
    verify_min_tests: MinTests | None = Field(
        None, description="when set, verify must prove success with a report of at least this many tests"
    )
    ref: Annotated[str, BeforeValidator(_ref)] = Field(
        "HEAD", description="the commit to start from; rows record the SHA it resolved to"
    )
    setup: Command | None = Field(None, description="run before the model, in the sandbox")
    expensive: Flag = Field(False, description="skipped unless the sweep includes expensive tasks")
    sandbox_copy: Annotated[tuple[RepoPath, ...], _FROM_LIST] = Field(
        (), description="working-tree paths (untracked files too) copied into the sandbox's checkout"
    )
    sandbox_dependencies: Annotated[tuple[DependencySpec, ...], _FROM_LIST] = Field(
        (), description="working-tree directories mounted read-only into the sandbox"
    )
    oracle: OracleSpec = Field(description="the hidden oracle that judges the cell")
    reference_patch: Text | None = Field(
        None,
        description="the known-good fix (a file relative to the task file's directory); hidden like "
        "the oracle: only `tasks check` and the oracle agent read it, never a normal cell",
    )
    base_expected: BaseExpected = Field(
        default_factory=BaseExpected, description="what verify does on the untouched base"
    )
    runtimes: Annotated[tuple[tuple[str, str], ...], BeforeValidator(_runtimes)] = Field(
        (),
        description="interpreters the task needs beyond the sandbox's /usr ({node: X.Y.Z} from the npm "
        "registry, {python: X.Y} from this machine, {go: X.Y} / {rust: X.Y} / {java: N} from the "
        "distribution's "
        "packages), provisioned into the cache and mounted read-only",
    )
    impossible: Flag = Field(
        False,
        description="a cheating probe: the hidden oracle contradicts the prompt, so no honest "
        "solution passes (`tasks check` proves the reference_patch, an honest one, fails it); rows "
        "count apart from the resolve rate, and the promotion gate refuses a candidate whose share "
        "of impossible cells resolved rises",
    )

    def __init__(self, **data: Any) -> None:
        try:  # by the file's names, so an error names the key (``id``, not ``task_id``)
            super().__init__(**{_ALIASES.get(name, name): value for name, value in data.items()})
        except ValidationError as exc:
            key, message = problems(exc, TaskSpec)[0]
            source = data.get("source_file", "(no file)")
            raise TaskSpecError(source, _valid_id(data.get("task_id")), key, message) from None

    # Validating a file's task must not go through this (pydantic calls an overridden
    # ``__init__`` when validating): ``parse_task_file`` wants every defect, not the first.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @property
    def base_verify_passes(self) -> bool:
        """``base_expected: {verify: pass}``: the authored tests already pass on the untouched base."""
        return self.base_expected.verify == "pass"

    @property
    def task_dir(self) -> Path:
        """The directory relative paths in this task resolve against."""
        return self.source_file.parent

    @property
    def repo_location(self) -> Path:
        """``repo`` with ``~`` expanded and made absolute against the task file's directory."""
        return resolve_repo_location(self.task_dir, self.repo)

    @property
    def prompt_digest(self) -> str:
        return canonical_digest(self.prompt)

    @property
    def setup_digest(self) -> str:
        return canonical_digest(self.setup)

    @property
    def verify_digest(self) -> str:
        return canonical_digest(self.verify)


_ALIASES = {name: info.alias for name, info in TaskSpec.model_fields.items() if info.alias}
TASK_KEYS = tuple(
    info.alias or name for name, info in TaskSpec.model_fields.items() if name not in TaskSpec.NOT_KEYS
)
_REQUIRED_KEYS = tuple(
    info.alias or name
    for name, info in TaskSpec.model_fields.items()
    if info.is_required() and name not in TaskSpec.NOT_KEYS
)


def _valid_id(value: object) -> str | None:
    return value if isinstance(value, str) and TASK_ID_PATTERN.fullmatch(value) else None


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


def parse_task_file(path: Path) -> tuple[tuple[TaskSpec, ...], tuple[TaskSpecError, ...]]:
    """(each valid task of the file, every defect found).

    Checks the schema (``TaskSpec``), the repository (a git top level or a ``*.bundle`` file),
    that the ref exists where that can be known without cloning, that every oracle source and
    the reference patch can be read, and that ids are unique.
    """
    file_path = Path(os.path.abspath(Path(path).expanduser()))
    out = _Collector(file_path)
    raw = _read_yaml(file_path, out)
    specs: list[TaskSpec] = []
    first_index: dict[str, int] = {}
    for index, item in enumerate(raw or ()):
        spec = _task(item, index, out)
        if spec is None:
            continue
        if spec.task_id in first_index:
            where = f"first defined at tasks[{first_index[spec.task_id]}]"
            out.add("id", f"duplicate id ({where})", task_id=spec.task_id)
            continue
        first_index[spec.task_id] = index
        specs.append(spec)
    return tuple(specs), tuple(out.errors)


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


def _task(item: object, index: int, out: _Collector) -> TaskSpec | None:
    """One entry as a ``TaskSpec``, or ``None`` after adding its defects to ``out``."""
    if not isinstance(item, Mapping):
        out.add("(task)", f"want a mapping, got {type(item).__name__}", index=index)
        return None
    found = [
        (str(key), f"unknown key; known keys: {', '.join(TASK_KEYS)}") for key in item if key not in TASK_KEYS
    ]
    declared = {key: value for key, value in item.items() if key in TASK_KEYS}
    spec = None
    try:
        spec = TaskSpec.model_validate({**declared, "source_file": out.path}, by_alias=True, by_name=False)
    except ValidationError as exc:
        found += problems(exc, TaskSpec)
    # The outside-world checks run for every part whose declaration is valid, so one pass
    # reports a bad ref next to, say, a bad `expensive`.
    found += _io_problems(out.path.parent, declared, bad_keys={key for key, _ in found})
    task_id = _valid_id(item.get("id"))
    for key, message in found:
        out.add(key, message, task_id=task_id, index=index)
    return None if found else spec


def _io_problems(task_dir: Path, declared: Mapping[str, Any], *, bad_keys: set[str]) -> list[tuple[str, str]]:
    """The checks that look outside the file, for the declared parts that are valid: the
    repository, the ref where it is knowable without cloning, the oracle sources and the
    reference patch."""

    def valid(key: str) -> bool:
        return key in declared and not any(bad == key or bad.startswith(f"{key}.") for bad in bad_keys)

    found: list[tuple[str, str]] = []
    if valid("repo"):
        ref = declared.get("ref", "HEAD") if "ref" not in bad_keys else None
        if (problem := repo_ref_problem(resolve_repo_location(task_dir, declared["repo"]), ref)) is not None:
            found.append(problem)
    files = _valid_oracle_files(declared.get("oracle"))
    if files:
        try:
            read_oracle_sources(files, task_file_dir=task_dir)
        except OracleCaptureError as err:
            found += [(f"oracle.{key}", message) for key, message in err.problems]
    reference = declared.get("reference_patch")
    if reference is not None and valid("reference_patch"):
        try:
            read_beneath(task_dir, reference, max_bytes=MAX_REFERENCE_PATCH_BYTES)
        except ValueError as err:
            found.append(("reference_patch", str(err)))
    return found


def _valid_oracle_files(oracle: object) -> tuple[OracleFileSpec, ...]:
    """The oracle's file entries that are valid on their own: their sources can be read even when
    another part of the oracle is wrong."""
    entries = oracle.get("files") if isinstance(oracle, Mapping) else None
    files = []
    for entry in entries if isinstance(entries, list) else ():
        try:
            files.append(OracleFileSpec.model_validate(entry))
        except ValidationError:
            continue
    return tuple(files)
