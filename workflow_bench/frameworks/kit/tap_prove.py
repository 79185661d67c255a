"""Harness-owned TAP adapter: each Perl test file's TAP stream as the judge's result lines.

``python3 -I -B "$WORKFLOW_BENCH_PROVE" FILE...`` claims the judge runner's result channel
(``wfbench_result_channel``) before any test code runs, then runs every file as ``prove`` does
(``perl -Ilib -It/lib FILE``, ``perl`` from ``PATH``) and reads its standard output as TAP
(version 12/13) with a small strict reader: a test line is ``ok`` / ``not ok``, its number, an
optional ``- description`` and an optional ``# SKIP`` / ``# TODO`` directive. Each test is one
line ``<file>::<description>`` (a skip without a description is named by its reason); ``not
ok`` is failed, ``# SKIP`` skipped; a ``# TODO`` test is skipped either way (TAP says it does
not count). The stream must be well formed, else the file is one errored ``<file>::[tap]`` with
the first reason: exactly one plan (``1..N``, first or last), test numbers 1, 2, … in order,
as many tests as the plan says, no ``Bail out!``, exit status 0 when no test failed. Indented
lines (subtests' own streams, YAML diagnostics) and ``#`` comments are printed, not read.
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

TEST = re.compile(r"(not )?ok\b(?: (\d+))?(?: -)? ?([^#]*?)\s*(?:#\s*(SKIP|TODO)\b\S*\s*(.*))?", re.I)
PLAN = re.compile(r"1\.\.(\d+)(?:\s*#\s*(?:SKIP\b.*|.*))?")


class Malformed(ValueError):
    pass


def read_tap(text: str, exit_code: int) -> list[tuple[str, str, str | None]]:
    """(name, outcome, message) per test of one TAP stream; ``Malformed`` naming the first fault."""
    tests: list[tuple[str, str, str | None]] = []
    plans: list[tuple[int, int]] = []  # (planned, tests seen before it)
    for line in text.splitlines():
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
    if len(plans) != 1:
        raise Malformed(f"{len(plans)} plans (1..N) in the stream, not one")
    planned, seen = plans[0]
    if seen not in (0, len(tests)):
        raise Malformed("the plan is neither before the first test nor after the last")
    if planned != len(tests):
        raise Malformed(f"the plan says {planned} tests, the stream has {len(tests)}")
    if exit_code != 0 and not any(outcome == "failed" for _, outcome, _ in tests):
        raise Malformed(f"the file exited {exit_code} with no failed test")
    return tests


def main(argv: list[str]) -> int:
    try:
        channel = results.open_channel()
    except results.NoChannel as exc:
        print(f"TAP adapter: {exc}", file=sys.stderr)
        return 2
    worst = 0
    for path in argv:
        try:
            child = subprocess.run(  # the sandbox-side kit: stdlib only
                ["perl", "-Ilib", "-It/lib", path], stdout=subprocess.PIPE, close_fds=True, check=False
            )
        except OSError as exc:
            print(f"TAP adapter: cannot run perl: {exc}", file=sys.stderr)
            return 127
        text = child.stdout.decode("utf-8", "replace")
        sys.stdout.write(text)
        try:
            tests = read_tap(text, child.returncode)
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
