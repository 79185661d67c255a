"""Task specs and their binding: ``load_task_file``, ``TaskBinding``, ``bind_tasks``, ``select_tasks``.
Over 400 lines on purpose: binding resolves ref, oracle, sandbox sources and the lock into one error list.

Owns ``TaskBinding`` (a spec resolved to an immutable commit, its captured hidden oracle and the
working-tree paths its sandbox copies or mounts) and its digest, ``load_task_file`` and
``select_tasks``. This is the import path for the whole task layer: the schema pieces that live
in ``taskspec.schema`` (``TaskSpec``, the one declaration of every task-file key; keys, errors,
loading), the oracle's parts and ``cache_root`` from ``taskspec.repos`` are re-exported here.

Two steps, kept apart:

- ``load_task_file`` parses and validates one file and reports **every** defect at once
  (``TaskFileError``), each naming the file, the task and the key. It may read the oracle sources
  and run read-only ``git`` queries; it never clones, writes or runs anything else.
- ``bind_tasks`` does the I/O a sweep needs before any model call: clones bundle repositories into
  the content-addressed cache, resolves each ``ref`` once to a SHA, captures each oracle, and
  checks every ``sandbox_copy`` / ``sandbox_dependencies`` source in the repository's working tree
  (hashing each dependency tree into a manifest digest).

Must never: trust a ref to stay put (rows record the resolved SHA, not the ref), follow symlinks
to oracle sources, accept a sandbox source outside the working tree, or let a git environment
variable of the caller redirect a query (``repos`` owns every git call).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple, NoReturn

from workflow_bench.digests import canonical_digest
from workflow_bench.runtimes import Provisioned, RuntimeProvisionError, bin_dir, provision
from workflow_bench.workspace.snapshot import MAX_TASK_BYTES, MAX_TASK_ENTRIES

from .expected_tests import REFRESH_HINT, ExpectedTests, load_lock, lock_path, subject_changes
from .oracle_spec import OracleFileSpec, OracleSpec
from .oracles import OracleCaptureError, OracleSnapshot, capture_oracle, read_beneath
from .repos import (
    BUNDLE_CLONE_TIMEOUT_S,
    GIT_TIMEOUT_S,
    MAX_DEPENDENCY_BYTES,
    MAX_DEPENDENCY_ENTRIES,
    SHA_PATTERN,
    RepoHandle,
    TreeManifest,
    WorktreeError,
    cache_root,
    materialize_repo,
    resolve_ref,
    tree_manifest,
    tree_size,
    worktree_source,
)
from .schema import (
    MAX_REFERENCE_PATCH_BYTES,
    TASK_ID_PATTERN,
    TASK_KEYS,
    DependencySpec,
    TaskFileError,
    TaskSpec,
    TaskSpecError,
    parse_task_file,
)

__all__ = [
    "BUNDLE_CLONE_TIMEOUT_S",
    "GIT_TIMEOUT_S",
    "TASK_ID_PATTERN",
    "TASK_KEYS",
    "DependencySpec",
    "OracleFileSpec",
    "OracleSpec",
    "TaskBinding",
    "TaskFileError",
    "TaskSpec",
    "TaskSpecError",
    "bind_tasks",
    "cache_root",
    "canonical_digest",
    "load_task_file",
    "select_tasks",
]


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# Why a repository has no working tree to copy or mount from, by ``RepoHandle.kind``.
_NO_WORKTREE = MappingProxyType({"bundle": "bundles have none", "bare": "bare repositories have none"})


def load_task_file(path: Path) -> tuple[TaskSpec, ...]:
    """Parse and validate one task file; raise ``TaskFileError`` listing every defect.

    Checks the schema, the repository (a git top level or a ``*.bundle`` file), that the ref
    exists where that can be known without cloning, and that every oracle source can be captured.
    """
    specs, errors = parse_task_file(path)
    if errors:
        raise TaskFileError(errors)
    return specs


def load_task_files(tasks: Path, probes: Path | None = None) -> tuple[TaskSpec, ...]:
    """``tasks``'s tasks, then those of ``probes`` (a file of cheating probes run beside them,
    README "Cheating probes"): every probe must declare ``impossible: true`` and no id may appear
    in both files. Raises ``TaskFileError`` listing every defect of both files."""
    loaded: list[tuple[TaskSpec, ...]] = []
    errors: list[TaskSpecError] = []
    for path in (tasks, probes):
        try:
            loaded.append(load_task_file(path) if path is not None else ())
        except TaskFileError as exc:
            errors += exc.errors
    if errors:
        raise TaskFileError(errors)
    ordinary, probing = loaded
    ids = {spec.task_id for spec in ordinary}
    for spec in probing:
        assert probes is not None
        if not spec.impossible:
            message = "a probe file holds only impossible tasks (impossible: true); put this one in --tasks"
            errors.append(TaskSpecError(probes, spec.task_id, "impossible", message))
        if spec.task_id in ids:
            errors.append(TaskSpecError(probes, spec.task_id, "id", f"is also a task of {tasks}"))
    if errors:
        raise TaskFileError(errors)
    return (*ordinary, *probing)


# ── binding ────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class TaskBinding:
    """A task resolved for one sweep: an immutable commit, the oracle that will judge it, and the
    working-tree paths its sandbox copies or mounts."""

    spec: TaskSpec
    repo_path: Path
    repo_identity: str
    resolved_sha: str
    oracle: OracleSnapshot
    copy_paths: tuple[tuple[Path, str], ...] = ()
    """(absolute host source, repository-relative destination) per ``sandbox_copy`` entry, in order.
    The source is a file or a directory in the working tree, symlinks already resolved."""
    dependency_mounts: tuple[tuple[Path, str], ...] = ()
    """(absolute host source directory, repository-relative target) per ``sandbox_dependencies``
    entry, in order; the cell mounts each read-only."""
    dependency_manifest_digest: str | None = None
    """``canonical_digest`` of (target, path, size, sha256, symlink target) for every file and
    symlink under the dependency directories, taken at bind time; ``None`` without dependencies.
    Stored rather than derived: it must describe the trees as bound, and re-walking up to
    ``MAX_DEPENDENCY_BYTES`` on every read of ``binding_digest`` would be slow."""
    reference_sha256: str | None = None
    """sha256 of the reference patch as bound (None without one): part of the lock's subject only,
    never of a row (``to_json``)."""
    expected_tests: ExpectedTests | None = None
    """The task's entry of the expected-tests lock next to its task file, checked not stale; None
    without one (the judge then counts tests against ``min_tests``)."""
    runtimes: tuple[Provisioned, ...] = ()
    """The interpreters the task names (``runtimes``), provisioned, in the order of their names."""
    runtime_bin: Path | None = None
    """The directory of links to them the sandbox mounts at ``runtimes.BIN_DIR``; None without runtimes."""
    tree_entries: int | None = None
    """Entries (files, links, directories, submodules) of the commit's tree, counted at bind time
    (``repos.tree_size``; None: not counted). Sizes the template build's time bounds; never in a
    row or a digest (it follows from ``resolved_sha``)."""
    tree_bytes: int | None = None
    """Bytes of every blob of the commit's tree, as ``tree_entries``."""

    def __post_init__(self) -> None:
        def fail(key: str, message: str) -> NoReturn:
            raise TaskSpecError(self.spec.source_file, self.spec.task_id, key, message)

        if not isinstance(self.resolved_sha, str) or not SHA_PATTERN.fullmatch(self.resolved_sha):
            fail("ref", f"resolved SHA must be 40 or 64 lowercase hex chars, got {self.resolved_sha!r}")
        if not isinstance(self.repo_identity, str) or not self.repo_identity:
            fail("repo", "repo identity must be a nonblank string")
        declared = [f.target for f in self.spec.oracle.files]
        if (
            self.oracle.command != self.spec.oracle.command
            or [f.target for f in self.oracle.files] != declared
        ):
            fail("oracle", "snapshot does not match the declared oracle command and targets")
        copies = list(self.spec.sandbox_copy)
        if not _is_path_pairs(self.copy_paths) or [d for _, d in self.copy_paths] != copies:
            fail("sandbox_copy", f"copy paths must be (absolute Path, destination) for each of {copies}")
        targets = [d.target for d in self.spec.sandbox_dependencies]
        if not _is_path_pairs(self.dependency_mounts) or [t for _, t in self.dependency_mounts] != targets:
            fail("sandbox_dependencies", f"mounts must be (absolute Path, target) for each of {targets}")
        digest = self.dependency_manifest_digest
        if (digest is None) != (not targets) or (digest is not None and not _SHA256_HEX.fullmatch(digest)):
            fail(
                "sandbox_dependencies",
                f"manifest digest must be 64 hex chars iff there are mounts, got {digest!r}",
            )
        reference = self.reference_sha256
        if (reference is None) != (self.spec.reference_patch is None) or (
            reference is not None and not _SHA256_HEX.fullmatch(reference)
        ):
            fail("reference_patch", f"sha256 must be 64 hex chars iff there is a patch, got {reference!r}")
        if [r.name for r in self.runtimes] != [name for name, _ in self.spec.runtimes] or (
            self.runtime_bin is None
        ) != (not self.runtimes):
            fail(
                "runtimes",
                f"want one provisioned runtime per declared one and their links, got {self.runtimes!r}",
            )
        if self.expected_tests is not None and not isinstance(self.expected_tests, ExpectedTests):
            fail("expected_tests", f"want ExpectedTests, got {type(self.expected_tests).__name__}")

    def to_json(self) -> dict[str, Any]:
        """The binding's definition: what a row or promotion.json needs to prove what was run.

        Host paths stay out (``copy_paths``, ``dependency_mounts``): moving a corpus must not
        change what was run; the declared paths and the manifest digest say it.
        """
        spec = self.spec
        # Only when the task names runtimes: the binding digest of every other task is unchanged.
        runtimes = {"runtimes": self.runtime_records()} if self.runtimes else {}
        return {
            **runtimes,
            "id": spec.task_id,
            "class": spec.task_class,
            "repo_identity": self.repo_identity,
            "ref": spec.ref,
            "prompt_digest": spec.prompt_digest,
            "setup_digest": spec.setup_digest,
            "verify_digest": spec.verify_digest,
            "verify_min_tests": spec.verify_min_tests,
            "oracle_min_tests": spec.oracle.min_tests,
            "expensive": spec.expensive,
            "sandbox_copy": list(spec.sandbox_copy),
            "sandbox_dependencies": [
                {"source": d.source, "target": d.target} for d in spec.sandbox_dependencies
            ],
            "dependency_manifest_digest": self.dependency_manifest_digest,
            "oracle_digest": self.oracle.digest,
            "oracle_command_digest": self.oracle.command_digest,
            "oracle_manifest_digest": self.oracle.manifest_digest,
            "oracle_files": self.oracle.manifest(),
            "resolved_sha": self.resolved_sha,
            "expected_tests_digest": self.expected_tests_digest,
            # Only when set: the digests of every other task stay what they were.
            **({"impossible": True} if spec.impossible else {}),
        }

    def runtime_records(self) -> list[dict[str, str]]:
        """Each runtime's name, exact version and tree digest (binding, lock subject, rows)."""
        return [runtime.record() for runtime in self.runtimes]

    @property
    def binding_digest(self) -> str:
        return canonical_digest(self.to_json())

    @property
    def expected_tests_digest(self) -> str | None:
        """``canonical_digest`` of the lock entry that judges this task, or None."""
        return canonical_digest(self.expected_tests.to_json()) if self.expected_tests is not None else None

    @property
    def lock_subject(self) -> dict[str, Any]:
        """What the task's expected test ids depend on (``tasks.expected_tests.SUBJECT_KEYS``)."""
        spec = self.spec
        subject = {
            "resolved_sha": self.resolved_sha,
            "setup_digest": spec.setup_digest,
            "verify_digest": spec.verify_digest,
            "oracle_digest": self.oracle.digest,
            "dependency_manifest_digest": self.dependency_manifest_digest,
            "sandbox_copy": list(spec.sandbox_copy),
            "sandbox_dependencies": [
                {"source": d.source, "target": d.target} for d in spec.sandbox_dependencies
            ],
            "reference_patch_sha256": self.reference_sha256,
            "impossible": spec.impossible,
        }
        if self.runtimes:  # expected_tests.OPTIONAL_SUBJECT_KEYS: absent without runtimes
            subject["runtimes"] = self.runtime_records()
        return subject  # keys: tasks.expected_tests.SUBJECT_KEYS (a unit test keeps them in sync)


