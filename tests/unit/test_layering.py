"""Imports flow one way: specs → mechanisms → cell → schedule/output → aggregate → report → sweep → runner.

A module may import only modules at its own layer or below. Adding a module
means giving it a layer here; an upward import fails this test (negative
control: ``test_an_upward_import_is_caught``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "workflow_bench"
LAYERS = {
    "process": 0, "redaction": 0, "outcomes": 0, "row_schema": 0, "access": 0,
    "review_contract": 0, "review_labels": 0, "review": 0, "arms": 0,
    "oracles": 1, "repos": 1, "relay": 1, "task_schema": 1, "tasks": 1, "claude_cli": 1, "sandbox": 1,
    "provider": 1, "corpus": 1, "gateway": 1, "overlay": 1, "comparator": 1,
    "stream_usage": 1,
    "workspace": 2, "sessions": 2, "connect": 2, "judge": 2,
    "context": 3, "cell_rows": 3, "cell": 3,
    "schedule": 4, "output": 4,
    "aggregate": 5, "accounting": 5, "not_run": 5, "budget": 0, "order": 0, "resume": 5,
    "report": 6,
    "sweep": 7, "canary": 7,
    "runner": 8,
}  # fmt: skip


def _top(module_path: Path) -> str:
    relative = module_path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def _imported(tree: ast.AST, own: str) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and "/" not in own:
                found.add((node.module or "").split(".")[0])
            elif node.module and node.module.startswith("workflow_bench."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("workflow_bench."))
    return {name for name in found if name}


def violations(sources: dict[str, str]) -> list[str]:
    problems = []
    for path, text in sources.items():
        top = _top(Path(path))
        if top in ("__init__", "__main__"):
            continue
        assert top in LAYERS, f"{path}: give module {top!r} a layer in test_layering.LAYERS"
        nested = "/" if Path(path).parent != PACKAGE else ""
        for name in _imported(ast.parse(text), nested):
            if name in LAYERS and name != top and LAYERS[name] > LAYERS[top]:
                problems.append(f"{top} (layer {LAYERS[top]}) imports {name} (layer {LAYERS[name]})")
    return problems


def test_imports_flow_downward():
    sources = {str(p): p.read_text() for p in PACKAGE.rglob("*.py")}
    assert violations(sources) == []


def test_an_upward_import_is_caught():
    fake = {str(PACKAGE / "sessions.py"): "from .sweep import run_sweep\n"}
    assert violations(fake) == ["sessions (layer 2) imports sweep (layer 7)"]
