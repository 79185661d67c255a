"""Mutants of the code mutmut cannot mutate: module-level tables and decorated functions.

Contract: `mutants(source)` returns every mutant of `source` as a `Mutant` whose `source` is
the whole module with one expression replaced (text outside that expression is unchanged, so
a diff of the two shows one edit). Covered, because mutmut 3 only mutates the bodies of
undecorated functions and methods:
- module- and class-level assignments (constants, tuples, sets, frozensets, dicts, their
  comprehensions) — these are the tables a scorer reads;
- bodies of decorated functions other than a lone @staticmethod/@classmethod (properties,
  cached functions), which mutmut skips because its trampoline cannot wrap them.
Not covered on purpose: docstrings, `__all__`, type annotations, and prose strings (a string
with a space is a message for a human, not a key a rule compares against).
Each mutant is run by the caller in a fresh interpreter, so import-time code sees it.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

_COMPARE_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.Mult,
}


@dataclass(frozen=True, slots=True)
class Mutant:
    line: int  # 1-based line of the mutated expression
    original: str  # the expression's source text
    mutated: str  # what replaces it
    source: str  # the whole mutated module


def mutants(source: str) -> list[Mutant]:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    encoded = source.encode()
    found: list[Mutant] = []
    seen: set[tuple[int, int, str]] = set()
    for target in _targets(tree):
        # an f-string's parts carry the whole f-string's position (3.11): not editable alone
        inside_fstrings = {
            id(part) for f in ast.walk(target) if isinstance(f, ast.JoinedStr) for part in ast.walk(f)
        } - {id(f) for f in ast.walk(target) if isinstance(f, ast.JoinedStr)}
        for node in ast.walk(target):
            if not isinstance(node, ast.expr) or id(node) in inside_fstrings:
                continue
            start = offsets[node.lineno - 1] + node.col_offset
            end = offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[operator]
            original = encoded[start:end].decode()
            for replacement in _variants(node):
                text = ast.unparse(replacement)
                key = (start, end, text)
                if text == original or key in seen:
                    continue
                seen.add(key)
                new = (encoded[:start] + text.encode() + encoded[end:]).decode()
                try:
                    ast.parse(new)
                except SyntaxError:
                    continue
                found.append(Mutant(line=node.lineno, original=original, mutated=text, source=new))
    return found


def _targets(tree: ast.Module) -> Iterator[ast.AST]:
    """The value expressions and function bodies mutmut leaves alone."""
    yield from _scope(tree.body)


def _scope(body: list[ast.stmt]) -> Iterator[ast.AST]:
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            yield from _scope(stmt.body)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if stmt.decorator_list and not _trampolined(stmt):
                yield from stmt.body
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            names = [
                t.id
                for t in getattr(stmt, "targets", [getattr(stmt, "target", None)])
                if isinstance(t, ast.Name)
            ]
            if "__all__" in names or stmt.value is None:
                continue
            yield stmt.value
        elif isinstance(stmt, ast.If | ast.Try | ast.With):
            # import-time branches (e.g. TYPE_CHECKING) hold no tables worth mutating
            continue


def _trampolined(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    decorators = fn.decorator_list
    return (
        len(decorators) == 1
        and isinstance(decorators[0], ast.Name)
        and decorators[0].id
        in (
            "staticmethod",
            "classmethod",
        )
    )


def _variants(node: ast.expr) -> Iterator[ast.expr]:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield ast.Constant(not value)
        elif isinstance(value, int | float):
            yield ast.Constant(value + 1)
            if value != 0:
                yield ast.Constant(0)
        elif isinstance(value, str) and value and " " not in value:
            yield ast.Constant(f"XX{value}XX")
    elif isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) > 0:
        for i in range(len(node.elts)):
            clone = copy.deepcopy(node)
            del clone.elts[i]
            if isinstance(clone, ast.Set) and not clone.elts:
                continue  # `{}` would be a dict
            yield clone
    elif isinstance(node, ast.Dict):
        for i in range(len(node.keys)):
            clone = copy.deepcopy(node)
            del clone.keys[i]
            del clone.values[i]
            yield clone
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            swap = _COMPARE_SWAP.get(type(op))
            if swap is not None:
                clone = copy.deepcopy(node)
                clone.ops[i] = swap()
                yield clone
    elif isinstance(node, ast.BoolOp):
        clone = copy.deepcopy(node)
        clone.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield clone
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield copy.deepcopy(node.operand)
    elif isinstance(node, ast.BinOp):
        swap = _BINOP_SWAP.get(type(node.op))
        if swap is not None:
            clone = copy.deepcopy(node)
            clone.op = swap()
            yield clone
    elif isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp | ast.DictComp):
        for gen in getattr(node, "generators", []):
            if gen.ifs:
                clone = copy.deepcopy(node)
                for g in clone.generators:
                    g.ifs = []
                yield clone
                break