def _is_path_pairs(value: object) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(pair, tuple)
        and len(pair) == 2
        and isinstance(pair[0], Path)
        and pair[0].is_absolute()
        and isinstance(pair[1], str)
        for pair in value
    )


def bind_tasks(specs: Sequence[TaskSpec], *, stale_locks: str = "refuse") -> tuple[TaskBinding, ...]:
    """Resolve every spec's repository and ref once, capture its oracle and check its sandbox sources.

    Bundles are cloned (``--mirror``) at most once into the content-addressed cache; each
    dependency tree is hashed at most once. Each task gets its entry of the expected-tests lock
    beside its task file; a stale entry is an error (``stale_locks="refuse"``) or is left out
    (``"ignore"``: the self-check, which records a fresh one). Raises ``TaskFileError`` listing
    every task that cannot be bound.
    """
    errors: list[TaskSpecError] = []
    repos: dict[Path, RepoHandle | str] = {}
    shas: dict[tuple[Path, str], str | None] = {}
    sizes: dict[tuple[Path, str], tuple[int, int] | str] = {}
    trees: dict[Path, TreeManifest | str] = {}
    locks: dict[Path, dict[str, ExpectedTests] | None] = {}
    provisioned: dict[tuple[str, str], Provisioned | str] = {}
    bindings = []
    for spec in specs:
        location = spec.repo_location
        key = location.resolve()
        if key not in repos:
            repos[key] = materialize_repo(location)
        repo = repos[key]
        if isinstance(repo, str):
            errors.append(TaskSpecError(spec.source_file, spec.task_id, "repo", repo))
            continue
        if (repo.path, spec.ref) not in shas:
            shas[(repo.path, spec.ref)] = resolve_ref(repo.path, spec.ref)
        sha = shas[(repo.path, spec.ref)]
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
        if (repo.path, sha) not in sizes:
            sizes[(repo.path, sha)] = tree_size(repo.path, sha)
        size = sizes[(repo.path, sha)]
        if isinstance(size, str):
            errors.append(TaskSpecError(spec.source_file, spec.task_id, "repo", size))
            continue
        problem = _tree_over_caps(*size)
        if problem is not None:
            errors.append(TaskSpecError(spec.source_file, spec.task_id, "repo", problem))
            continue
        task_errors: list[TaskSpecError] = []
        oracle: OracleSnapshot | None = None
        try:
            oracle = capture_oracle(spec.oracle, task_file_dir=spec.task_dir)
        except OracleCaptureError as err:
            task_errors += [
                TaskSpecError(spec.source_file, spec.task_id, f"oracle.{k}", m) for k, m in err.problems
            ]
        sources = _sandbox_sources(spec, repo, trees)
        if oracle is None or isinstance(sources, list):
            errors += task_errors + (sources if isinstance(sources, list) else [])
            continue
        try:
            reference_sha256 = _reference_sha256(spec)
        except ValueError as err:
            errors.append(TaskSpecError(spec.source_file, spec.task_id, "reference_patch", str(err)))
            continue
        runtimes = _provisioned(spec, provisioned)
        if isinstance(runtimes, list):
            errors += runtimes
            continue
        binding = TaskBinding(
            spec,
            repo.path,
            repo.identity,
            sha,
            oracle,
            copy_paths=sources.copy_paths,
            dependency_mounts=sources.dependency_mounts,
            dependency_manifest_digest=sources.dependency_manifest_digest,
            reference_sha256=reference_sha256,
            runtimes=runtimes,
            runtime_bin=bin_dir(runtimes, cache=cache_root()) if runtimes else None,
            tree_entries=size[0],
            tree_bytes=size[1],
        )
        try:
            bindings.append(_with_expected_tests(binding, locks, stale_locks=stale_locks))
        except TaskSpecError as err:
            errors.append(err)
    if errors:
        raise TaskFileError(errors)
    return tuple(bindings)


