"""Task files: the frozen task specs, their loading and validation, binding and selection.

Owns the task-file schema (reference harness §4.1), ``TaskSpec`` and its parts, the digests derived
from a spec (one canonical JSON encoder, ``canonical_digest``), ``TaskBinding`` (a spec resolved to
an immutable commit plus its captured hidden oracle) and ``select_tasks``.

Two steps, kept apart:

- ``load_task_file`` parses and validates one file and reports **every** defect at once
  (``TaskFileError``), each naming the file, the task and the key. It may read the oracle sources
  and run read-only ``git`` queries (``rev-parse``, ``bundle list-heads``); it never clones,
  writes or runs anything else.
- ``bind_tasks`` does the I/O a sweep needs before any model call: clones bundle repositories into
  the content-addressed cache, resolves each ``ref`` once to a SHA and captures each oracle.

Must never: trust a ref to stay put (rows record the resolved SHA, not the ref), follow symlinks
to oracle sources, or let a git environment variable of the caller redirect a query.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import yaml

from .oracles import (
    MAX_ORACLE_FILES,
    OracleCaptureError,
    OracleSnapshot,
    capture_oracle,
    command_problem,
    read_oracle_sources,
    relative_path_problem,
    target_problem,
    target_set_problem,
)
from .process import run_process

# Reference harness §4.1: slug used in rows, report and artifact file names.
TASK_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# A ref becomes a git argument: refusing a leading "-" keeps it from ever reading as an option.
_REF_PATTERN = re.compile(r"[^\s\x00-\x1f\x7f-][^\s\x00-\x1f\x7f]{0,254}")
_SHA_PATTERN = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # sha1 or sha256 object format
_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{4,64}")
_BUNDLE_SIGNATURES = (b"# v2 git bundle\n", b"# v3 git bundle\n")

TASK_KEYS = (
    "id",
    "class",
    "repo",
    "prompt",
    "verify",
    "ref",
    "setup",
    "expensive",
    "sandbox_copy",
    "sandbox_dependencies",
    "oracle",
)
_REQUIRED_KEYS = ("id", "class", "repo", "prompt", "verify", "oracle")
_TOP_LEVEL = "<top level>"
# git queries are local and read-only; a minute means a hung filesystem or a lock, not work.
GIT_TIMEOUT_S = 60
# Cloning a bundle copies its whole history; the largest real targets (~100 MB) clone in seconds.
BUNDLE_CLONE_TIMEOUT_S = 600


def canonical_digest(value: Any) -> str:
    """sha256 of the canonical JSON encoding (sorted keys, compact separators, UTF-8).

    The only encoder behind every digest in this module, so a digest is a function of the
    value alone and survives a JSON round trip.
    """
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()


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


class _Problem(NamedTuple):
    key: str
    message: str


# ── value checks, shared by the constructors and the loader ───────────────


def _text_problems(key: str, value: object, *, optional: bool = False) -> list[_Problem]:
    if optional and value is None:
        return []
    if not isinstance(value, str):
        return [_Problem(key, f"want a string, got {type(value).__name__}")]
    if not value.strip():
        return [_Problem(key, "must not be blank")]
    if "\0" in value:
        return [_Problem(key, "must not contain NUL")]
    return []


def _id_problems(value: object) -> list[_Problem]:
    if not isinstance(value, str):
        return [_Problem("id", f"want a string, got {type(value).__name__}")]
    if not TASK_ID_PATTERN.fullmatch(value):
        return [
            _Problem(
                "id",
                f"{value!r} does not match {TASK_ID_PATTERN.pattern} "
                "(start with a letter or digit; then letters, digits, '.', '_', '-'; at most 128)",
            )
        ]
    return []


def _ref_problems(value: object) -> list[_Problem]:
    if not isinstance(value, str):
        return [_Problem("ref", f"want a string, got {type(value).__name__}")]
    if not _REF_PATTERN.fullmatch(value):
        return [_Problem("ref", f"{value!r} is not a usable git ref (blank, whitespace or leading '-')")]
    return []


def _repo_path_problems(key: str, value: object) -> list[_Problem]:
    if not isinstance(value, str):
        return [_Problem(key, f"want a string, got {type(value).__name__}")]
    problem = relative_path_problem(value)
    return [_Problem(key, problem)] if problem else []


def _oracle_problems(command: object, files: Sequence[OracleFileSpec]) -> list[_Problem]:
    problems = _text_problems("oracle.command", command)
    if not problems and isinstance(command, str) and (problem := command_problem(command)):
        problems.append(_Problem("oracle.command", problem))
    if not 1 <= len(files) <= MAX_ORACLE_FILES:
        problems.append(_Problem("oracle.files", f"want 1 to {MAX_ORACLE_FILES} entries, got {len(files)}"))
    for i, item in enumerate(files):
        problems += _text_problems(f"oracle.files[{i}].source", item.source)
        target_key = f"oracle.files[{i}].target"
        if not isinstance(item.target, str):
            problems.append(_Problem(target_key, f"want a string, got {type(item.target).__name__}"))
        elif problem := target_problem(item.target):
            problems.append(_Problem(target_key, problem))
    targets = [f.target for f in files if isinstance(f.target, str) and not target_problem(f.target)]
    if problem := target_set_problem(targets):
        problems.append(_Problem("oracle.files", problem))
    return problems


# ── specs ──────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class DependencySpec:
    """A repository-relative tree snapshotted once and mounted read-only at ``target``."""

    source: str
    target: str

    def __post_init__(self) -> None:
        problems = _repo_path_problems("source", self.source) + _repo_path_problems("target", self.target)
        if problems:
            raise ValueError(f"sandbox dependency {problems[0].key}: {problems[0].message}")


@dataclass(frozen=True, slots=True)
class OracleFileSpec:
    """One declared oracle file: ``source`` relative to the task file's directory, staged at ``target``."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class OracleSpec:
    """The hidden oracle as declared: a shell command and 1–8 files (validated by ``TaskSpec``)."""

    command: str
    files: tuple[OracleFileSpec, ...]


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One validated task, exactly as declared in ``source_file``.

    Relative ``repo`` and oracle ``source`` paths are relative to ``source_file``'s directory, so
    a corpus folder can move as a whole. Construction validates every field and raises the first
    ``TaskSpecError``; ``load_task_file`` reports all of them.
    """

    source_file: Path
    task_id: str
    task_class: str
    repo: str
    prompt: str
    verify: str
    oracle: OracleSpec
    ref: str = "HEAD"
    setup: str | None = None
    expensive: bool = False
    sandbox_copy: tuple[str, ...] = ()
    sandbox_dependencies: tuple[DependencySpec, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.source_file, Path) or not self.source_file.is_absolute():
            raise TaskSpecError(str(self.source_file), None, "source_file", "must be an absolute Path")
        task_id = self.task_id if not _id_problems(self.task_id) else None
        problems = _spec_problems(self)
        if problems:
            raise TaskSpecError(self.source_file, task_id, problems[0].key, problems[0].message)

    @property
    def task_dir(self) -> Path:
        """The directory relative paths in this task resolve against."""
        return self.source_file.parent

    @property
    def repo_location(self) -> Path:
        """``repo`` with ``~`` expanded and made absolute against the task file's directory."""
        return _repo_location(self.task_dir, self.repo)

    @property
    def prompt_digest(self) -> str:
        return canonical_digest(self.prompt)

    @property
    def setup_digest(self) -> str:
        return canonical_digest(self.setup)

    @property
    def verify_digest(self) -> str:
        return canonical_digest(self.verify)


