"""The Python ecosystem: its test files, detection between pytest and unittest, the files that
configure a Python test run, its dependency tree (``.wfbench-deps``) and its import roots."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from ._model import Detection, Ecosystem, Framework, Tree

TEST_MODULE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")


def runs_module(path: str, _: bytes) -> bool:
    return bool(TEST_MODULE.search(path))


def config_text(base: Tree) -> str:
    """Every pytest configuration section of the base, concatenated (for option checks)."""
    return "\n".join(base.text(name) for name in ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"))


def _detect(
    registry: Mapping[str, Framework],
    base: Tree,
    tests: Sequence[tuple[str, bytes]],
    _facts: Mapping[str, object],
) -> Detection:
    for path, data in tests:
        if re.search(rb"^\s*(import pytest|from pytest|@pytest\.)", data, re.MULTILINE):
            return Detection(registry["pytest"], (f"{path} uses pytest",))
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
        return Detection(registry["pytest"], (config,))
    if any(re.search(rb"^\s*(import unittest|from unittest)", d, re.MULTILINE) for _, d in tests):
        return Detection(registry["unittest"], ("the test files use unittest and nothing configures pytest",))
    return Detection(registry["pytest"], ("plain test functions: pytest collects them",))


def _import_roots(_base: Tree, source_paths: Sequence[str]) -> tuple[str, ...]:
    """``src`` when the touched code lives in a src layout (``src/<package>/``), else nothing: the
    repository root is on ``sys.path`` already (the working directory)."""
    if any(p.startswith("src/") and p.endswith(".py") for p in source_paths):
        return ("src",)
    return ()


PYTHON = Ecosystem(
    name="python",
    label="Python",
    source=re.compile(r"\.py$"),
    detect=_detect,
    test_config=(
        ("conftest.py", "pytest loads it before collecting tests beside it"),
        ("pytest.ini", "pytest configuration (addopts, plugins, python_files)"),
        (".pytest.ini", "pytest configuration"),
        ("pyproject.toml", "[tool.pytest.ini_options] and other tools' test settings"),
        ("setup.cfg", "[tool:pytest] section"),
        ("tox.ini", "[pytest] section"),
        ("sitecustomize", "imported by every Python process that has its directory on sys.path"),
        ("sitecustomize.*", "the module form (source, bytecode, extension)"),
        ("usercustomize", "imported at start-up like sitecustomize"),
        ("usercustomize.*", "the module form"),
        ("*.pth", "path configuration files run their import lines at start-up"),
    ),
    trees=(".wfbench-deps",),
    tree_hint="python -m workflow_bench.tasks deps python --requirements REQUIREMENTS "
    "--out {repo}/.wfbench-deps",
    sentinel_kind="python",
    import_roots=_import_roots,
)

__all__ = ["PYTHON", "Framework", "config_text", "runs_module"]
