"""Folders are layers: a package imports only packages of lower layers; modules never form a circle.

Package level: every top-level package or module of ``workflow_bench`` has a layer in
``PACKAGE_LAYERS``, and one may import another only when that one's layer is strictly lower, so no
two packages import each other and a folder name says what it may use (negative control:
``test_an_upward_import_is_caught``, and ``test_two_packages_importing_each_other_are_caught``).
Adding a package means giving it a layer here. Module level: imports inside a package may go any
way, but the module import graph must be acyclic, counting imports under ``TYPE_CHECKING`` and
inside functions too (negative control: ``test_a_cycle_is_caught``). Absolute
(``workflow_bench.x.y``) and relative (``.y``, ``..x``) imports are both resolved.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "workflow_bench"
PACKAGE_LAYERS = {
    # foundations: bounded input, spawning, redaction, usage arithmetic, digests, review contract,
    # bounded argparse types
    "process": 0, "redaction": 0, "usage": 0, "input_files": 0, "digests": 0, "review": 0, "argtypes": 0,
    # host mechanisms: the sandbox, the CLI binary, model providers, a task's interpreters
    "sandbox": 1, "claude_cli": 1, "providers": 1, "runtimes": 1,
    # the relay, clones and hardened git, the toolkit
    "relay": 2, "workspace": 2, "toolkit": 2,
    # the framework registry: every test framework's detection, commands, kit, sentinels, runtime
    "frameworks": 2,
    # specs: arms and task definitions; the embedded demo corpus (its builder uses hardened git)
    "arms": 3, "taskspec": 3, "corpus": 3,
    # judging a cell's workspace; the row model
    "judging": 4, "rows": 5,
    # one cell; reports over rows; the output directory's one writer
    "cells": 6, "reports": 6, "output": 6,
    # scheduling cells, the promotion gate, the task command
    "schedule": 7, "promotion": 7, "tasks": 7,
    # every report of a sweep; the containment canary; the runner's flags
    "report": 8, "canary": 8, "runner_args": 8, "view": 8,
    "sweep": 9,
    "runner": 10, "evolve": 10,
    # re-judging saved patches (a sweep's or any agent's) in clean rooms
    "regrade": 10,
    # the front door: a subcommand for every command above (imported only when chosen)
    "cli": 11, "__main__": 12,
}  # fmt: skip


def module_name(path: Path) -> tuple[str, bool]:
    """Dotted name of a package file (without ``workflow_bench.``) and whether it is a package."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def package_of(module: str) -> str:
    """The top-level package (or module) of ``workflow_bench`` that ``module`` belongs to."""
    return module.split(".")[0]


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
    """Every import of a package whose layer is not strictly lower than the importer's."""
    parsed = _parse(sources)
    known = set(parsed) if known is None else known | set(parsed)
    problems = []
    for name, (tree, is_package) in parsed.items():
        if not name:
            continue  # workflow_bench/__init__.py: the package's own docstring, no imports
        own = package_of(name)
        assert own in PACKAGE_LAYERS, f"{name}: give package {own!r} a layer in test_layering.PACKAGE_LAYERS"
        for target in sorted(imported_modules(tree, name, is_package, known)):
            their = package_of(target)
            if their == own:
                continue
            assert their in PACKAGE_LAYERS, (
                f"{target}: give {their!r} a layer in test_layering.PACKAGE_LAYERS"
            )
            if PACKAGE_LAYERS[their] >= PACKAGE_LAYERS[own]:
                problems.append(
                    f"{name} ({own}, layer {PACKAGE_LAYERS[own]}) imports {target} "
                    f"({their}, layer {PACKAGE_LAYERS[their]})"
                )
    return problems


def mutual_packages(sources: dict[str, str]) -> list[str]:
    """Pairs of packages that import each other, as ``a <-> b`` (the layers above forbid any)."""
    edges = {(package_of(a), package_of(t)) for a, targets in import_graph(sources).items() for t in targets}
    return sorted(f"{a} <-> {b}" for a, b in edges if a < b and (b, a) in edges)


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
    assert mutual_packages(_package_sources()) == []


def test_an_upward_import_is_caught():
    fake = {str(PACKAGE / "cells" / "sessions.py"): "from ..sweep import run_sweep\n"}
    expected = ["cells.sessions (cells, layer 6) imports sweep (sweep, layer 9)"]
    assert violations(fake, {"sweep"}) == expected
    absolute = {str(PACKAGE / "cells" / "sessions.py"): "from workflow_bench.sweep import run_sweep\n"}
    assert violations(absolute, {"sweep"}) == expected
    # Same layer is not lower: two packages of one layer may not import each other either way.
    sideways = {str(PACKAGE / "cells" / "run.py"): "from workflow_bench.reports import aggregate\n"}
    assert violations(sideways, {"reports.aggregate"}) == [
        "cells.run (cells, layer 6) imports reports.aggregate (reports, layer 6)"
    ]