def _repo_location(task_dir: Path, repo: str) -> Path:
    return task_dir / Path(repo).expanduser()


def _spec_problems(spec: TaskSpec) -> list[_Problem]:
    problems = _id_problems(spec.task_id)
    for key, value in (
        ("class", spec.task_class),
        ("repo", spec.repo),
        ("prompt", spec.prompt),
        ("verify", spec.verify),
    ):
        problems += _text_problems(key, value)
    problems += _ref_problems(spec.ref)
    problems += _text_problems("setup", spec.setup, optional=True)
    if type(spec.expensive) is not bool:
        problems.append(_Problem("expensive", f"want true or false, got {spec.expensive!r}"))
    if not isinstance(spec.sandbox_copy, tuple):
        problems.append(_Problem("sandbox_copy", "want a tuple of paths"))
    else:
        for i, path in enumerate(spec.sandbox_copy):
            problems += _repo_path_problems(f"sandbox_copy[{i}]", path)
    if not isinstance(spec.sandbox_dependencies, tuple) or not all(
        isinstance(d, DependencySpec) for d in spec.sandbox_dependencies
    ):
        problems.append(_Problem("sandbox_dependencies", "want a tuple of DependencySpec"))
    if not isinstance(spec.oracle, OracleSpec) or not isinstance(spec.oracle.files, tuple):
        problems.append(_Problem("oracle", "want an OracleSpec with a tuple of files"))
    else:
        problems += _oracle_problems(spec.oracle.command, spec.oracle.files)
    return problems


