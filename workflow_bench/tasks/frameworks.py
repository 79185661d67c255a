"""Which test framework runs a repository's tests, and the verify and oracle lines for it.

The frameworks themselves are the registry's (``workflow_bench.frameworks``: one module per
runner, ``FRAMEWORKS`` re-exported here); this module owns what a task draft does with them:
``detect_framework`` (the ecosystem of the fix's test files, then that ecosystem's own detection
from the repository at the base commit), ``visible_tests``, ``runner_options`` and
``overlay_oracle``.

**How a fix's test file judges the agent's code.** A fix's test files import the package the way
the repository lays it out (``from parse import …``, ``import { x } from "../src/x"``,
``conftest.py`` fixtures, helpers beside them). The oracle therefore runs them exactly where they
live upstream: ``overlay_oracle`` copies the workspace (the agent's code, without ``.git`` and the
dependency mounts, which are linked back) into a private directory under the run's ``/tmp``, lays
the staged oracle files over it at their repository paths, and runs the framework there. Test ids
are then the repository's own (``tests/test_x.py::test_y``), the same as verify's and as a
SWE-bench instance's, and the staged copies never touch the read-only workspace. The cost is one
copy of the working tree per oracle run (``/tmp`` holds 512 MiB per run).

Pure functions over a ``TreeView`` and the fix's bytes; no process runs here. Callers:
``tasks.new``, ``tasks.swebench``, tests.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from workflow_bench.frameworks import (
    ECOSYSTEMS,
    FRAMEWORKS,
    Detection,
    Ecosystem,
    Framework,
    FrameworkError,
    ecosystem_of,
)
from workflow_bench.frameworks._python import config_text

from .fixdiff import TreeView

__all__ = [
    "ECOSYSTEMS",
    "FRAMEWORKS",
    "Detection",
    "Ecosystem",
    "Framework",
    "FrameworkError",
    "detect_framework",
    "ecosystem_of",
    "facts",
    "overlay_oracle",
]


def detect_framework(
    base: TreeView, tests: Sequence[tuple[str, bytes]], *, facts: Mapping[str, object] | None = None
) -> Detection:
    """The framework that runs the fix's test files, and why; ``FrameworkError`` if none fits.

    ``facts``: what the ecosystem's detection reads of the working tree (``facts``: e.g. the
    major version of the vitest installed there; vitest 3 added the reporter API)."""
    ecosystems = {e for path, _ in tests if (e := ecosystem_of(path)) is not None}
    labels = ", ".join(e.label for e in ECOSYSTEMS.values())
    if not ecosystems:
        raise FrameworkError(
            f"none of the fix's test files is {labels} "
            f"({', '.join(p for p, _ in tests[:6])}): name the test files that exercise the fix "
            "with --oracle-test, or give --test-command"
        )
    if len(ecosystems) > 1:
        raise FrameworkError(
            f"the fix's test files are {' and '.join(sorted(ecosystems))}; one task runs one framework: "
            "give --framework (and --exclude the other side's files)"
        )
    (name,) = ecosystems
    return ECOSYSTEMS[name].detect(FRAMEWORKS, base, tests, facts or {})


def facts(ecosystem: str, repo: Path, trees: Sequence[str]) -> Mapping[str, object]:
    """What ``ecosystem``'s detection reads of the working tree (its dependency trees ``trees``)."""
    hook = ECOSYSTEMS[ecosystem].facts if ecosystem in ECOSYSTEMS else None
    return hook(repo, trees) if hook is not None else {}


def pytest_config_text(base: TreeView) -> str:
    """Every pytest configuration section of the base, concatenated (for option checks)."""
    return config_text(base)


def runner_options(framework: Framework, base: TreeView) -> tuple[tuple[str, ...], str | None]:
    """Flags the runner needs in the sandbox, and why (None: none needed): the framework's own
    ``options`` (pytest: ``--no-cov`` when the repository's addopts enable coverage)."""
    return framework.options(base) if framework.options is not None else ((), None)


def python_import_roots(base: TreeView, source_paths: Sequence[str]) -> tuple[str, ...]:
    """The import roots the ecosystem's ``import_roots`` finds (Python: ``src`` in a src layout)."""
    hook = ECOSYSTEMS["python"].import_roots
    return hook(base, source_paths) if hook is not None else ()


def visible_tests(
    framework: Framework, base: TreeView, *, modified_tests: Sequence[str], source_paths: Sequence[str]
) -> tuple[tuple[str, ...], str]:
    """The repository's own tests for what the fix touches, as they are at the base, and why.

    In order: the fix's modified test files (their base versions); else test files named after
    a touched module (``test_<stem>.py``, ``<stem>.test.ts``); else the test files in the
    directories of the fix's new tests. Empty if none exists.
    """
    runnable = [p for p in base.paths if framework.runs(p, _bytes_to_decide(framework, base, p))]
    existing = [p for p in modified_tests if p in set(runnable)]
    if existing:
        return tuple(sorted(existing)), "the fix's modified test files, as they are at the base"
    stems = {_module_stem(p) for p in source_paths} - {""}
    named = [p for p in runnable if any(stem in PurePosixPath(p).name for stem in stems)]
    if named:
        return tuple(
            sorted(named)
        ), f"test files named after the touched modules ({', '.join(sorted(stems))})"
    return (), "no test file of the repository covers the touched modules"


def _bytes_to_decide(framework: Framework, base: TreeView, path: str) -> bytes:
    """A file's bytes when the framework needs them to decide (node-test reads the imports of a
    ``test/`` script that is not named ``*.test.*``), else nothing (no git process per file)."""
    if framework.reads_bytes is None or not framework.reads_bytes(path):
        return b""
    return base.read(path) or b""


def _module_stem(path: str) -> str:
    pure = PurePosixPath(path)
    stem = pure.parent.name if pure.stem in ("__init__", "index", "mod") else pure.stem
    return stem if len(stem) >= 3 else ""


def test_command_problem(command: str) -> str | None:
    """Why a ``--test-command`` cannot run test files (None: it can): it must say where they go."""
    if "{files}" not in command:
        return "--test-command must contain {files} (where the test files go)"
    return None


def overlay_oracle(command: str, *, linked: Sequence[str]) -> str:
    """``command`` run in a private copy of the workspace with the staged oracle files laid over it.

    ``linked``: the dependency mount targets (``node_modules``, ``.wfbench-deps``), not copied but
    linked back to their read-only mounts. Everything runs in the sandbox as the oracle's command.
    """
    excludes = " ".join(f"--exclude=./{shlex.quote(t)}" for t in (".git", *linked))
    links = "".join(
        f' && mkdir -p "$w"/{shlex.quote(str(PurePosixPath(t).parent))}'
        * (PurePosixPath(t).parent.name != "")
        + f' && ln -s /workspace/{shlex.quote(t)} "$w"/{shlex.quote(t)}'
        for t in linked
    )
    # Through an archive file, not a pipe: /bin/sh has no pipefail, and a copy cut short by an
    # unreadable file must fail the run, not judge a partial tree.
    return (
        'w="$(mktemp -d)" && '
        f'tar -C /workspace --anchored {excludes} -cf "$w.tar" . && '
        'tar -C "$w" -xf "$w.tar" && rm -f "$w.tar" && '
        f'cp -Rf "$WORKFLOW_BENCH_ORACLE_ROOT"/. "$w"/{links} && cd "$w" && {command}'
    )
