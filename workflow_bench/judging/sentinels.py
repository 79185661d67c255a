"""Sentinel tests: per-run tests the harness writes into the staged oracle, whose outcomes only it knows.

The code under test runs in the process that reports on it, so any outcome a test framework
reports could have been rewritten by that code. A sentinel is a test the harness writes into a
staged copy of each oracle test file just before one run, with an outcome the harness fixes: per
file, two must be reported **failed** (one through the file's assertion library, one through a
plain ``assert``/``throw``), one **passed** (only where no set-up hook runs before it) and one
**skipped**. The framework collects them with the file, whatever the command (stock
``--junitxml``, ``--reporter=junit``, ``node --test``, the kit's adapters): they share the
process, the result class, the reporter and the JUnit file with the oracle's own tests. So:

- a patched result class, a conftest hook or a rewritten JUnit file that turns failures into
  passes turns the must-fail sentinels into passes too;
- a patch that no-ops tests (``TestCase.run``, ``Function.runtest``) no-ops them too, unless it
  can tell them apart, and nothing fixed tells them apart: they are written by the per-language
  **writers** (``sentinels_python``, ``sentinels_js``) as the file's own tests, named from the
  words of its test names, placed among them at random, made from its bodies, assertions and
  literals, with nothing in the staged file (no banner, class, block or path) that marks them;
  which tests they are stays on the host (the plan);
- a blanket "everything passed" also passes the must-skip sentinel;
- a forged stream, a forged JUnit file or an early exit carries no sentinel at all (the names
  are fresh per run), or, if it copied every test name from the staged file, reports them wrongly;
- a run that reports a failing sentinel and exits 0 had its exit status forced.

``add_sentinels`` builds the augmented snapshot and the plan (``fixed_shape=True``: the old
appended block under 16-hex-digit names, kept only as the negative control of the tests that
show a sentinel-aware attack telling it apart); ``split`` separates the sentinels' results from
the oracle's own; ``check`` compares them with the plan. The verdict (``judging.verdict``) turns
a sentinel reported with the wrong outcome, or missing from a run that otherwise proves success,
into tampering (``evidence-tampered``). Files no writer handles (other languages; a JavaScript
file that calls neither ``test`` nor ``it``) get no sentinels; the row says ``oracle_sealed:
null`` when no file of the run carried them. What a targeted attacker would still have to do is
in the README ("Sealed outcomes").

**Writers** (the per-language seam): ``WRITERS[kind](data, module, rng, taken)`` returns the new
file bytes and the planted ``(name, scope, must)`` triples, ``kind`` chosen by ``language(target)``
from the file name; ``module`` is the file's module name, ``taken`` the test names in use across
the snapshot (the writer adds its own). ``name`` is the test's own name (function, method or
title) and ``scope`` its class, or "" when a name alone must identify it; a reported test id
belongs to a sentinel when it ends with ``scope`` + separator + ``name`` (``matches``). Another
language adds a pattern to ``language`` and an entry to ``WRITERS``.

Pure: no I/O. Callers: ``judging.judge`` (staging), ``judging.outcome_report`` (split),
``judging.verdict`` (check), ``tasks.check_expected`` (which files were sealed).
"""

from __future__ import annotations

import random
import re
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from workflow_bench.frameworks import sentinel_writers
from workflow_bench.judging import sentinels_js, sentinels_python
from workflow_bench.taskspec.oracles import OracleFile, OracleSnapshot

