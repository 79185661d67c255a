"""Harness-owned TAP adapter: each test file's TAP stream as the judge's result lines.

``python3 -I -B "$WORKFLOW_BENCH_TAP" RUNNER FILE...`` claims the judge runner's result channel
(``wfbench_result_channel``) before any test code runs, then runs every file on its own, as its
framework's runner does, and reads its standard output as TAP (version 12/13) with one small
strict reader. ``RUNNER`` is ``perl`` (prove: ``perl -Ilib -It/lib FILE``), ``tape`` or
``node-tap`` (``node FILE``), each from ``PATH``. A test line is ``ok`` / ``not ok``, its number, an optional
``- description`` and an optional ``# SKIP`` / ``# TODO`` directive (another ``# …`` is a comment).

- perl, node-tap: each top-level test line is one test ``<file>::<description>`` (a skip
  without a description is named by its reason; node-tap's subtests are indented, so a test is
  its top-level ``t.test``, and a ``# time=…`` after the description is a comment).
- tape: a test is the ``# <name>`` comment tape prints when it starts, with the assertion
  lines after it: ``<file>::<name>``, failed if any of them failed, skipped if all were; ``# SKIP
  <name>`` is a skipped test. A comment with no assertion after it (tape's ``# tests N`` summary,
  a test that asserted nothing) is no test; a name used twice gets `` [2]``. A ``t.comment()``
  prints the same line as a test's start, so the assertions after it count under its text.

``not ok`` is failed, ``# SKIP`` skipped; a ``# TODO`` line is skipped either way (TAP says it does
not count). The stream must be well formed, else the file is one errored ``<file>::[tap]`` with
the first reason: exactly one plan (``1..N``, first or last), test numbers 1, 2, … in order,
as many test lines as the plan says, no ``Bail out!``, exit status 0 when no test failed. Indented
lines (subtests' own streams, YAML diagnostics) and other ``#`` comments are printed, not read.
``{"done": true}`` follows when every file ran; the exit status is 1 when any test failed or
a stream was malformed. Stdlib only.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench_result_channel as results

del sys.path[0]

TEST = re.compile(
    r"(not )?ok\b(?: (\d+))?(?: -)? ?([^#]*?)\s*(?:#\s*(?:(SKIP|TODO)\b\S*\s*(.*)|[^#]*))?", re.I
)
PLAN = re.compile(r"1\.\.(\d+)(?:\s*#\s*(?:SKIP\b.*|.*))?")


class Malformed(ValueError):
    pass


RUNNERS = {"perl": ("perl", "-Ilib", "-It/lib"), "tape": ("node",), "node-tap": ("node",)}
GROUP = re.compile(r"#\s+(SKIP\s+)?(\S.*?)\s*")


def read_tap(text: str, exit_code: int, *, grouped: bool = False) -> list[tuple[str, str, str | None]]:
    """(name, outcome, message) per test of one TAP stream; ``Malformed`` naming the first fault.
    ``grouped``: tests are tape's ``# <name>`` groups of test lines, not the lines themselves."""
    tests: list[tuple[str, str, str | None]] = []
    plans: list[tuple[int, int]] = []  # (planned, tests seen before it)
    groups: list[tuple[str, list[tuple[str, str, str | None]]]] = []
    for line in text.splitlines():
        if grouped and (group := GROUP.fullmatch(line)):
            skipped, name = group.groups()
            groups.append((name, [(name, "skipped", None)] if skipped else []))
            if skipped:
                groups.append(("", []))  # what follows a skipped test is not in it
            continue
        if not line or line[0] in " \t#" or re.fullmatch(r"TAP version 1[34]", line):
            continue
        if line.startswith("Bail out!"):
            raise Malformed(f"the file bailed out: {line[9:].strip() or 'no reason'}")
        if plan := PLAN.fullmatch(line):
            plans.append((int(plan.group(1)), len(tests)))
            continue
        match = TEST.fullmatch(line)
        if match is None:
            continue  # not TAP: the test's own output
        failed, number, description, directive, reason = match.groups()
        if number is None or int(number) != len(tests) + 1:
            raise Malformed(f"test {len(tests) + 1} is numbered {number or 'nothing'}: {line[:120]!r}")
        name = description.strip() or (reason or "").strip() or f"test {number}"
        if directive and directive.upper() in ("SKIP", "TODO"):
            tests.append((name, "skipped", None))
        else:
            tests.append((name, "failed" if failed else "passed", line[:300] if failed else None))
        if grouped:
            if not groups:
                raise Malformed(f"test {number} comes before any test's name: {line[:120]!r}")
            groups[-1][1].append(tests[-1])
    if len(plans) != 1:
        raise Malformed(f"{len(plans)} plans (1..N) in the stream, not one")
    planned, seen = plans[0]
    if seen not in (0, len(tests)):
        raise Malformed("the plan is neither before the first test nor after the last")
    if planned != len(tests):
        raise Malformed(f"the plan says {planned} tests, the stream has {len(tests)}")
    if exit_code != 0 and not any(outcome == "failed" for _, outcome, _ in tests):
        raise Malformed(f"the file exited {exit_code} with no failed test")
    return _by_group(groups) if grouped else tests


def _by_group(
    groups: list[tuple[str, list[tuple[str, str, str | None]]]],
) -> list[tuple[str, str, str | None]]:
    """One test per named group with a test line (or a skip): failed if any failed, skipped if all were."""
    out: list[tuple[str, str, str | None]] = []
    seen: dict[str, int] = {}
    for name, lines in groups:
        if not name or not lines:
            continue
        seen[name] = seen.get(name, 0) + 1
        shown = name if seen[name] == 1 else f"{name} [{seen[name]}]"
        failures = [message for _, outcome, message in lines if outcome == "failed"]
        if failures:
            out.append((shown, "failed", failures[0]))
        elif all(outcome == "skipped" for _, outcome, _ in lines):
            out.append((shown, "skipped", None))
        else:
            out.append((shown, "passed", None))
    return out


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in RUNNERS:
        print(f"TAP adapter: want {' or '.join(RUNNERS)}, then the test files", file=sys.stderr)
        return 2
    runner, files = RUNNERS[argv[0]], argv[1:]
    try:
        channel = results.open_channel()
    except results.NoChannel as exc:
        print(f"TAP adapter: {exc}", file=sys.stderr)
        return 2
    worst = 0
    for path in files:
        try:
            child = subprocess.run(  # the sandbox-side kit: stdlib only
                [*runner, path], stdout=subprocess.PIPE, close_fds=True, check=False
            )
        except OSError as exc:
            print(f"TAP adapter: cannot run {runner[0]}: {exc}", file=sys.stderr)
            return 127
        text = child.stdout.decode("utf-8", "replace")
        sys.stdout.write(text)
        try:
            tests = read_tap(text, child.returncode, grouped=argv[0] == "tape")
        except Malformed as exc:
            results.emit(channel, f"{path}::[tap]", "error", str(exc))
            worst = 1
            continue
        for name, outcome, message in tests:
            results.emit(channel, f"{path}::{name}", outcome, message)
            worst = max(worst, int(outcome == "failed"))
    results.done(channel)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
