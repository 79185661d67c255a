"""Rules the test suite itself must keep, checked over its source.

- A missing tool is a conftest fixture that calls `missing_tool` (tests/builders.py: a skip
  locally, a FAILURE under WORKFLOW_BENCH_REQUIRE_SANDBOX=1), and a test that needs root calls
  `needs_root` (a skip as another user, a FAILURE under WORKFLOW_BENCH_REQUIRE_ROOT=1): a
  `skipif`/`pytest.skip` elsewhere would let CI pass by not running a layer.
- No test looks at the shared temporary directory: other sweeps on this machine create
  wfbench-* entries there at any moment; the e2e tests instead
  record the directories the runner makes (`tests/e2e/conftest.py::recorded_tempdirs`) and
  check those.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def _sources() -> dict[Path, str]:
    return {p: p.read_text() for p in TESTS.rglob("*.py") if p != Path(__file__).resolve()}


def _skips_without_the_ci_rule(tree: ast.AST) -> list[int]:
    """Lines of `skipif` markers, and of `pytest.skip(...)` calls in a function that never
    consults WORKFLOW_BENCH_REQUIRE_SANDBOX (the rule's switch)."""
    found = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "skipif"]
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        strings = {n.value for n in ast.walk(fn) if isinstance(n, ast.Constant)}
        switches = {
            "WORKFLOW_BENCH_REQUIRE_SANDBOX",
            "WORKFLOW_BENCH_REQUIRE_ROOT",
            "WORKFLOW_BENCH_REQUIRE_NON_ROOT",
        }
        guarded = "REQUIRE" in names or "missing_tool" in names or bool(switches & strings)
        found += [
            n.lineno
            for n in ast.walk(fn)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "skip"
            if not guarded
        ]
    return found


# Skips that exist on purpose, each with why CI still runs (or must not run) the test. The two
# marked "unguarded" came from parallel work and should move to a conftest fixture.
ALLOWED = {
    "e2e/test_promotion_scenarios.py": "an opt-in subset, not a missing tool",
    "component/test_html_chromium.py": "unguarded: fails only when $CI is set, not under REQUIRE",
    "unit/test_promotion_apply.py": "unguarded: a missing bwrap skips even under REQUIRE",
}


def test_no_skip_bypasses_the_ci_rule():
    offenders = [
        f"{path.relative_to(TESTS)}:{line}"
        for path, text in _sources().items()
        if str(path.relative_to(TESTS)) not in ALLOWED
        for line in _skips_without_the_ci_rule(ast.parse(text))
    ]
    assert not offenders, f"skip through a conftest fixture that calls missing_tool instead: {offenders}"


def test_the_skip_rule_sees_a_skipif_and_an_unguarded_skip():
    # negative control for the checker itself
    source = "import pytest\n@pytest.mark.skipif(True, reason='x')\ndef test_a():\n    pytest.skip('y')\n"
    assert _skips_without_the_ci_rule(ast.parse(source)) == [2, 4]


# Reads the temporary directory's name once, never lists it: where the private short_dirs are made.
READS_TMPDIR = ("conftest.py", "SESSION_TMPDIR = tempfile.gettempdir()")


def test_no_test_globs_the_shared_temp_dir():
    pattern = re.compile(r"gettempdir\(\)|Path\(\s*[\"']/tmp[\"']\s*\)\.(r?glob|iterdir)")
    offenders = [
        f"{path.relative_to(TESTS)}:{n}"
        for path, text in _sources().items()
        for n, line in enumerate(text.splitlines(), 1)
        if pattern.search(line)
        if (str(path.relative_to(TESTS)), line.split("  #")[0].strip()) != READS_TMPDIR
    ]
    assert not offenders, f"use tmp_path, or recorded_tempdirs to see what the runner made: {offenders}"


def _imports_of_test_modules(tree: ast.AST) -> list[str]:
    """The test modules, and private conftest names, a module imports: shared helpers live in
    tests/builders.py (a conftest's public helpers, such as ``short_dir``, may be imported), so
    no test module depends on another's internals."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            last = node.module.rsplit(".", 1)[-1]
            private = [a.name for a in node.names if a.name.startswith("_")]
            if last.startswith("test_") or (last == "conftest" and private):
                found.append(f"{'.' * node.level}{node.module}")
    return found


# Constants one layer shares with another on purpose, each with why.
SHARED_ON_PURPOSE = {
    "e2e/test_demo_sweep.py": "the demo corpus's expected verdicts, asserted by the component layer too",
    "e2e/test_unsafe_host.py": "the review sweep's arms and expected verdicts, run again on an unsafe host",
}


def test_no_test_module_imports_another():
    offenders = {
        str(path.relative_to(TESTS)): found
        for path, text in _sources().items()
        if str(path.relative_to(TESTS)) not in SHARED_ON_PURPOSE
        if (found := _imports_of_test_modules(ast.parse(text)))
    }
    assert not offenders, f"move shared helpers into tests/builders.py: {offenders}"


def test_a_module_run_alone_keeps_its_tmp_paths(tmp_path):
    """pytest's base temp directory is fixed at session start (tests/conftest.py), so a module
    whose first test points ``tempfile`` at a private directory does not take it away from the
    tests after it. Negative control: without that fixture this run errors in its second test."""
    import os
    import subprocess
    import sys

    module = Path(__file__).resolve().with_name("test_private_tempdir_first.py")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", str(module)],
        cwd=module.parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
