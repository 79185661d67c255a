"""Perl: ``prove``'s test files (``t/*.t``) run by the harness's TAP adapter, which reads each
file's TAP stream strictly (``kit/tap.py``, shared with tape); TAP is the outcome format. The interpreter is
the host's ``perl`` (with Test::More, Debian's ``perl-modules``), as the host's ``python3`` is.

Test ids are ``<file>::<description>``. Sentinels are four Test::More assertions written before
the file's last ``done_testing`` (a file with a fixed ``tests => N`` plan, or none, cannot carry
them: the plan would no longer hold).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ._model import Detection, Ecosystem, Framework, FrameworkError, Tree

TEST_FILE = re.compile(r"(^|/)t/(.+/)?[^/]+\.t$")
_DONE_TESTING = re.compile(rb"^[ \t]*done_testing\b[^\n]*$", re.MULTILINE)
_USES_TEST_MORE = re.compile(rb"^\s*use\s+Test::More\b", re.MULTILINE)


def _runs(path: str, _: bytes) -> bool:
    return bool(TEST_FILE.search(path))


def _detect(
    _registry: Mapping[str, Framework],
    _base: Tree,
    tests: Sequence[tuple[str, bytes]],
    _facts: Mapping[str, object],
) -> Detection:
    if not any(TEST_FILE.search(p) for p, _ in tests):
        raise FrameworkError(
            "none of the fix's Perl files is a prove test file (t/<name>.t): give --test-command"
        )
    return Detection(PROVE, ("the test files are t/*.t, run as prove runs them",))


def sentinels(data: bytes, names: Sequence[str]) -> bytes | None:
    """Four Test::More tests (names[1:]) before the last ``done_testing``, or None when the file
    does not use Test::More or ends without ``done_testing`` (a fixed plan would break)."""
    ends = list(_DONE_TESTING.finditer(data))
    if not ends or not _USES_TEST_MORE.search(data):
        return None
    _, fail_library, fail_plain, passes, skips = names
    block = (
        f'is("{fail_library}", "{fail_library}-", "t_{fail_library}");\n'
        f'ok(0, "t_{fail_plain}");\n'
        f'ok(1, "t_{passes}");\n'
        f'SKIP: {{ skip("t_{skips}", 1); ok(1, "t_{skips}"); }}\n'
    )
    at = ends[-1].start()
    return data[:at] + block.encode() + data[at:]


PROVE = Framework(
    "prove",
    "perl",
    _runs,
    'python3 -I -B "$WORKFLOW_BENCH_TAP" perl {files}',
    "each t/*.t file run as prove runs it (perl -Ilib) through the harness's TAP adapter "
    "($WORKFLOW_BENCH_TAP), which reads its TAP strictly; ids <file>::<description>; host perl",
    kit={"WORKFLOW_BENCH_TAP": "tap.py"},
)
FRAMEWORKS = (PROVE,)
PERL = Ecosystem(
    name="perl",
    label="Perl",
    source=re.compile(r"\.(t|pm|pl)$"),
    detect=_detect,
    test_config=(
        (".proverc", "prove options (includes, plugins)"),
        ("Makefile.PL", "the build that puts modules where the tests load them"),
        ("Build.PL", "the build that puts modules where the tests load them"),
    ),
    sentinel_file=re.compile(r"[^/]*\.t"),
    sentinel_writer=sentinels,
)
