"""Which test framework runs a repository's tests, and the verify and oracle lines for it.

Owns ``FRAMEWORKS`` (one ``Framework`` per supported runner: which files it runs and the one
command line it runs them with, stock options plus the harness's reporting adapter or JUnit, as in
the README's table), ``detect_framework`` (from the repository at the base commit and the fix's
test files: what imports what, which tools the package manifest names) and ``overlay_oracle``.

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

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from types import MappingProxyType

from .fixdiff import TreeView

Ecosystem = str  # "python" | "node"


class FrameworkError(ValueError):
    """No framework could be chosen, or the chosen one cannot run these files; the message says why."""


_PY_TEST_MODULE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
_JS_TEST_FILE = re.compile(r"\.(test|spec)\.[cm]?[jt]sx?$")
_JS_SOURCE = re.compile(r"\.[cm]?[jt]sx?$")


@dataclass(frozen=True, slots=True)
class Framework:
    """One test runner: the files it runs and the command that runs them (``{files}`` filled in)."""

    name: str
    ecosystem: Ecosystem
    runs: Callable[[str, bytes], bool]
    """Does this framework run ``path`` (with these bytes) as a test file?"""
    template: str
    """The command, ``{files}`` standing for the shell-quoted test files; ``{pythonpath}`` for the
    import roots of a Python repository."""
    why: str
    """One line for the README and the decision log: the options used and what reports the tests."""

    def command(
        self, files: Sequence[str], *, pythonpath: Sequence[str] = (), options: Sequence[str] = ()
    ) -> str:
        """The command for ``files``; ``options`` go before the files (the runner's own flags)."""
        quoted = " ".join(shlex.quote(f) for f in (*options, *files))
        prefix = f"PYTHONPATH={':'.join(pythonpath)} " if pythonpath else ""
        return self.template.format(files=quoted, pythonpath=prefix)


def _python_module(path: str, _: bytes) -> bool:
    return bool(_PY_TEST_MODULE.search(path))


def _js_test(path: str, _: bytes) -> bool:
    return bool(_JS_TEST_FILE.search(path))


def _node_test(path: str, data: bytes) -> bool:
    return bool(_JS_TEST_FILE.search(path)) or (
        bool(_JS_SOURCE.search(path)) and b"node:test" in data and "/test" in f"/{path}"
    )


FRAMEWORKS: Mapping[str, Framework] = MappingProxyType(
    {
        f.name: f
        for f in (
            Framework(
                "pytest",
                "python",
                _python_module,
                '{pythonpath}python3 -B "$WORKFLOW_BENCH_PYTEST" -q -p no:cacheprovider --rootdir=. {files}',
                "pytest through the harness's streaming adapter ($WORKFLOW_BENCH_PYTEST): one result per "
                "test as it finishes, ids are pytest node ids relative to the repository",
            ),
            Framework(
                "unittest",
                "python",
                _python_module,
                '{pythonpath}python3 -B "$WORKFLOW_BENCH_UNITTEST" {files}',
                "unittest through the harness's adapter ($WORKFLOW_BENCH_UNITTEST)",
            ),
            Framework(
                "vitest",
                "node",
                _js_test,
                "./node_modules/.bin/vitest run --reporter=default "
                '--reporter="$WORKFLOW_BENCH_VITEST_REPORTER" {files}',
                "the repository's own vitest (node_modules) with the harness's streaming reporter",
            ),
            Framework(
                "vitest-junit",
                "node",
                _js_test,
                "./node_modules/.bin/vitest run --reporter=default --reporter=junit "
                '--outputFile.junit="$WORKFLOW_BENCH_JUNIT" {files}',
                "the repository's own vitest (< 3: no custom reporter API) writing JUnit XML",
            ),
            Framework(
                "jest",
                "node",
                _js_test,
                "./node_modules/.bin/jest --ci --reporters=default "
                '--reporters="$WORKFLOW_BENCH_JEST_REPORTER" '
                "{files}",
                "the repository's own jest (node_modules) with the harness's streaming reporter",
            ),
            Framework(
                "node-test",
                "node",
                _node_test,
                "node --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit "
                '--test-reporter-destination="$WORKFLOW_BENCH_JUNIT" {files}',
                "node's built-in runner (node --test) writing JUnit XML",
            ),
        )
    }
)


def ecosystem_of(path: str) -> Ecosystem | None:
    if path.endswith(".py"):
        return "python"
    if _JS_SOURCE.search(path):
        return "node"
    return None


@dataclass(frozen=True, slots=True)
class Detection:
    framework: Framework
    reasons: tuple[str, ...]


def detect_framework(
    base: TreeView, tests: Sequence[tuple[str, bytes]], *, vitest_major: int | None
) -> Detection:
    """The framework that runs the fix's test files, and why; ``FrameworkError`` if none fits.

    ``vitest_major``: the major version of the vitest installed in the working tree, if any
    (vitest 3 added the reporter API the streaming reporter needs).
    """
    ecosystems = {e for path, _ in tests if (e := ecosystem_of(path)) is not None}
    if not ecosystems:
        raise FrameworkError(
            f"none of the fix's test files is Python or JavaScript/TypeScript "
            f"({', '.join(p for p, _ in tests[:6])}); give --test-command"
        )
    if len(ecosystems) > 1:
        raise FrameworkError(
            f"the fix's test files are {' and '.join(sorted(ecosystems))}; one task runs one framework: "
            "give --framework (and --exclude the other side's files)"
        )
    if ecosystems == {"python"}:
        return _python(base, tests)
    return _node(base, tests, vitest_major=vitest_major)


def _python(base: TreeView, tests: Sequence[tuple[str, bytes]]) -> Detection:
    for path, data in tests:
        if re.search(rb"^\s*(import pytest|from pytest|@pytest\.)", data, re.MULTILINE):
            return Detection(FRAMEWORKS["pytest"], (f"{path} uses pytest",))
    config = next(
        (
            f"{name} configures pytest"
            for name, marker in (
                ("pytest.ini", ""),
                ("pyproject.toml", "[tool.pytest"),
                ("setup.cfg", "[tool:pytest]"),
                ("tox.ini", "[pytest]"),
            )
            if base.has(name) and marker in base.text(name)
        ),
        None,
    )
    if config is None and any(PurePosixPath(p).name == "conftest.py" for p in base.paths):
        config = "the repository has a conftest.py"
    if config is not None:
        return Detection(FRAMEWORKS["pytest"], (config,))
    if any(re.search(rb"^\s*(import unittest|from unittest)", d, re.MULTILINE) for _, d in tests):
        return Detection(
            FRAMEWORKS["unittest"], ("the test files use unittest and nothing configures pytest",)
        )
    return Detection(FRAMEWORKS["pytest"], ("plain test functions: pytest collects them",))


def _node(base: TreeView, tests: Sequence[tuple[str, bytes]], *, vitest_major: int | None) -> Detection:
    manifest = _package_json(base)
    declared: set[str] = set()
    for key in ("devDependencies", "dependencies", "peerDependencies"):
        section = manifest.get(key)
        if isinstance(section, dict):
            declared.update(str(name) for name in section)
    scripts = manifest.get("scripts")
    script = str(scripts.get("test", "")) if isinstance(scripts, dict) else ""
    imports_vitest = any(re.search(rb"""from\s+['"]vitest['"]""", d) for _, d in tests)
    # What the test files import decides first: package.json often names several runners.
    if not imports_vitest and any(b"node:test" in d for _, d in tests):
        return Detection(FRAMEWORKS["node-test"], ("the test files import node:test",))
    if imports_vitest or "vitest" in declared or "vitest" in script:
        why = "the test files import vitest" if imports_vitest else "package.json names vitest"
        if vitest_major is not None and vitest_major < 3:
            return Detection(FRAMEWORKS["vitest-junit"], (why, f"vitest {vitest_major} < 3: JUnit XML"))
        return Detection(FRAMEWORKS["vitest"], (why,))
    if "jest" in declared or re.search(r"\bjest\b", script):
        return Detection(FRAMEWORKS["jest"], ("package.json names jest",))
    if "node --test" in script or "borp" in script:
        return Detection(FRAMEWORKS["node-test"], ("package.json's test script runs node --test",))
    raise FrameworkError(
        "cannot tell which JavaScript test runner runs the fix's tests (no vitest, jest or node:test); "
        f"give --framework ({', '.join(FRAMEWORKS)}) or --test-command"
    )


def _package_json(base: TreeView) -> dict[str, object]:
    if not base.has("package.json"):
        return {}
    try:
        data = json.loads(base.text("package.json"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def pytest_config_text(base: TreeView) -> str:
    """Every pytest configuration section of the base, concatenated (for option checks)."""
    return "\n".join(base.text(name) for name in ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"))


def runner_options(framework: Framework, base: TreeView) -> tuple[tuple[str, ...], str | None]:
    """Flags the runner needs in the sandbox, and why (None: none needed).

    Coverage (pytest-cov's ``--cov`` in the repository's ``addopts``) writes its data file into
    the working directory, which is read-only while verify runs: pytest then stops with an
    internal error before reporting. ``--no-cov`` turns it off; its options still parse, so the
    dependency tree must hold pytest-cov.
    """
    if framework.name == "pytest" and re.search(r"addopts\s*=.*--cov", pytest_config_text(base)):
        return ("--no-cov",), (
            "the repository's pytest addopts enable coverage (--cov), which writes into the read-only "
            "workspace: --no-cov (the dependency tree must still hold pytest-cov for its options to parse)"
        )
    return (), None


def python_import_roots(base: TreeView, source_paths: Sequence[str]) -> tuple[str, ...]:
    """``src`` when the touched code lives in a src layout (``src/<package>/``), else nothing: the
    repository root is on ``sys.path`` already (the working directory)."""
    if any(p.startswith("src/") and p.endswith(".py") for p in source_paths):
        return ("src",)
    return ()


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
    if framework.name != "node-test" or _JS_TEST_FILE.search(path) or "/test" not in f"/{path}":
        return b""
    return base.read(path) or b"" if _JS_SOURCE.search(path) else b""


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
