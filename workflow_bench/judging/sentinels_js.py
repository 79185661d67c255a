"""The JavaScript/TypeScript sentinel writer: sentinels written among the file's own tests.

For ``node --test``, vitest and jest files. Without a JavaScript parser the writer works on the
file's lines: an **anchor** is a line that starts a test call with its title on that line
(``test('…', …`` or ``it("…", …``, at any indentation, inside a ``describe`` or not). Each
sentinel is written just before a random anchor, at its indentation, with its callee (so the
same framework, suite and binding register it), in its form (``async``, an expression body or a
block), under a title made of the words of the file's own titles and never one of them; its
assertion uses the file's own library (``expect(…).toBe``, ``assert.<method>``) and literals.
The must-pass sentinel goes only at the top level of a file without set-up hooks (a failing
``beforeEach`` must not turn an honest run into "tampered"). A file with a ``test``/``it`` call
but no anchor gets the sentinels appended, guarded by ``typeof`` (what the bindings are is then
unknown). Pure: no I/O. Caller: ``judging.sentinels``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

Planted = tuple[str, str, str]  # (title, scope, must); the scope of a JavaScript test is ""

_ANCHOR = re.compile(
    r"^(?P<indent>[ \t]*)(?P<callee>test|it)\s*\(\s*(?P<q>['\"`])(?P<title>[^'\"`\\]*)(?P=q)\s*,(?P<rest>.*)$"
)
_TITLES = re.compile(r"\b(?:test|it|describe)(?:\.\w+)?\s*\(\s*(['\"`])([^'\"`\\]*)\1")
_WORD = re.compile(r"[A-Za-z]+")
_LITERAL = re.compile(r"""'([^'\\\n]{0,30})'|"([^"\\\n]{0,30})"|(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.])""")
_HOOKS = re.compile(r"\b(?:beforeEach|beforeAll|before|afterEach)\s*\(")
# ``assert.<method>(`` on a bound ``assert``; ``t.assert.<method>(`` is node:test's context form,
# where ``assert`` is not bound at all (a sentinel calling it would throw, passed or not).
_METHODS = r"(strictEqual|equal|deepStrictEqual|deepEqual)\s*\("
_ASSERT_METHOD = re.compile(r"(?<![\w.$])assert\." + _METHODS)
_CONTEXT_ASSERT = re.compile(r"(?<![\w.$])[A-Za-z_$][\w$]*\.assert\." + _METHODS)
# The test function's one parameter, as the anchor writes it: ``t =>``, ``(t) =>``, ``async (t) =>``.
_PARAM = re.compile(r"^\s*(?:async\s+)?(?:\(\s*(?P<p>[A-Za-z_$][\w$]*)\s*\)|(?P<q>[A-Za-z_$][\w$]*))\s*=>")
_FILLER = ("value", "values", "input", "empty", "single", "many", "result", "basic", "case", "cases")


def write(data: bytes, rng: random.Random, taken: set[str]) -> tuple[bytes, list[Planted]]:
    """``data`` with two must-fail, a must-pass (where sure) and a must-skip sentinel written in."""
    text = data.decode("utf-8", "surrogateescape")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    titles = [m.group(2) for m in _TITLES.finditer(text)]
    taken.update(titles)
    vocab = _Titles(titles, rng, taken)
    literals = [v for v in _literals(text) if v[1:-1] not in titles]  # values, not test titles
    anchors = [(i, m) for i, line in enumerate(lines) if (m := _ANCHOR.match(line.rstrip("\n")))]
    style = _Style(text)
    planted: list[Planted] = []
    if not anchors:
        block = _guarded_block(vocab, style, literals, rng, planted)
        return "".join([*lines, block]).encode("utf-8", "surrogateescape"), planted
    top = [(i, m) for i, m in anchors if not m.group("indent")]
    inserts: list[tuple[int, float, str]] = []
    for index, must in enumerate(("failed", "failed", "passed", "skipped")):
        pool = (top if not _HOOKS.search(text) else []) if must == "passed" else anchors
        if not pool:
            continue
        at, anchor = rng.choice(pool)
        title = vocab.title()
        source = _sentinel(anchor, title, must, style, literals, rng, library=index == 0)
        inserts.append((at, rng.random(), source))
        planted.append((title, "", must))
    for at, _, source in sorted(inserts, key=lambda i: (i[0], i[1]), reverse=True):
        lines[at:at] = [source]
    return "".join(lines).encode("utf-8", "surrogateescape"), planted


