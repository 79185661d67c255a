"""The JavaScript/TypeScript ecosystem: detection between vitest, jest, tape and node's runner, the
files that configure a node test run, ``node_modules``, vitest's major version and ``tsc``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from workflow_bench.input_files import InputFileError, read_bounded

from ._model import Detection, Ecosystem, Framework, FrameworkError, Tree

TEST_FILE = re.compile(r"\.(test|spec)\.[cm]?[jt]sx?$")
# The file loads tape (``require("tape")``, ``import test from "tape"``); also ``node_tape``'s.
LOADS_TAPE = re.compile(rb"""(?:require\s*\(\s*|\bfrom\s+|\bimport\s+)['"]tape['"]""")
LOADS_TAP = re.compile(rb"""(?:require\s*\(\s*|\bfrom\s+|\bimport\s+)['"]tap['"]""")
SOURCE = re.compile(r"\.[cm]?[jt]sx?$")


def runs_test_file(path: str, _: bytes) -> bool:
    return bool(TEST_FILE.search(path))


def package_json(base: Tree) -> dict[str, object]:
    if not base.has("package.json"):
        return {}
    try:
        data = json.loads(base.text("package.json"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _detect(
    registry: Mapping[str, Framework],
    base: Tree,
    tests: Sequence[tuple[str, bytes]],
    facts: Mapping[str, object],
) -> Detection:
    manifest = package_json(base)
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
        return Detection(registry["node-test"], ("the test files import node:test",))
    if any(LOADS_TAPE.search(d) for _, d in tests):
        return Detection(registry["tape"], ("the test files load tape",))
    if any(LOADS_TAP.search(d) for _, d in tests):
        return Detection(registry["node-tap"], ("the test files load tap (node-tap)",))
    if imports_vitest or "vitest" in declared or "vitest" in script:
        why = "the test files import vitest" if imports_vitest else "package.json names vitest"
        version = facts.get("vitest_version")
        if isinstance(version, tuple) and version < STREAMING_VITEST:
            oldest = ".".join(map(str, STREAMING_VITEST))
            shown = ".".join(map(str, version))
            return Detection(registry["vitest-junit"], (why, f"vitest {shown} < {oldest}: JUnit XML"))
        return Detection(registry["vitest"], (why,))
    if "jest" in declared or re.search(r"\bjest\b", script):
        return Detection(registry["jest"], ("package.json names jest",))
    if "tape" in declared and re.search(r"\btape\b", script):
        return Detection(registry["tape"], ("package.json declares tape and its test script runs it",))
    if "tap" in declared and re.search(r"(^|[\s;&|])tap\b(?![-.])", script):
        return Detection(registry["node-tap"], ("package.json declares tap and its test script runs it",))
    if "node --test" in script or "borp" in script:
        return Detection(registry["node-test"], ("package.json's test script runs node --test",))
    raise FrameworkError(
        "cannot tell which JavaScript test runner runs the fix's tests "
        "(no vitest, jest, tape, tap or node:test); "
        f"give --framework ({', '.join(registry)}) or --test-command"
    )


# The first vitest that runs the harness's streaming reporter: 3 added the reporter API it uses,
# but before 3.2 vitest loads a custom reporter only from inside the project (vite's fs.allow),
# and the kit is staged outside it ("Failed to load custom Reporter", checked on 3.0.0, 3.0.5,
# 3.1.0; 3.2.0 loads it). Older ones write JUnit XML (tests/component/test_vitest_versions.py runs
# 3.0.5 through JUnit and 3.2.0 streaming, each against the newest).
STREAMING_VITEST = (3, 2)


def _facts(repo: Path, trees: Sequence[str]) -> Mapping[str, object]:
    """``vitest_version``: (major, minor) of the vitest installed in the working tree, if any."""
    for source in trees:
        manifest = repo / source / "vitest" / "package.json"
        try:
            version = json.loads(read_bounded(manifest, max_bytes=256 * 1024)).get("version", "")
        except (OSError, ValueError, InputFileError):
            continue
        if match := re.match(r"(\d+)\.(\d+)\.", str(version)):
            return {"vitest_version": (int(match.group(1)), int(match.group(2)))}
    return {}


def _typecheck(repo: Path, base: Tree, dependencies: Sequence[tuple[str, str]]) -> str | None:
    if not base.has("tsconfig.json"):
        return None
    for source, target in dependencies:
        if PurePosixPath(target).name == "node_modules" and (repo / source / ".bin" / "tsc").exists():
            return f"./{target}/.bin/tsc -p . --noEmit"
    return None


NODE = Ecosystem(
    name="node",
    label="JavaScript/TypeScript",
    source=SOURCE,
    detect=_detect,
    test_config=(
        ("vitest.config.*", "vitest configuration (setupFiles, globals, include)"),
        ("vitest.workspace.*", "vitest workspace configuration"),
        ("vite.config.*", "vite configuration, read by vitest"),
        ("jest.config.*", "jest configuration (setupFiles, transform, reporters)"),
        ("babel.config.*", "babel transforms jest applies to every test file"),
        (".babelrc", "babel transforms"),
        (".babelrc.*", "babel transforms"),
        ("package.json", "jest's configuration key, module type, npm scripts"),
        (".npmrc", "node-options for every npm-run process"),
        (".taprc", "node-tap configuration (plugins, options)"),
        ("tsconfig.json", "TypeScript settings vitest and ts-jest compile tests with"),
        ("tsconfig.*.json", "TypeScript settings"),
    ),
    trees=("node_modules",),
    tree_hint="python -m workflow_bench.tasks deps node --project {repo}",
    sentinel_kind="javascript",
    facts=_facts,
    typecheck=_typecheck,
)