def _provisioned(
    spec: TaskSpec, cache: dict[tuple[str, str], Provisioned | str]
) -> tuple[Provisioned, ...] | list[TaskSpecError]:
    """The task's runtimes, provisioned (each (name, version) once per ``bind_tasks`` call), or why not."""
    found, errors = [], []
    for name, version in spec.runtimes:
        if (name, version) not in cache:
            try:
                cache[(name, version)] = provision(name, version, cache=cache_root())
            except (RuntimeProvisionError, OSError) as err:
                cache[(name, version)] = str(err)
        runtime = cache[(name, version)]
        if isinstance(runtime, str):
            errors.append(TaskSpecError(spec.source_file, spec.task_id, f"runtimes.{name}", runtime))
        else:
            found.append(runtime)
    return errors if errors else tuple(found)


def _tree_over_caps(entries: int, total_bytes: int) -> str | None:
    """Why a commit's tree is too large to run (every cell would be over the workspace caps), or None."""
    if entries > MAX_TASK_ENTRIES:
        return (
            f"the commit's tree has {entries:,} entries, over the cap of {MAX_TASK_ENTRIES:,} a task "
            f"may have (workspace.snapshot.MAX_TASK_ENTRIES: half the workspace cap, the rest is the "
            f"agent's room)"
        )
    if total_bytes > MAX_TASK_BYTES:
        return (
            f"the commit's tree holds {total_bytes:,} bytes, over the cap of {MAX_TASK_BYTES:,} a task may "
            f"hold (workspace.snapshot.MAX_TASK_BYTES: half the workspace cap, the rest is the agent's room)"
        )
    return None