def test_two_packages_importing_each_other_are_caught():
    fake = {
        str(PACKAGE / "cells" / "run.py"): "from workflow_bench.judging.judge import run_verify\n",
        str(PACKAGE / "judging" / "judge.py"): "from workflow_bench.cells.sessions import SessionOutcome\n",
        str(PACKAGE / "cells" / "sessions.py"): "X = 1\n",
    }
    assert mutual_packages(fake) == ["cells <-> judging"]
    assert violations(fake) == ["judging.judge (judging, layer 4) imports cells.sessions (cells, layer 6)"]


def test_no_import_cycles():
    assert [" → ".join(c) for c in cycles(import_graph(_package_sources()))] == []


def test_a_cycle_is_caught():
    fake = {
        str(PACKAGE / "taskspec" / "spec.py"): "from .schema import TaskFileError\n",
        str(
            PACKAGE / "taskspec" / "schema.py"
        ): "from workflow_bench.taskspec.oracles import capture_oracle\n",
        str(PACKAGE / "taskspec" / "oracles.py"): (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .spec import OracleSpec\n"
        ),
        str(PACKAGE / "taskspec" / "repos.py"): "from ..process import run_process\n",
    }
    assert [" → ".join(c) for c in cycles(import_graph(fake))] == [
        "taskspec.oracles → taskspec.spec → taskspec.schema → taskspec.oracles"
    ]


# Decide, then render: a renderer is handed the promotion decisions and shows them; nothing it
# imports, however indirectly, can decide one (the gate, its evidence, the document's builder) or
# judge a cell (judging beyond its error-kind vocabulary, which the report's legend shows).
RENDERERS = ("report.render", "reports.markdown", "reports.markdown_sections", "reports.html")
DECIDERS = ("promotion.gate", "promotion.evidence", "promotion.document", "promotion.apply", "judging.")
VOCABULARY = ("judging.outcomes",)


def reachable(graph: dict[str, set[str]], start: str) -> dict[str, list[str]]:
    """Every module ``start`` imports, directly or not, with one import path to it."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, ())):
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    return paths


def deciding_imports(sources: dict[str, str]) -> list[str]:
    """Every path from a renderer to a module that decides, as ``a → … → decider``."""
    graph = import_graph(sources)
    found = []
    for renderer in RENDERERS:
        for module, path in reachable(graph, renderer).items():
            if module.startswith(DECIDERS) and module not in VOCABULARY:
                found.append(" → ".join(path))
    return sorted(found)


def test_no_renderer_imports_a_decider():
    assert deciding_imports(_package_sources()) == []


def test_a_renderer_importing_the_gate_is_caught():
    fake = {
        str(PACKAGE / "reports" / "html.py"): "from workflow_bench.reports.stats import paired_statistics\n",
        str(PACKAGE / "reports" / "stats.py"): "from workflow_bench.promotion.gate import decide\n",
        str(PACKAGE / "promotion" / "gate.py"): "X = 1\n",
        str(PACKAGE / "report" / "render.py"): "from workflow_bench.judging.outcomes import ERROR_KINDS\n",
        str(PACKAGE / "judging" / "outcomes.py"): "X = 1\n",
    }
    assert deciding_imports(fake) == ["reports.html → reports.stats → promotion.gate"]


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


# The layout's hard limits, declared once: no module over MODULE_LIMIT lines whatever its reason,
# and the runner (argv → validated input → sweep → exit code) within RUNNER_LIMIT.
MODULE_LIMIT = 600
LINE_LIMITS = {"runner": 300}


def over_limit(sources: dict[str, str]) -> list[str]:
    """Modules over their hard limit (``LINE_LIMITS``, else ``MODULE_LIMIT``), as ``name: lines > limit``."""
    found = []
    for path, text in sources.items():
        name = module_name(Path(path))[0]
        lines, limit = text.count("\n"), LINE_LIMITS.get(name, MODULE_LIMIT)
        if lines > limit:
            found.append(f"{name}: {lines} > {limit}")
    return sorted(found)


def test_no_module_over_its_line_limit():
    assert over_limit(_package_sources()) == []
    fake = {  # a reason (SIZE_REASON) excuses 400 lines, never the hard limit
        str(PACKAGE / "cells" / "big.py"): f'"""T.\n{SIZE_REASON} y."""\n' + "x = 1\n" * MODULE_LIMIT,
        str(PACKAGE / "cells" / "ok.py"): "x = 1\n" * MODULE_LIMIT,
        str(PACKAGE / "runner.py"): "x = 1\n" * (LINE_LIMITS["runner"] + 1),
        str(PACKAGE / "runner_args.py"): "x = 1\n" * (LINE_LIMITS["runner"] + 1),
    }
    assert over_limit(fake) == [f"cells.big: {MODULE_LIMIT + 2} > {MODULE_LIMIT}", "runner: 301 > 300"]


def test_at_most_a_dozen_modules_at_the_top():
    # __main__ is ``python -m workflow_bench``'s three-line stub into cli, not a module of its own
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= 12, top
