"""The Python sentinel writer: sentinel tests written into an oracle file as its own tests.

Code under test runs in the process that runs the oracle and can read the staged file, so a
sentinel must not differ from the oracle's own tests by any fixed feature. Each one here is:

- **named from the file's own vocabulary**: the words of the file's test names recombined
  (``test_grouped_parses_amounts`` beside ``test_grouped_text_parses_back``), in the file's
  style (``test_snake`` or ``testCamel``), never an existing name, fresh for every run;
- **placed among the oracle's tests**: a method of one of the file's own test classes, or a
  module-level function beside its pytest-style functions, before a random one of them or after
  the last (no banner, no class of its own, no block at the end);
- **made from the oracle's own bodies**: a must-fail sentinel is a copy of one of its container's
  tests (same signature, so the same fixtures) with one more assertion that cannot hold, written
  with literals of the file; so on an unfixed task it fails where that test fails, and on a fixed
  one at its last line. A must-skip sentinel carries the container's skip decorator.

The must-pass sentinel goes only where nothing runs before it (a class or module without
set-up hooks): a failing ``setUp`` must not turn an honest run into "tampered". A file that
``ast`` cannot parse, or that has no test container, gets a class of its own (named from the
vocabulary too). Pure: no I/O. Caller: ``judging.sentinels``.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

# (name, scope, must): scope is the class the test is a method of, or the file's module name.
Planted = tuple[str, str, str]

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Filler when a file's own test names have too few words to make fresh names from.
_FILLER = ("value", "values", "case", "cases", "input", "empty", "single", "many", "result", "basic")
_SETUP_HOOKS = frozenset(
    {"setUp", "setUpClass", "asyncSetUp", "setup_method", "setup_class", "setup", "setUpTestData", "__init__"}
)
_PLAIN_BASES = frozenset({"TestCase", "IsolatedAsyncioTestCase"})
# A body that may end before its last line (so an assertion appended there might not run).
_EARLY_EXITS = frozenset({"skipTest", "skip", "xfail", "exit", "_exit"})


@dataclass
class _Container:
    name: str  # the class, or "" for the module's top level
    indent: str
    tests: list[ast.FunctionDef | ast.AsyncFunctionDef]
    slots: list[int]  # 0-based line indexes before which a test may go
    unittest_class: bool
    safe: bool  # nothing (set-up hook) runs before its tests


def write(data: bytes, module: str, rng: random.Random, taken: set[str]) -> tuple[bytes, list[Planted]]:
    """``data`` with sentinels written in (two must fail, one pass where that is sure, one skip);
    what was planted. ``module`` is the file's module name (the scope of module-level tests),
    ``taken`` the names in use across the snapshot (the new ones are added)."""
    text = data.decode("utf-8", "surrogateescape")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    names = _test_names(tree) if tree is not None else re.findall(r"def\s+(test\w*)", text)
    taken.update(names)
    vocab = _Vocabulary(names, rng, taken)
    containers = _containers(tree, lines, text) if tree is not None else []
    literals = _literals(tree) if tree is not None else []
    bindings = _bindings(tree) if tree is not None else set()
    inserts: list[tuple[int, float, str]] = []
    planted: list[Planted] = []
    if not containers:
        cls = vocab.class_name()
        at = _class_slot(lines)
        methods = []
        for must in ("failed", "failed", "passed", "skipped"):
            name = vocab.test_name()
            methods.append(_plain_body(name, must, "    ", True, literals, bindings, rng, library=True))
            planted.append((name, cls, must))
        block = f"\n\nclass {cls}(__import__('unittest').TestCase):\n" + "\n".join(methods) + "\n\n"
        inserts.append((at, 0.0, block))
    else:
        safe = [c for c in containers if c.safe]
        for index, must in enumerate(("failed", "failed", "passed", "skipped")):
            pool = safe if must == "passed" else containers
            if not pool:
                continue  # no container where a must-pass test is sure to pass
            box = rng.choice(pool)
            name = vocab.test_name()
            library = index == 0
            source = _sentinel(box, name, must, lines, literals, bindings, rng, library=library)
            slot = rng.choice(box.slots)
            gap = "\n" if box.indent else "\n\n"
            # Blank lines where the file has them: after the sentinel before a test, before it at the end.
            source = gap + source if slot == box.slots[-1] else source + gap
            inserts.append((slot, rng.random(), source))
            planted.append((name, box.name or module, must))
    for at, _, source in sorted(inserts, key=lambda i: (i[0], i[1]), reverse=True):
        lines[at:at] = [source]
    return "".join(lines).encode("utf-8", "surrogateescape"), planted


def _test_names(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            found.append(node.name)
    return found


def _containers(tree: ast.Module, lines: Sequence[str], text: str) -> list[_Container]:
    module_hooks = any(
        isinstance(n, ast.FunctionDef) and n.name in ("setUpModule", "setup_module") for n in tree.body
    )
    module_safe = not module_hooks and "autouse" not in text
    out: list[_Container] = []
    top = [n for n in tree.body if _is_test(n)]
    if top:
        out.append(_container("", "", top, lines, unittest_class=False, safe=module_safe))
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.decorator_list:
            continue
        bases = [_base_name(b) for b in node.bases]
        unittest_class = any(b.endswith("TestCase") for b in bases)
        pytest_class = node.name.startswith("Test") and not bases
        tests = [n for n in node.body if _is_test(n)]
        if not tests or not (unittest_class or pytest_class):
            continue
        hooks = any(
            isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name in _SETUP_HOOKS
            for n in node.body
        )
        safe = module_safe and not hooks and all(b in _PLAIN_BASES for b in bases)
        indent = " " * tests[0].col_offset
        out.append(_container(node.name, indent, tests, lines, unittest_class=unittest_class, safe=safe))
    return out


def _container(name, indent, tests, lines, *, unittest_class: bool, safe: bool) -> _Container:
    slots = [_start(t) - 1 for t in tests]
    slots.append(_end(tests[-1], lines))  # after the last test (not after a main guard)
    return _Container(name, indent, tests, slots, unittest_class, safe)


def _is_test(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _end(node: ast.stmt, lines: Sequence[str]) -> int:
    """The 0-based index of the line after ``node``."""
    return min(node.end_lineno or node.lineno, len(lines))


def _class_slot(lines: list[str]) -> int:
    """Before a top-level ``if __name__ == "__main__":`` (``unittest.main()`` there would run
    before a class defined after it), else at the end."""
    for index in range(len(lines) - 1, -1, -1):
        if re.match(r"if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", lines[index]):
            return index
    return len(lines)


def _literals(tree: ast.Module) -> list[object]:
    """Strings and numbers the file's tests use: what a sentinel's failing assertion compares."""
    seen: dict[object, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) in (str, int, float):
            value = node.value
            if isinstance(value, str) and (
                len(value) > 40 or "\n" in value or not value.strip() or value.startswith("__")
            ):
                continue
            seen.setdefault(value, None)
    return list(seen)


def _bindings(tree: ast.Module) -> set[str]:
    """Module-level names bound by an import (``unittest``, ``pytest``)."""
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            bound |= {a.asname or a.name for a in node.names if "." not in (a.asname or a.name)}
    return bound


def _sentinel(box, name, must, lines, literals, bindings, rng, *, library: bool) -> str:
    """A copy of one of ``box``'s tests renamed (must-fail: plus a false assertion; must-skip:
    under the skip decorator), or a body of its own when no test of ``box`` can be copied."""
    template = _template(box, rng) if must in ("failed", "skipped") else None
    if template is None:
        return _plain_body(
            name, must, box.indent, box.unittest_class, literals, bindings, rng, library=library
        )
    start, end = template.lineno - 1, template.end_lineno or template.lineno
    source = "".join(lines[start:end])
    source = source.replace(f"def {template.name}", f"def {name}", 1)
    if must == "skipped":
        return box.indent + _skip_decorator(box.unittest_class, bindings, rng) + "\n" + source
    body_indent = " " * template.body[0].col_offset
    return source + body_indent + _failing(box.unittest_class and library, literals, rng) + "\n"


def _template(box: _Container, rng: random.Random) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """A test of ``box`` whose copy plus a false assertion is sure to fail: undecorated, and
    nothing in it may end it early (return, yield, a skip)."""
    usable = [
        t for t in box.tests if not t.decorator_list and t.body[0].lineno > t.lineno and not _may_end_early(t)
    ]
    return rng.choice(usable) if usable else None


def _may_end_early(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Return | ast.Yield | ast.YieldFrom):
            return True
        if isinstance(sub, ast.Call):
            func = sub.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in _EARLY_EXITS:
                return True
    return False


def _pair(literals: Sequence[object], rng: random.Random) -> tuple[object, object]:
    pool = list(literals) or ["0.00", 1]
    first = rng.choice(pool)
    others = [v for v in pool if v != first and type(v) is type(first)]
    if others:
        return first, rng.choice(others)
    if isinstance(first, str):
        return first, first + "0"
    return first, (first + 1 if isinstance(first, int | float) else "0")


def _failing(library: bool, literals: Sequence[object], rng: random.Random) -> str:
    first, second = _pair(literals, rng)
    if library:
        return f"self.assertEqual({first!r}, {second!r})"
    return f"assert {first!r} == {second!r}"


def _plain_body(name, must, indent, unittest_class, literals, bindings, rng, *, library: bool) -> str:
    args = "self" if indent else ""
    inner = indent + "    "
    decorator = ""
    if must == "skipped":
        decorator = indent + _skip_decorator(unittest_class, bindings, rng) + "\n"
    if must == "failed":
        line = _failing(library and unittest_class, literals, rng)
    else:
        value = _pair(literals, rng)[0]
        line = (
            f"self.assertEqual({value!r}, {value!r})" if unittest_class else f"assert {value!r} == {value!r}"
        )
    return f"{decorator}{indent}def {name}({args}):\n{inner}{line}\n"


def _skip_decorator(unittest_class: bool, bindings: set[str], rng: random.Random) -> str:
    reason = rng.choice(("not supported yet", "pending", "slow", "flaky on this platform", "todo"))
    if not unittest_class and "pytest" in bindings:
        return f"@pytest.mark.skip(reason={reason!r})"
    owner = "unittest" if "unittest" in bindings else "__import__('unittest')"
    return f"@{owner}.skip({reason!r})"


class _Vocabulary:
    """Fresh test names made of the words of the file's own test names, in their style."""

    def __init__(self, names: Sequence[str], rng: random.Random, taken: set[str]) -> None:
        self.rng, self.taken = rng, taken
        camel = [n for n in names if re.match(r"test[A-Z0-9]", n)]
        self.camel = len(camel) * 2 > len(names)
        words: dict[str, None] = {}
        lengths = []
        for name in names:
            parts = [w.lower() for w in _WORDS.findall(name[4:])]
            lengths.append(max(2, len(parts)))
            words.update(dict.fromkeys(parts))
        self.words = list(words)
        if len(self.words) < 4:
            self.words += [w for w in _FILLER if w not in words]
        self.lengths = lengths or [3]

    def _fresh(self, join, prefix: str) -> str:
        for attempt in range(200):
            size = min(len(self.words), self.rng.choice(self.lengths) + attempt // 50)
            name = prefix + join(self.rng.sample(self.words, max(2, size)))
            if name not in self.taken:
                self.taken.add(name)
                return name
        raise RuntimeError("no fresh sentinel name")  # 10+ words make millions of names

    def test_name(self) -> str:
        if self.camel:
            return self._fresh(lambda ws: "".join(w.capitalize() for w in ws), "test")
        return self._fresh("_".join, "test_")

    def class_name(self) -> str:
        return self._fresh(lambda ws: "".join(w.capitalize() for w in ws), "Test")