# ── loading ────────────────────────────────────────────────────────────────


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys instead of keeping the last one silently."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # merge keys may legitimately be overridden by explicit ones
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool):
            continue  # unhashable keys are rejected by construct_mapping itself
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _Collector:
    """Accumulates defects for one file; knows which task it is looking at."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[TaskSpecError] = []

    def add(self, key: str, message: str, *, task_id: str | None = None, index: int | None = None) -> None:
        self.errors.append(TaskSpecError(self.path, task_id, key, message, index))


def load_task_file(path: Path) -> tuple[TaskSpec, ...]:
    """Parse and validate one task file; raise ``TaskFileError`` listing every defect.

    Checks the schema, the repository (a git top level or a ``*.bundle`` file), that the ref
    exists where that can be known without cloning, and that every oracle source can be captured.
    """
    file_path = Path(os.path.abspath(Path(path).expanduser()))
    out = _Collector(file_path)
    raw = _read_yaml(file_path, out)
    specs: list[TaskSpec] = []
    if raw is not None:
        first_index: dict[str, int] = {}
        for index, item in enumerate(raw):
            spec = _load_task(item, index, out)
            if spec is None:
                continue
            if spec.task_id in first_index:
                out.add(
                    "id",
                    f"duplicate id (first defined at tasks[{first_index[spec.task_id]}])",
                    task_id=spec.task_id,
                )
                continue
            first_index[spec.task_id] = index
            specs.append(spec)
    if out.errors:
        raise TaskFileError(out.errors)
    return tuple(specs)


def _read_yaml(path: Path, out: _Collector) -> list[Any] | None:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        out.add("(file)", "no such file")
        return None
    except (OSError, UnicodeDecodeError) as err:
        out.add("(file)", f"cannot read as UTF-8: {err}")
        return None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        out.add("(yaml)", f"{where}{problem}")
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


def _load_task(item: object, index: int, out: _Collector) -> TaskSpec | None:
    if not isinstance(item, Mapping):
        out.add("(task)", f"want a mapping, got {type(item).__name__}", index=index)
        return None
    task_id = item.get("id") if not _id_problems(item.get("id")) else None
    problems: list[_Problem] = []
    for key in item:
        if key not in TASK_KEYS:
            problems.append(_Problem(str(key), f"unknown key; known keys: {', '.join(TASK_KEYS)}"))
    for key in _REQUIRED_KEYS:
        if key not in item:
            problems.append(_Problem(key, "missing required key"))
    if "id" in item:
        problems += _id_problems(item["id"])
    for key in ("class", "repo", "prompt", "verify"):
        if key in item:
            problems += _text_problems(key, item[key])
    if "ref" in item:
        problems += _ref_problems(item["ref"])
    if "setup" in item:
        problems += _text_problems("setup", item["setup"])
    if "expensive" in item and type(item["expensive"]) is not bool:
        problems.append(_Problem("expensive", f"want true or false, got {item['expensive']!r}"))
    copies = _string_list(item.get("sandbox_copy", []), "sandbox_copy", problems)
    for i, entry in enumerate(copies):
        problems += _repo_path_problems(f"sandbox_copy[{i}]", entry)
    dependencies = _pairs(item.get("sandbox_dependencies", []), "sandbox_dependencies", problems)
    for i, (source, target) in enumerate(dependencies):
        problems += _repo_path_problems(f"sandbox_dependencies[{i}].source", source)
        problems += _repo_path_problems(f"sandbox_dependencies[{i}].target", target)
    oracle, oracle_files = _oracle_declaration(item["oracle"], problems) if "oracle" in item else (None, ())
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
    return TaskSpec(
        source_file=out.path,
        task_id=item["id"],
        task_class=item["class"],
        repo=item["repo"],
        prompt=item["prompt"],
        verify=item["verify"],
        oracle=oracle,
        ref=item.get("ref", "HEAD"),
        setup=item.get("setup"),
        expensive=item.get("expensive", False),
        sandbox_copy=tuple(copies),
        sandbox_dependencies=tuple(DependencySpec(s, t) for s, t in dependencies),
    )


def _string_list(value: object, key: str, problems: list[_Problem]) -> list[str]:
    if not isinstance(value, list):
        problems.append(_Problem(key, f"want a list of paths, got {type(value).__name__}"))
        return []
    good = []
    for i, entry in enumerate(value):
        entry_problems = _text_problems(f"{key}[{i}]", entry)
        problems += entry_problems
        if not entry_problems:
            good.append(entry)
    return good


def _pairs(value: object, key: str, problems: list[_Problem]) -> list[tuple[str, str]]:
    """A list of exactly-``{source, target}`` mappings, as (source, target) string pairs."""
    if not isinstance(value, list):
        problems.append(
            _Problem(key, f"want a list of {{source, target}} mappings, got {type(value).__name__}")
        )
        return []
    pairs = []
    for i, entry in enumerate(value):
        entry_key = f"{key}[{i}]"
        if not isinstance(entry, Mapping):
            problems.append(
                _Problem(entry_key, f"want a {{source, target}} mapping, got {type(entry).__name__}")
            )
            continue
        extra = sorted(str(k) for k in entry if k not in ("source", "target"))
        missing = [k for k in ("source", "target") if k not in entry]
        if extra or missing:
            detail = ", ".join([*(f"unknown key {k!r}" for k in extra), *(f"missing {k!r}" for k in missing)])
            problems.append(_Problem(entry_key, f"want exactly {{source, target}}: {detail}"))
            continue
        entry_problems = _text_problems(f"{entry_key}.source", entry["source"])
        entry_problems += _text_problems(f"{entry_key}.target", entry["target"])
        problems += entry_problems
        if not entry_problems:
            pairs.append((entry["source"], entry["target"]))
    return pairs


def _oracle_declaration(
    value: object, problems: list[_Problem]
) -> tuple[OracleSpec | None, tuple[OracleFileSpec, ...]]:
    """(the spec if it is fully valid, the file entries whose shape is valid: their sources can be read)."""
    if not isinstance(value, Mapping):
        kind = type(value).__name__
        problems.append(_Problem("oracle", f"want a mapping with exactly {{command, files}}, got {kind}"))
        return None, ()
    extra = sorted(str(k) for k in value if k not in ("command", "files"))
    missing = [k for k in ("command", "files") if k not in value]
    if extra or missing:
        detail = ", ".join([*(f"unknown key {k!r}" for k in extra), *(f"missing {k!r}" for k in missing)])
        problems.append(_Problem("oracle", f"want exactly {{command, files}}: {detail}"))
        return None, ()
    shape: list[_Problem] = []
    files = tuple(
        OracleFileSpec(source, target) for source, target in _pairs(value["files"], "oracle.files", shape)
    )
    if shape:
        problems += shape + _text_problems("oracle.command", value["command"])
        return None, files
    values = _oracle_problems(value["command"], files)
    problems += values
    return (None if values else OracleSpec(command=value["command"], files=files)), files


def _io_problems(
    task_dir: Path, *, repo: str | None, ref: str | None, oracle_files: Sequence[OracleFileSpec]
) -> list[_Problem]:
    """The checks that look outside the file, for the parts given (``None`` = already invalid):
    the repository, the ref where it is knowable without cloning, and the oracle sources."""
    problems: list[_Problem] = []
    if repo is not None:
        location = _repo_location(task_dir, repo)
        repo_problem, heads = _probe_repo(location)
        if repo_problem:
            problems.append(_Problem("repo", repo_problem))
        elif ref is None:
            pass  # the ref itself is malformed and already reported
        elif heads is None:
            if _resolve_ref(location, ref) is None:
                problems.append(_Problem("ref", f"{ref!r} does not name a commit in {location}"))
        elif (problem := _bundle_ref_problem(ref, heads)) is not None:
            problems.append(_Problem("ref", problem))
    if oracle_files:
        try:
            read_oracle_sources(oracle_files, task_file_dir=task_dir)
        except OracleCaptureError as err:
            problems += [_Problem(f"oracle.{key}", message) for key, message in err.problems]
    return problems


# ── git ────────────────────────────────────────────────────────────────────


def _git_env() -> dict[str, str]:
    # Drop every GIT_* variable: GIT_DIR, GIT_WORK_TREE or GIT_OBJECT_DIRECTORY inherited from a
    # hook or a shell would silently point the query at another repository. Replace refs are
    # disabled so a SHA always names the object it hashes to.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_NO_REPLACE_OBJECTS="1", LC_ALL="C")
    return env


def _git(args: Sequence[str], *, cwd: Path, timeout_s: float = GIT_TIMEOUT_S) -> tuple[bool, str]:
    result = run_process(
        ["git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", *args],
        timeout_s=timeout_s,
        cwd=cwd,
        env=_git_env(),
    )
    if result.ok:
        return True, result.stdout.decode("utf-8", "replace").strip()
    return False, (result.stderr_tail.strip() or result.describe())


def _is_bundle(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError:
        return False
    return head in _BUNDLE_SIGNATURES


def _probe_repo(location: Path) -> tuple[str | None, dict[str, str] | None]:
    """(problem, None), or (None, None) for a repository, or (None, heads) for a bundle."""
    if location.is_file():
        if location.suffix != ".bundle" or not _is_bundle(location):
            return f"{location} is a file but not a git bundle (*.bundle with a bundle header)", None
        ok, output = _git(["bundle", "list-heads", str(location)], cwd=location.parent)
        if not ok:
            return f"{location} is not a readable git bundle: {output}", None
        heads = {}
        for line in output.splitlines():
            sha, _, name = line.partition(" ")
            heads[name] = sha
        return None, heads
    if not location.is_dir():
        return f"{location} does not exist (want a git repository or a *.bundle file)", None
    root, why = _repo_root(location)
    if root is None:
        return f"{location} is not a git repository ({why})", None
    if root != location.resolve():
        return f"{location} is inside the git repository {root} but is not its top level", None
    return None, None


def _repo_root(location: Path) -> tuple[Path | None, str]:
    """(worktree top level, or git dir of a bare repository, containing ``location``; git's complaint)."""
    ok, bare = _git(["rev-parse", "--is-bare-repository"], cwd=location)
    if not ok:
        return None, bare
    what = "--absolute-git-dir" if bare == "true" else "--show-toplevel"
    ok, output = _git(["rev-parse", what], cwd=location)
    return (Path(output).resolve(), "") if ok and output else (None, output or "no top level")


def _resolve_ref(repo: Path, ref: str) -> str | None:
    ok, output = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], cwd=repo)
    return output if ok and _SHA_PATTERN.fullmatch(output) else None


