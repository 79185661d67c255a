"""The two records a framework module declares: its ``Ecosystem`` (language-level facts shared by
its runners) and its ``Framework`` (one runner). Pure data plus small pure functions.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeAlias


class FrameworkError(ValueError):
    """No framework could be chosen, or the chosen one cannot run these files; the message says why."""


class Tree(Protocol):
    """What detection reads of the base commit (``tasks.fixdiff.TreeView`` is one)."""

    @property
    def paths(self) -> Sequence[str]: ...

    def has(self, path: str) -> bool: ...

    def text(self, path: str) -> str: ...

    def read(self, path: str) -> bytes | None: ...


SentinelWriter = Callable[[bytes, Sequence[str]], "bytes | None"]
"""``(file bytes, names)`` → the file with sentinel tests appended (None: this file cannot carry
them). ``names`` are five fresh tokens: a prefix, then two must-fail (assertion library, plain),
one must-pass and one must-skip test, in ``judging.sentinels.MUST`` order."""


@dataclass(frozen=True, slots=True)
class Framework:
    """One test runner: the files it runs and the command that runs them (``{files}`` filled in)."""

    name: str
    ecosystem: str
    runs: Callable[[str, bytes], bool]
    """Does this framework run ``path`` (with these bytes) as a test file?"""
    template: str
    """The command, ``{files}`` standing for the shell-quoted test files; ``{pythonpath}`` for the
    import roots of a Python repository."""
    why: str
    """One line for the README and the decision log: the options used and what reports the tests."""
    needs_tree: str | None = None
    """The dependency tree (a ``sandbox_dependencies`` target) without which it cannot run."""
    kit: Mapping[str, str] = field(default_factory=dict)
    """Adapters it runs through: environment variable → file in ``frameworks/kit`` (staged
    read-only with the judge's kit for every verify and oracle run)."""
    runtime: tuple[str, str] | None = None
    """(runtime, version) a task gets by default (``runtimes:``): the toolchain the harness
    provisions, so a task does not depend on what the host has installed."""
    targets: Callable[[Sequence[str]], Sequence[str]] | None = None
    """Test files → what the command names (Go: the package directories); None: the files."""
    options: Callable[[Tree], tuple[tuple[str, ...], str | None]] | None = None
    """Flags the runner needs in the sandbox given the base's configuration, and why."""
    reads_bytes: Callable[[str], bool] | None = None
    """Whether ``runs`` needs a file's bytes to decide on ``path`` (None: never; no git process
    per file of the base)."""
    sentinels: tuple[re.Pattern[str], SentinelWriter] | None = None
    """(staged file names, writer): sentinels in this runner's own form, for files its ecosystem's
    built-in block would break (tape's tests must end); the writer declines (None) another's file."""

    def command(
        self, files: Sequence[str], *, pythonpath: Sequence[str] = (), options: Sequence[str] = ()
    ) -> str:
        """The command for ``files``; ``options`` go before the files (the runner's own flags)."""
        named = self.targets(files) if self.targets is not None else files
        quoted = " ".join(shlex.quote(f) for f in (*options, *named))
        prefix = f"PYTHONPATH={':'.join(pythonpath)} " if pythonpath else ""
        return self.template.format(files=quoted, pythonpath=prefix)


@dataclass(frozen=True, slots=True)
class Detection:
    framework: Framework
    reasons: tuple[str, ...]


Detector: TypeAlias = Callable[
    [Mapping[str, Framework], Tree, Sequence[tuple[str, bytes]], Mapping[str, object]], Detection
]
"""(the registry, the base, the fix's test files with their bytes, facts) → the framework, and why."""


@dataclass(frozen=True, slots=True)
class Ecosystem:
    """A language's facts every one of its frameworks shares."""

    name: str
    label: str
    """How an error message names it ("Python", "JavaScript/TypeScript", "Go")."""
    source: re.Pattern[str]
    """A path of this language (which ecosystem a fix's test file belongs to)."""
    detect: Detector
    """Which of the registry's frameworks runs these test files (from the base, the files and the
    ``facts``), and why; ``FrameworkError`` if none."""
    test_config: tuple[tuple[str, str], ...] = ()
    """(file-name pattern, why): the files that configure its test runs or run code when they
    start; the oracle restores them to the task's own (``judging.test_config``)."""
    trees: tuple[str, ...] = ()
    """Where a working tree's dependency trees usually are: mounted when present."""
    tree_hint: str = ""
    """How to build its dependency tree (``{repo}`` filled in), for the refusal that lacks one."""
    sentinel_kind: str | None = None
    """``judging.sentinels``' built-in block for its files (``python``, ``javascript``), or None."""
    sentinel_file: re.Pattern[str] | None = None
    """The staged file names a ``sentinel_writer`` seals."""
    sentinel_writer: SentinelWriter | None = None
    """Sentinels in its own language, for an ecosystem without a built-in block."""
    facts: Callable[[Path, Sequence[str]], Mapping[str, object]] | None = None
    """Facts detection needs from the working tree (repo, dependency tree dirs), e.g. vitest's major."""
    import_roots: Callable[[Tree, Sequence[str]], tuple[str, ...]] | None = None
    """Import roots for ``{pythonpath}`` from the base and the fix's source paths."""
    typecheck: Callable[[Path, Tree, Sequence[tuple[str, str]]], str | None] | None = None
    """A type-check command verify runs first (None: none), from repo, base and dependency trees."""


def project_at_root(
    framework: str,
    *,
    manifest: str,
    project: str,
    language: str,
    reason: str,
    runnable: re.Pattern[str] | None = None,
    not_runnable: str = "",
) -> Detector:
    """An ecosystem's ``detect`` for one framework that runs a project whose ``manifest`` is at the
    repository root (go.mod, Cargo.toml, pom.xml): refused without it, and, with ``runnable``,
    unless one of the fix's test files matches it (``not_runnable``: the refusal, naming what it
    must be)."""

    def detect(
        registry: Mapping[str, Framework],
        base: Tree,
        tests: Sequence[tuple[str, bytes]],
        _facts: Mapping[str, object],
    ) -> Detection:
        if not base.has(manifest):
            raise FrameworkError(
                f"the fix's {language} test files are not in a {project} (no {manifest} at the "
                "repository root): give --test-command"
            )
        if runnable is not None and not any(runnable.match(path) for path, _ in tests):
            raise FrameworkError(not_runnable)
        return Detection(registry[framework], (reason,))

    return detect