def _reference_sha256(spec: TaskSpec) -> str | None:
    """sha256 of the task's reference patch (``ValueError`` if it can no longer be read)."""
    if spec.reference_patch is None:
        return None
    data = read_beneath(spec.task_dir, spec.reference_patch, max_bytes=MAX_REFERENCE_PATCH_BYTES)
    return hashlib.sha256(data).hexdigest()


def _with_expected_tests(
    binding: TaskBinding, locks: dict[Path, dict[str, ExpectedTests] | None], *, stale_locks: str
) -> TaskBinding:
    """``binding`` with its lock entry (``locks`` caches each lock file by path; an unusable lock
    is reported once, for the first task that needs it, and then reads as absent)."""
    spec = binding.spec
    path = lock_path(spec.source_file)
    if path not in locks:
        locks[path] = None
        locks[path] = load_lock(path)
    entry = (locks[path] or {}).get(spec.task_id)
    if entry is None:
        return binding
    changed = subject_changes(entry.subject, binding.lock_subject)
    if not changed:
        return replace(binding, expected_tests=entry)
    if stale_locks == "ignore":
        return binding
    raise TaskSpecError(
        path,
        spec.task_id,
        "subject",
        f"stale: the expected tests were recorded for another definition of this task "
        f"({', '.join(changed)} changed); " + REFRESH_HINT.format(task_file=spec.source_file),
    )