def _bundle_ref_problem(ref: str, heads: Mapping[str, str]) -> str | None:
    """Check ``ref`` against a bundle's heads where that is possible without cloning it."""
    if any(name in heads for name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/{ref}")):
        return None
    if _HEX_PREFIX.fullmatch(ref) or any(c in ref for c in "~^:@{"):
        return None  # an object name or an expression: only the clone can answer, at bind time
    names = ", ".join(sorted(heads)) or "none"
    return f"{ref!r} is not a ref in the bundle (its refs: {names})"


# ── binding ────────────────────────────────────────────────────────────────


def cache_root() -> Path:
    """``$WORKFLOW_BENCH_CACHE`` or ``~/.cache/workflow-bench``."""
    configured = os.environ.get("WORKFLOW_BENCH_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "workflow-bench"


@dataclass(frozen=True, slots=True)
class TaskBinding:
    """A task resolved for one sweep: an immutable commit and the oracle that will judge it."""

    spec: TaskSpec
    repo_path: Path
    repo_identity: str
    resolved_sha: str
    oracle: OracleSnapshot

    def __post_init__(self) -> None:
        def fail(key: str, message: str) -> NoReturn:
            raise TaskSpecError(self.spec.source_file, self.spec.task_id, key, message)

        if not isinstance(self.resolved_sha, str) or not _SHA_PATTERN.fullmatch(self.resolved_sha):
            fail("ref", f"resolved SHA must be 40 or 64 lowercase hex chars, got {self.resolved_sha!r}")
        if not isinstance(self.repo_identity, str) or not self.repo_identity:
            fail("repo", "repo identity must be a nonblank string")
        declared = [f.target for f in self.spec.oracle.files]
        if (
            self.oracle.command != self.spec.oracle.command
            or [f.target for f in self.oracle.files] != declared
        ):
            fail("oracle", "snapshot does not match the declared oracle command and targets")

    def to_json(self) -> dict[str, Any]:
        """The binding's definition: what a row or promotion.json needs to prove what was run."""
        spec = self.spec
        return {
            "id": spec.task_id,
            "class": spec.task_class,
            "repo_identity": self.repo_identity,
            "ref": spec.ref,
            "prompt_digest": spec.prompt_digest,
            "setup_digest": spec.setup_digest,
            "verify_digest": spec.verify_digest,
            "expensive": spec.expensive,
            "sandbox_copy": list(spec.sandbox_copy),
            "sandbox_dependencies": [
                {"source": d.source, "target": d.target} for d in spec.sandbox_dependencies
            ],
            "oracle_digest": self.oracle.digest,
            "oracle_command_digest": self.oracle.command_digest,
            "oracle_manifest_digest": self.oracle.manifest_digest,
            "oracle_files": self.oracle.manifest(),
            "resolved_sha": self.resolved_sha,
        }

    @property
    def binding_digest(self) -> str:
        return canonical_digest(self.to_json())


def bind_tasks(specs: Sequence[TaskSpec]) -> tuple[TaskBinding, ...]:
    """Resolve every spec's repository and ref once and capture its oracle.

    Bundles are cloned (``--mirror``) at most once into the content-addressed cache. Raises
    ``TaskFileError`` listing every task that cannot be bound.
    """
    errors: list[TaskSpecError] = []
    repos: dict[Path, tuple[Path, str] | str] = {}
    shas: dict[tuple[Path, str], str | None] = {}
    bindings = []
    for spec in specs:
        location = spec.repo_location
        key = location.resolve()
        if key not in repos:
            repos[key] = _materialize_repo(location)
        repo = repos[key]
        if isinstance(repo, str):
            errors.append(TaskSpecError(spec.source_file, spec.task_id, "repo", repo))
            continue
        repo_path, identity = repo
        if (repo_path, spec.ref) not in shas:
            shas[(repo_path, spec.ref)] = _resolve_ref(repo_path, spec.ref)
        sha = shas[(repo_path, spec.ref)]
        if sha is None:
            errors.append(
                TaskSpecError(
                    spec.source_file,
                    spec.task_id,
                    "ref",
                    f"{spec.ref!r} does not name a commit in {location}",
                )
            )
            continue
        try:
            oracle = capture_oracle(spec.oracle, task_file_dir=spec.task_dir)
        except OracleCaptureError as err:
            errors += [
                TaskSpecError(spec.source_file, spec.task_id, f"oracle.{k}", m) for k, m in err.problems
            ]
            continue
        bindings.append(TaskBinding(spec, repo_path, identity, sha, oracle))
    if errors:
        raise TaskFileError(errors)
    return tuple(bindings)


def _materialize_repo(location: Path) -> tuple[Path, str] | str:
    """(repo_path, identity) for a repository or bundle, or the problem as a string."""
    problem, heads = _probe_repo(location)
    if problem:
        return problem
    if heads is None:
        root, why = _repo_root(location)
        return (root, str(root)) if root is not None else f"{location} is not a git repository ({why})"
    return _clone_bundle(location)


def _clone_bundle(bundle: Path) -> tuple[Path, str] | str:
    repos_dir = cache_root() / "repos"
    repos_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bundle-", dir=repos_dir) as tmp:
        # Hash and clone the same bytes: a bundle rewritten between the two steps must not end up
        # cached under the digest of its previous content.
        copy = Path(tmp) / "source.bundle"
        digest = hashlib.sha256()
        with bundle.open("rb") as src, copy.open("wb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                dst.write(chunk)
        identity = f"bundle:sha256:{digest.hexdigest()}"
        final = repos_dir / digest.hexdigest()
        if final.is_dir():
            # --git-dir, not discovery: a damaged cache entry must not resolve to an enclosing repo.
            ok, bare = _git(["--git-dir", str(final), "rev-parse", "--is-bare-repository"], cwd=repos_dir)
            if ok and bare == "true":
                return final, identity
            return f"cached clone {final} of {bundle} is not a bare repository; delete it and retry"
        staging = Path(tmp) / f"mirror-{secrets.token_hex(4)}"
        ok, output = _git(
            ["clone", "--mirror", "--quiet", "--", str(copy), str(staging)],
            cwd=Path(tmp),
            timeout_s=BUNDLE_CLONE_TIMEOUT_S,
        )
        if not ok:
            return f"cannot clone bundle {bundle}: {output}"
        ok, output = _git(["bundle", "verify", str(copy)], cwd=staging)
        if not ok:
            return f"bundle {bundle} failed 'git bundle verify': {output}"
        try:
            os.rename(staging, final)  # atomic: readers see no clone or a complete one
        except OSError:
            if not final.is_dir():
                raise
            shutil.rmtree(staging)  # another process published the same content first
    return final, identity


# ── selection ──────────────────────────────────────────────────────────────


def select_tasks(
    specs: Sequence[TaskSpec], *, include_expensive: bool
) -> tuple[tuple[TaskSpec, ...], tuple[str, ...]]:
    """(selected specs in order, ids of expensive tasks skipped); the report lists the skipped."""
    selected = tuple(s for s in specs if include_expensive or not s.expensive)
    skipped = tuple(s.task_id for s in specs if s.expensive and not include_expensive)
    return selected, skipped
