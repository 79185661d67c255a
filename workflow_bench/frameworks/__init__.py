"""The framework registry: every test framework the harness runs, each declared in one module.

A framework module (``python_pytest``, ``node_jest``, ``go_test``, ...) declares ``FRAMEWORKS``
(its ``Framework`` records: which files it runs, its verify/oracle command, the adapters in
``frameworks/kit`` it runs through, its dependency tree, its runtime); an ecosystem module
(``_python``, ``_node``, or the framework module itself for a one-runner language) declares its
``Ecosystem`` (how a fix's test files are told to be its own, how one of its frameworks is
detected, which configuration files the oracle restores, how sentinels are written in its
language, where its dependency trees are). Everything that branches on a framework or an
ecosystem (``tasks.frameworks``/``new``, ``judging.test_config``, ``judging.sentinels``,
``judging.outcome_report``'s kit) looks it up here. Adding a framework is one module listed in
``_MODULES`` (and ``ECOSYSTEMS`` for a new language), its tests and a README row.

Layer: below ``judging`` and ``tasks``; pure data and functions over a ``Tree`` (no process runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from . import (
    cargo_test,
    go_test,
    java_maven,
    node_jest,
    node_tap,
    node_tape,
    node_test,
    node_vitest,
    perl_prove,
    python_pytest,
    python_unittest,
)
from ._model import Detection, Ecosystem, Framework, FrameworkError, SentinelWriter, Tree
from ._node import NODE
from ._python import PYTHON

KIT = Path(__file__).resolve().parent / "kit"
# Order matters where two frameworks run the same files: the first is a "custom" command's default.
_MODULES = (
    python_pytest,
    python_unittest,
    node_vitest,
    node_jest,
    node_test,
    node_tape,
    node_tap,
    go_test,
    cargo_test,
    java_maven,
    perl_prove,
)

FRAMEWORKS: Mapping[str, Framework] = MappingProxyType(
    {f.name: f for module in _MODULES for f in module.FRAMEWORKS}
)
ECOSYSTEMS: Mapping[str, Ecosystem] = MappingProxyType(
    {e.name: e for e in (PYTHON, NODE, go_test.GO, cargo_test.RUST, java_maven.JAVA, perl_prove.PERL)}
)


def ecosystem_of(path: str) -> str | None:
    """The ecosystem whose source files ``path`` is one of, or None."""
    return next((e.name for e in ECOSYSTEMS.values() if e.source.search(path)), None)


def test_config_patterns() -> tuple[tuple[str, str], ...]:
    """Every ecosystem's (pattern, why) of test configuration, in registry order."""
    return tuple(entry for e in ECOSYSTEMS.values() for entry in e.test_config)


def kit_files() -> Mapping[str, str]:
    """Every framework's adapters: environment variable → file name in ``KIT``."""
    return {var: name for f in FRAMEWORKS.values() for var, name in f.kit.items()}


def sentinel_writers(name: str) -> tuple[SentinelWriter, ...]:
    """The writers that may seal a staged file named ``name`` (a base name), before any built-in
    block of ``judging.sentinels``: a framework's own (tape), then its ecosystem's (Go, Rust,
    Perl). Each declines (None) a file it cannot carry sentinels in."""
    found: list[SentinelWriter] = []
    for framework in FRAMEWORKS.values():
        if framework.sentinels is not None and framework.sentinels[0].fullmatch(name):
            found.append(framework.sentinels[1])
    for ecosystem in ECOSYSTEMS.values():
        pattern, writer = ecosystem.sentinel_file, ecosystem.sentinel_writer
        if writer is not None and pattern is not None and pattern.fullmatch(name):
            found.append(writer)
    return tuple(found)


__all__ = [
    "ECOSYSTEMS",
    "FRAMEWORKS",
    "KIT",
    "Detection",
    "Ecosystem",
    "Framework",
    "FrameworkError",
    "SentinelWriter",
    "Tree",
    "ecosystem_of",
    "kit_files",
    "sentinel_writers",
    "test_config_patterns",
]
