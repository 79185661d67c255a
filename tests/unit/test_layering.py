"""Imports flow one way: specs → mechanisms → cell → schedule/output → aggregate → report → sweep → runner.

Every module of the package has a layer (keyed by dotted module name; a key also covers the
modules below it, e.g. ``sandbox`` covers ``sandbox._bwrap``). A module may import only modules
at its own layer or below. Absolute (``workflow_bench.x.y``) and relative (``.y``, ``..x``)
imports are both resolved. Adding a module means giving it a layer here; an upward import fails
this test (negative control: ``test_an_upward_import_is_caught``). Layers alone allow a circle
between modules of one layer, so the import graph must also be acyclic, counting imports under
``TYPE_CHECKING`` and inside functions too (negative control: ``test_a_cycle_is_caught``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "workflow_bench"
LAYERS = {
    "usage": 0, "process": 0, "redaction": 0, "judging.outcomes": 0, "row_schema": 0, "providers.access": 0,
    "judging.verdict": 0, "judging.junit": 1,
    "input_files": 0, "review": 0, "toolkit.spec": 0, "arms": 0, "toolkit.mcp": 1,
    "tasks": 1, "tasks.index_guard": 1, "relay": 1, "claude_cli": 1, "sandbox": 1,
    "providers.scripted": 1, "corpus": 1, "providers.gateway": 1, "toolkit.overlay": 1,
    "toolkit.comparator": 1, "cells.stream_usage": 1,
    "cells.skill_evidence": 1,
    "cells.workspace": 2, "cells.paths": 2, "cells.sessions": 2, "tasks.deps": 2, "cells.session_fold": 2,
    "toolkit.manifest": 2, "cells.index": 2,
    "providers.connect": 2, "providers.options": 2,
    "judging.judge": 2, "cells.evidence": 2,
    "judging.attribution": 2, "judging.outcome_report": 2, "judging.patch": 2, "judging.kit": 2,
    "cells.context": 3, "cells.rows": 3, "cells.run": 3, "cells.templates": 3,
    "tasks.check": 3, "tasks.check_expected": 3, "tasks.agents": 3,
    "schedule": 4, "output": 4, "output_lock": 4,
    "reports.aggregate": 5, "reports.accounting": 5,
    "reports.markdown": 6, "reports.accounting_section": 6, "reports.provenance": 6,
    "reports": 6, "report": 6,
    "sweep": 7, "canary": 7,
    "runner": 8, "runner_args": 8, "promotion": 8, "tasks.__main__": 8,
    "evolve": 9,
}  # fmt: skip


def module_name(path: Path) -> tuple[str, bool]:
    """Dotted name of a package file (without ``workflow_bench.``) and whether it is a package."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def layer_key(module: str) -> str | None:
    """The longest ``LAYERS`` key that is ``module`` or one of its parents."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in LAYERS:
            return ".".join(parts[:end])
    return None


def imported_modules(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """Package modules ``tree`` imports, as dotted names; ``known`` tells a submodule from a name."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module == "workflow_bench" or (node.module or "").startswith("workflow_bench."):
                target = node.module.removeprefix("workflow_bench").removeprefix(".")
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                found.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("workflow_bench.")
                for a in node.names
                if a.name.startswith("workflow_bench.")
            )
    return {name for name in found if name}


def _parse(sources: dict[str, str]) -> dict[str, tuple[ast.AST, bool]]:
    parsed = {}
    for path, text in sources.items():
        name, is_package = module_name(Path(path))
        parsed[name] = (ast.parse(text), is_package)
    return parsed


def violations(sources: dict[str, str], known: set[str] | None = None) -> list[str]:
    parsed = _parse(sources)
    known = set(parsed) if known is None else known | set(parsed)
    problems = []
    for name, (tree, is_package) in parsed.items():
        imports = imported_modules(tree, name, is_package, known)
        own = layer_key(name)
        if own is None:
            assert not imports, f"{name}: give module {name!r} a layer in test_layering.LAYERS"
            continue
        for target in sorted(imports):
            their = layer_key(target)
            if their is not None and their != own and LAYERS[their] > LAYERS[own]:
                problems.append(f"{name} (layer {LAYERS[own]}) imports {target} (layer {LAYERS[their]})")
    return problems


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    parsed = _parse(sources)
    known = set(parsed)
    return {
        name: {t for t in imported_modules(tree, name, is_package, known) if t in known and t != name}
        for name, (tree, is_package) in parsed.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of modules (Tarjan), each as an import path a → … → a."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(_circle(graph, group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _circle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest import path from the group's first module back to itself, inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & group):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {start} in {sorted(group)}")


def _package_sources() -> dict[str, str]:
    return {str(p): p.read_text() for p in PACKAGE.rglob("*.py") if "corpus/target" not in p.as_posix()}


def test_imports_flow_downward():
    assert violations(_package_sources()) == []


def test_an_upward_import_is_caught():
    fake = {str(PACKAGE / "cells" / "sessions.py"): "from ..sweep import run_sweep\n"}
    assert violations(fake, {"sweep"}) == ["cells.sessions (layer 2) imports sweep (layer 7)"]
    absolute = {str(PACKAGE / "cells" / "sessions.py"): "from workflow_bench.sweep import run_sweep\n"}
    assert violations(absolute, {"sweep"}) == ["cells.sessions (layer 2) imports sweep (layer 7)"]


def test_no_import_cycles():
    assert [" → ".join(c) for c in cycles(import_graph(_package_sources()))] == []


def test_a_cycle_is_caught():
    fake = {
        str(PACKAGE / "tasks" / "spec.py"): "from .schema import TaskFileError\n",
        str(PACKAGE / "tasks" / "schema.py"): "from workflow_bench.tasks.oracles import capture_oracle\n",
        str(PACKAGE / "tasks" / "oracles.py"): (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .spec import OracleSpec\n"
        ),
        str(PACKAGE / "tasks" / "repos.py"): "from ..process import run_process\n",
    }
    assert [" → ".join(c) for c in cycles(import_graph(fake))] == [
        "tasks.oracles → tasks.spec → tasks.schema → tasks.oracles"
    ]


MAX_LINES = 400
SIZE_REASON = "Over 400 lines on purpose:"


def oversized(sources: dict[str, str]) -> list[str]:
    """Modules over ``MAX_LINES`` whose docstring does not open with a one-line reason."""
    return sorted(
        module_name(Path(path))[0]
        for path, text in sources.items()
        if text.count("\n") > MAX_LINES and SIZE_REASON not in "\n".join(text.splitlines()[:3])
    )


def test_no_module_over_400_lines_without_a_reason():
    assert oversized(_package_sources()) == []
    long = "x = 1\n" * (MAX_LINES + 1)
    fake = {
        str(PACKAGE / "cells" / "big.py"): long,
        str(PACKAGE / "cells" / "ok.py"): f'"""T.\n{SIZE_REASON} y."""\n' + long,
    }
    assert oversized(fake) == ["cells.big"]


def test_at_most_a_dozen_modules_at_the_top():
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert len(top) <= 12, top