# What each sentinel of one file must be reported as, in the order they are written.
MUST = ("failed", "failed", "passed", "skipped")
TOKEN_BYTES = 8  # the fixed-shape control's names: 16 hex digits
# The fixed-shape control's banner (the writers write none).
BANNER = "workflow-bench sentinel tests: added to this staged copy for one run (README, 'Sealed outcomes')"
# pytest's default python_files (test_*.py, *_test.py); the unittest shim loads any path.
_PYTHON_TEST = re.compile(r"(?:test_[^/]*|[^/]*_test)\.py")
# node --test's default patterns and the usual vitest/jest names: *.test.*, *.spec.*, *-test.*,
# *_test.*, test-*.*, test_*.*, test.*.
_JS_EXTENSIONS = ("js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx")
_JS_TEST = re.compile(r"(?:[^/]*[._-](?:test|spec)|test[-_][^/]*|test)\.(?:" + "|".join(_JS_EXTENSIONS) + ")")
# A JavaScript file registers tests by calling one of these (imported or global): the sentinels
# use the same binding, so they run in the same framework.
_JS_REGISTERS = re.compile(r"\b(?:test|it)\s*(?:\.\s*\w+\s*)?\(")
_MAIN_GUARD = re.compile(rb"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.MULTILINE)


class Reported(Protocol):
    """What a sentinel check reads of a reported test (``judging.verdict.TestResult``)."""

    @property
    def test_id(self) -> str: ...

    @property
    def outcome(self) -> str: ...


R = TypeVar("R", bound=Reported)


@dataclass(frozen=True, slots=True)
class Sentinel:
    """One sentinel test: its random name and the outcome it must be reported with."""

    token: str
    """Its test name (function, method or title)."""
    must: str
    target: str
    """The oracle file it was added to."""
    scope: str = ""
    """Its class, or the file's module name for a module-level test ("": the name alone)."""


@dataclass(frozen=True, slots=True)
class SentinelPlan:
    """The sentinels of one run (empty: no oracle file could be sealed)."""

    sentinels: tuple[Sentinel, ...] = ()

    @property
    def targets(self) -> tuple[str, ...]:
        """The oracle files that carry sentinels, in staging order."""
        return tuple(dict.fromkeys(s.target for s in self.sentinels))


def language(target: str) -> str | None:
    """``"python"``, ``"javascript"`` or None: which sentinel block a staged file can carry."""
    name = target.rsplit("/", 1)[-1]
    if _PYTHON_TEST.fullmatch(name):
        return "python"
    if _JS_TEST.fullmatch(name):
        return "javascript"
    return None


Writer = Callable[[bytes, str, random.Random, set[str]], tuple[bytes, list[tuple[str, str, str]]]]
WRITERS: dict[str, Writer] = {
    "python": sentinels_python.write,
    "javascript": lambda data, _module, rng, taken: sentinels_js.write(data, rng, taken),
}


def add_sentinels(
    snapshot: OracleSnapshot,
    *,
    rng: random.Random | None = None,
    fixed_shape: bool = False,
    token: Callable[[int], str] = secrets.token_hex,
) -> tuple[OracleSnapshot, SentinelPlan]:
    """The snapshot with sentinels written into every test file it can seal, and their plan.

    ``rng`` makes the names, positions and bodies (``secrets.SystemRandom`` unless a test passes a
    seeded one). ``fixed_shape``: the old block appended under ``token``'s names instead (the
    negative control only)."""
    if fixed_shape:
        return _fixed_shape(snapshot, token=token)
    chooser = rng or secrets.SystemRandom()
    taken: set[str] = set()
    files: list[OracleFile] = []
    sentinels: list[Sentinel] = []
    for oracle_file in snapshot.files:
        kind = _kind(oracle_file)
        # The framework registry's writers first (tape, Go, Rust, Perl: named sentinels, not yet in
        # the oracle's own vocabulary like Python's and JavaScript's); a tape file named *.test.js
        # must not get the JavaScript block, whose tests never end under tape.
        sealed = _registry_sealed(oracle_file, token)
        if sealed is not None or kind is None or kind not in WRITERS:
            files.append(oracle_file if sealed is None else sealed[0])
            sentinels += [] if sealed is None else sealed[1]
            continue
        module = oracle_file.target.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        data, planted = WRITERS[kind](oracle_file.data, module, chooser, taken)
        files.append(OracleFile.of(oracle_file.target, data))
        sentinels += [Sentinel(name, must, oracle_file.target, scope) for name, scope, must in planted]
    return replace(snapshot, files=tuple(files)), SentinelPlan(tuple(sentinels))


def _kind(oracle_file: OracleFile) -> str | None:
    kind = language(oracle_file.target)
    if kind == "javascript" and not _JS_REGISTERS.search(oracle_file.data.decode("utf-8", "replace")):
        return None  # nothing to register the sentinels with
    return kind


def _fixed_shape(
    snapshot: OracleSnapshot, *, token: Callable[[int], str]
) -> tuple[OracleSnapshot, SentinelPlan]:
    """The sentinels as they were: a bannered block appended, 16-hex-digit names (the control)."""
    files: list[OracleFile] = []
    sentinels: list[Sentinel] = []
    for oracle_file in snapshot.files:
        kind = _kind(oracle_file)
        sealed = _registry_sealed(oracle_file, token)
        if sealed is not None or kind is None:
            files.append(oracle_file if sealed is None else sealed[0])
            sentinels += [] if sealed is None else sealed[1]
            continue
        names = [token(TOKEN_BYTES) for _ in range(len(MUST) + 1)]
        block = _python_block(names) if kind == "python" else _javascript_block(names)
        data = (
            _python_insert(oracle_file.data, block) if kind == "python" else _append(oracle_file.data, block)
        )
        files.append(OracleFile.of(oracle_file.target, data))
        sentinels += [Sentinel(t, must, oracle_file.target) for t, must in zip(names[1:], MUST, strict=True)]
    return replace(snapshot, files=tuple(files)), SentinelPlan(tuple(sentinels))


def _registry_sealed(
    oracle_file: OracleFile, token: Callable[[int], str]
) -> tuple[OracleFile, list[Sentinel]] | None:
    """A file whose sentinels the framework registry writes (tape, Go, Rust, Perl), sealed; None
    when no writer takes it."""
    writers = sentinel_writers(oracle_file.target.rsplit("/", 1)[-1])
    if not writers:
        return None  # no names drawn: a Python or JavaScript file's come next, from the same source
    names = [token(TOKEN_BYTES) for _ in range(len(MUST) + 1)]
    for writer in writers:
        if (data := writer(oracle_file.data, names)) is not None:
            break
    else:
        return None
    planned = [Sentinel(t, must, oracle_file.target) for t, must in zip(names[1:], MUST, strict=True)]
    return OracleFile.of(oracle_file.target, data), planned


def _append(data: bytes, block: str) -> bytes:
    return data + (b"" if data.endswith(b"\n") or not data else b"\n") + block.encode()


def _python_insert(data: bytes, block: str) -> bytes:
    """Before a top-level ``if __name__ == "__main__":`` (the file may be run as a script, and
    ``unittest.main()`` there would run before a class defined after it), else at the end."""
    guards = list(_MAIN_GUARD.finditer(data))
    if not guards:
        return _append(data, block)
    at = guards[-1].start()
    return data[:at] + block.encode() + b"\n\n" + data[at:]


def _python_block(names: Sequence[str]) -> str:
    cls, fail_library, fail_plain, passes, skips = names
    return f'''

# --- {BANNER} ---
import unittest as _wfbench_unittest_{cls}


class WfbenchSentinel_{cls}(_wfbench_unittest_{cls}.TestCase):
    def test_{fail_library}(self):
        self.assertEqual("{fail_library}", "{fail_library}-")

    def test_{fail_plain}(self):
        assert "{fail_plain}" == "{fail_plain}-"

    def test_{passes}(self):
        self.assertTrue(True)

    @_wfbench_unittest_{cls}.skip("{skips}")
    def test_{skips}(self):
        pass
'''


def _javascript_block(names: Sequence[str]) -> str:
    cls, fail_library, fail_plain, passes, skips = names
    run = f"wfbenchTest_{cls}"
    # A block statement: valid in ESM and CommonJS, in TypeScript too; `typeof` never throws on a
    # name that is not declared (jest's globals, an imported `test`, vitest's `it`).
    return f"""
// --- {BANNER} ---
{{
  // @ts-ignore
  const {run} = typeof test === 'function' ? test : typeof it === 'function' ? it : undefined;
  if ({run}) {{
    {run}('{fail_library}', () => {{
      // @ts-ignore
      if (typeof expect === 'function') expect('{fail_library}').toBe('{fail_library}-');
      // @ts-ignore
      else if (typeof assert !== 'undefined' && typeof assert.strictEqual === 'function')
        // @ts-ignore
        assert.strictEqual('{fail_library}', '{fail_library}-');
      else throw new Error('{fail_library}');
    }});
    {run}('{fail_plain}', () => {{
      throw new Error('{fail_plain}');
    }});
    {run}('{passes}', () => {{}});
    {run}.skip('{skips}', () => {{}});
  }}
}}
"""


@dataclass(frozen=True, slots=True)
class SentinelFinding:
    """What one run showed of its sentinels (``check``)."""

    wrong: tuple[tuple[Sentinel, str], ...] = ()
    """Sentinels reported with another outcome than planned (never honest): (sentinel, reported)."""
    missing: tuple[Sentinel, ...] = ()
    """Required sentinels that were not reported at all."""
    verified: tuple[str, ...] = ()
    """Required targets whose every sentinel was reported as planned."""

    @property
    def failed_as_planned(self) -> bool:
        """A must-fail sentinel was reported failed: the framework saw a failing test."""
        return bool(self.verified)


def split(tests: Iterable[R], plan: SentinelPlan) -> tuple[tuple[R, ...], tuple[R, ...]]:
    """(the oracle's own results, the sentinels' results) of ``tests``: a result belongs to the
    sentinel it ``matches``."""
    own: list[R] = []
    found: list[R] = []
    for test in tests:
        (found if any(matches(s, test.test_id) for s in plan.sentinels) else own).append(test)
    return tuple(own), tuple(found)


# What separates a test's name from its scope (or from the path, suites and classes before it) in
# the ids the frameworks report: unittest's ".", pytest's and the JUnit merge's "::", the kit's
# JavaScript reporters' " > ".
_SEPARATORS = ("::", ".", " > ", "/")
_PARAMETERS = re.compile(r"(?:\[[^\]]*\]|\s\([^)]*\))$")  # pytest's [param], a unittest subtest


def matches(sentinel: Sentinel, test_id: str) -> bool:
    """``test_id`` reports ``sentinel``: it ends with its scope (if any) and name, each after a
    separator, before an optional parameter list; a fixed-shape sentinel: it contains its name."""
    if not sentinel.scope and re.fullmatch(r"[0-9a-f]{16}", sentinel.token):
        return sentinel.token in test_id
    bare = _PARAMETERS.sub("", test_id)
    for sep in _SEPARATORS:
        if not (bare == sentinel.token or bare.endswith(sep + sentinel.token)):
            continue
        if not sentinel.scope:
            return True
        head = bare[: len(bare) - len(sentinel.token) - len(sep)] if bare != sentinel.token else ""
        for scope in (sentinel.scope, sentinel.scope + ".py"):
            if head == scope or any(head.endswith(s + scope) for s in _SEPARATORS):
                return True
    return False


def check(
    plan: SentinelPlan, reported: Iterable[Reported], *, required: frozenset[str] | None
) -> SentinelFinding:
    """Compare the sentinels' reported results with the plan.

    ``required``: the targets whose sentinels must be reported (the lock's ``oracle_sealed``);
    None requires every target that carries sentinels. A sentinel reported wrongly counts
    whatever ``required`` says."""
    results = list(reported)
    wrong: list[tuple[Sentinel, str]] = []
    missing: list[Sentinel] = []
    bad_targets: set[str] = set()
    for sentinel in plan.sentinels:
        outcomes = {_outcome(t.outcome) for t in results if matches(sentinel, t.test_id)}
        needed = required is None or sentinel.target in required
        if not outcomes:
            if needed:
                missing.append(sentinel)
                bad_targets.add(sentinel.target)
            continue
        if outcomes != {sentinel.must}:
            wrong.append((sentinel, "/".join(sorted(outcomes))))
            bad_targets.add(sentinel.target)
    verified = tuple(t for t in plan.targets if (required is None or t in required) and t not in bad_targets)
    return SentinelFinding(tuple(wrong), tuple(missing), verified)


def _outcome(outcome: str) -> str:
    return "failed" if outcome == "error" else outcome  # a raised assertion may surface as an error


def reported_targets(plan: SentinelPlan, reported: Iterable[Reported]) -> tuple[str, ...]:
    """The targets whose every sentinel was reported exactly as planned (what ``tasks check``
    records as sealed)."""
    return check(plan, reported, required=None).verified
