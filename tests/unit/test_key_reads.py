"""What is built from rows is read typed: literal string-key reads stay few, each with its reason.

Over ``promotion/``, ``reports/`` (its viewer aside: it reads the CLI's stream) and ``evolve/``, a
read of a literal key (``x["k"]``, ``x.get("k")``; stores and deletions aside) is allowed only
where the value really is an untyped mapping, and its line says why with a ``# key read:`` comment.
Everything else reads attributes of the frozen models (``Row``, ``PromotionDocument``,
``PairedStatistics`` …), where a misspelt name is a type error rather than a ``KeyError`` or a
silent ``None`` at run time. Negative controls: ``test_an_unexplained_read_is_caught``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "workflow_bench"
SCOPE = ("promotion", "reports", "evolve")
EXCLUDED = ("reports/viewer",)
MAX_READS = 20
REASON = "# key read:"


def is_literal_key_read(node: ast.AST) -> bool:
    """``x["k"]`` read (not stored or deleted), or ``x.get("k", …)``."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.ctx, ast.Load) and _is_text(node.slice)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and bool(node.args)
        and _is_text(node.args[0])
    )


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def literal_key_reads(source: str) -> list[tuple[int, str]]:
    """(line, expression) of each read of a literal string key in ``source``."""
    tree = ast.parse(source)
    return sorted(
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.expr) and is_literal_key_read(node)
    )


def unexplained(source: str) -> list[tuple[int, str]]:
    """The reads whose line carries no ``# key read:`` reason."""
    lines = source.splitlines()
    return [(n, expr) for n, expr in literal_key_reads(source) if REASON not in lines[n - 1]]


def scoped_files() -> list[Path]:
    files = [p for pkg in SCOPE for p in sorted((PACKAGE / pkg).rglob("*.py"))]
    return [p for p in files if not any(str(p.relative_to(PACKAGE)).startswith(e) for e in EXCLUDED)]


def test_derived_documents_are_read_typed() -> None:
    total, missing = 0, []
    for path in scoped_files():
        source = path.read_text()
        total += len(literal_key_reads(source))
        missing += [f"{path.relative_to(PACKAGE)}:{n}: {expr}" for n, expr in unexplained(source)]
    assert not missing, "a literal key read without '# key read: <why>' on its line:\n" + "\n".join(missing)
    assert total <= MAX_READS, f"{total} literal key reads over {', '.join(SCOPE)}: at most {MAX_READS}"


def test_an_unexplained_read_is_caught() -> None:
    source = (
        'a = doc["x"]\nb = doc.get("y")\nc = doc["z"]  # key read: a JSON file of the CLI\ndoc["w"] = 1\n'
    )
    assert literal_key_reads(source) == [(1, "doc['x']"), (2, "doc.get('y')"), (3, "doc['z']")]
    assert unexplained(source) == [(1, "doc['x']"), (2, "doc.get('y')")]


def test_the_scope_is_where_the_code_is() -> None:
    assert all((PACKAGE / pkg).is_dir() for pkg in (*SCOPE, *EXCLUDED))
    assert len(scoped_files()) > 20