class _SandboxSources(NamedTuple):
    """A task's checked working-tree sources: the ``TaskBinding`` fields of the same names."""

    copy_paths: tuple[tuple[Path, str], ...] = ()
    dependency_mounts: tuple[tuple[Path, str], ...] = ()
    dependency_manifest_digest: str | None = None


def _sandbox_sources(
    spec: TaskSpec, repo: RepoHandle, trees: dict[Path, TreeManifest | str]
) -> _SandboxSources | list[TaskSpecError]:
    """The working-tree paths ``spec`` copies and mounts, checked on disk, or every problem found.

    ``trees`` caches each dependency directory's manifest (or why it has none) across the tasks
    of one ``bind_tasks`` call: corpora share one dependency list between many tasks.
    """

    def error(key: str, message: str) -> TaskSpecError:
        return TaskSpecError(spec.source_file, spec.task_id, key, message)

    declared = [
        key
        for key, paths in (
            ("sandbox_copy", spec.sandbox_copy),
            ("sandbox_dependencies", spec.sandbox_dependencies),
        )
        if paths
    ]
    if not declared:
        return _SandboxSources()
    worktree = repo.worktree
    if worktree is None:
        why = _NO_WORKTREE[repo.kind]
        where = spec.repo_location
        return [error(k, f"needs a repository with a working tree; {why} ({where})") for k in declared]
    errors: list[TaskSpecError] = []
    copies = []
    for i, declared_copy in enumerate(spec.sandbox_copy):
        try:
            copies.append((worktree_source(worktree, declared_copy, directory_only=False), declared_copy))
        except WorktreeError as err:
            errors.append(error(f"sandbox_copy[{i}]", str(err)))
    mounts, rows, entry_count, total_bytes = [], [], 0, 0
    for i, dependency in enumerate(spec.sandbox_dependencies):
        key = f"sandbox_dependencies[{i}].source"
        try:
            source = worktree_source(worktree, dependency.source, directory_only=True)
            if source not in trees:
                trees[source] = _manifest_or_problem(source)
        except WorktreeError as err:
            errors.append(error(key, str(err)))
            continue
        tree = trees[source]
        if isinstance(tree, str):
            errors.append(error(key, tree))
            continue
        mounts.append((source, dependency.target))
        rows += [[dependency.target, *entry] for entry in tree.entries]
        entry_count += tree.entry_count
        total_bytes += tree.total_bytes
    if entry_count > MAX_DEPENDENCY_ENTRIES or total_bytes > MAX_DEPENDENCY_BYTES:
        errors.append(
            error(
                "sandbox_dependencies",
                f"the dependency trees hold {entry_count} entries and {total_bytes} bytes together; "
                f"the limits are {MAX_DEPENDENCY_ENTRIES} entries and {MAX_DEPENDENCY_BYTES} bytes",
            )
        )
    if errors:
        return errors
    rows.sort(key=lambda row: (row[0], row[1]))  # by (target, path) only: later fields may be None
    digest = canonical_digest(rows) if mounts else None
    return _SandboxSources(tuple(copies), tuple(mounts), digest)


def _manifest_or_problem(source: Path) -> TreeManifest | str:
    try:
        return tree_manifest(source)
    except WorktreeError as err:
        return str(err)


# ── selection ──────────────────────────────────────────────────────────────


def select_tasks(
    specs: Sequence[TaskSpec], *, include_expensive: bool
) -> tuple[tuple[TaskSpec, ...], tuple[str, ...]]:
    """(selected specs in order, ids of expensive tasks skipped); the report lists the skipped."""
    selected = tuple(s for s in specs if include_expensive or not s.expensive)
    skipped = tuple(s.task_id for s in specs if s.expensive and not include_expensive)
    return selected, skipped