class _Style:
    """How the file asserts: ``expect(…).toBe``, ``assert.<method>`` or node:test's
    ``t.assert.<method>`` (through the test's own parameter), else a thrown Error."""

    def __init__(self, text: str) -> None:
        self.expect = "expect(" in text
        method = _ASSERT_METHOD.search(text)
        self.assert_method = method.group(1) if method else None
        context = _CONTEXT_ASSERT.search(text)
        self.context_method = context.group(1) if context else None
        self.param: str | None = None
        """The anchor's test parameter, set per sentinel; ``t.assert`` is used only through it."""

    def _library(self) -> str | None:
        if self.assert_method:
            return f"assert.{self.assert_method}"
        if self.context_method and self.param:
            return f"{self.param}.assert.{self.context_method}"
        return None

    def failing(self, first: str, second: str, *, library: bool) -> str:
        if library and self.expect:
            return f"expect({first}).toBe({second})"
        if library and (call := self._library()):
            return f"{call}({first}, {second})"
        return f"{{ if ({first} !== {second}) throw new Error({first}); }}"

    def passing(self, value: str) -> str:
        if self.expect:
            return f"expect({value}).toBe({value})"
        if call := self._library():
            return f"{call}({value}, {value})"
        return "{}"


def _sentinel(
    anchor: re.Match[str], title: str, must: str, style: _Style, literals, rng, *, library: bool
) -> str:
    indent, callee, quote = anchor.group("indent"), anchor.group("callee"), anchor.group("q")
    rest = anchor.group("rest")
    is_async = "async" in rest.split("=>")[0]
    param = _PARAM.match(rest)
    style.param = (param.group("p") or param.group("q")) if param else None
    first, second = _pair(literals, rng)
    if must == "failed":
        body = style.failing(first, second, library=library)
    elif must == "passed":
        body = style.passing(first)
    else:
        body = style.passing(first)
        callee = f"{callee}.skip"
    arrow = f"{'async ' if is_async else ''}({style.param or ''}) => {body}"
    return f"{indent}{callee}({quote}{title}{quote}, {arrow});\n"


def _guarded_block(vocab: _Titles, style: _Style, literals, rng, planted: list[Planted]) -> str:
    names = [vocab.title() for _ in range(4)]
    first, second = _pair(literals, rng)
    style.param = None  # no anchor: which parameter a test gets is unknown
    fails = [style.failing(first, second, library=True), style.failing(first, second, library=False)]
    # `typeof` never throws on a name that is not declared (jest's globals, an imported `test`).
    run = "(typeof test === 'function' ? test : it)"
    body = [
        f"  {run}({names[0]!r}, () => {fails[0]});",
        f"  {run}({names[1]!r}, () => {fails[1]});",
        f"  {run}({names[2]!r}, () => {{}});",
        f"  {run}.skip({names[3]!r}, () => {{}});",
    ]
    planted += [
        (n, "", must) for n, must in zip(names, ("failed", "failed", "passed", "skipped"), strict=True)
    ]
    return (
        "\n// @ts-ignore\nif (typeof test === 'function' || typeof it === 'function') {\n"
        + "\n".join(body)
        + "\n}\n"
    )


def _literals(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for match in _LITERAL.finditer(text):
        single, double, number = match.groups()
        if number is not None:
            seen.setdefault(number, None)
        elif (single or double or "").strip() and not (single or double or "").startswith(
            ("node:", ".", "/")
        ):
            seen.setdefault(repr(single if single is not None else double), None)
    return list(seen)


def _pair(literals: Sequence[str], rng: random.Random) -> tuple[str, str]:
    pool = list(literals) or ["'0.00'", "1"]
    first = rng.choice(pool)
    others = [v for v in pool if v != first and v[0].isdigit() == first[0].isdigit()]
    if others:
        return first, rng.choice(others)
    return first, (first[:-1] + "0" + first[-1] if first[0] in "'\"" else first + "1")


class _Titles:
    """Fresh titles made of the words of the file's own titles."""

    def __init__(self, titles: Sequence[str], rng: random.Random, taken: set[str]) -> None:
        self.rng, self.taken = rng, taken
        words: dict[str, None] = {}
        lengths = []
        for title in titles:
            parts = _WORD.findall(title)
            lengths.append(max(2, len(parts)))
            words.update(dict.fromkeys(w.lower() for w in parts))
        self.words = list(words)
        if len(self.words) < 4:
            self.words += [w for w in _FILLER if w not in words]
        self.lengths = lengths or [3]

    def title(self) -> str:
        for attempt in range(200):
            size = min(len(self.words), self.rng.choice(self.lengths) + attempt // 50)
            title = " ".join(self.rng.sample(self.words, max(2, size)))
            if title not in self.taken and not any(t.endswith(" " + title) for t in self.taken):
                self.taken.add(title)
                return title
        raise RuntimeError("no fresh sentinel title")
