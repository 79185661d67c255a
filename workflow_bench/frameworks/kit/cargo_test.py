"""Harness-owned ``cargo test`` adapter: libtest's per-test lines as the judge's result lines.

``python3 -I -B "$WORKFLOW_BENCH_CARGO_TEST" TARGET...`` (integration test targets: the stems of
``tests/*.rs``, or ``tests/<name>/main.rs``) claims the judge runner's result channel before
anything is built, then runs ``cargo test --offline --test TARGET`` once per target (``cargo``
from ``PATH``: the task's provisioned runtime), its build in ``$TMPDIR`` (``CARGO_TARGET_DIR``,
``CARGO_HOME``). A working directory cargo cannot write (verify's read-only workspace, no
``Cargo.lock`` yet) is copied to ``$TMPDIR`` first. Each ``test NAME ... ok|FAILED|ignored``
line of the test binary's report (read up to its ``failures:`` or ``test result:`` line, so a
failing test's captured output is never parsed) becomes ``<target>::<NAME>``; a target that
does not build is one errored ``<target>::[build]``. ``{"done": true}`` follows when every
cargo exited by itself; the exit status is 0 iff all did with 0. Stdlib only.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench_result_channel as results

del sys.path[0]

LINE = re.compile(r"^test (\S.*?) \.\.\. (ok|FAILED|ignored)(?:, .*)?$")
OUTCOME = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}


def main(argv: list[str]) -> int:
    try:
        channel = results.open_channel()
    except results.NoChannel as exc:
        print(f"cargo test adapter: {exc}", file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="wfbench-cargo-")
    cwd = os.getcwd()
    if not os.access(cwd, os.W_OK) and not os.path.exists("Cargo.lock"):
        copy = os.path.join(scratch, "src")
        shutil.copytree(cwd, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "target"))
        cwd = copy
    env = {
        **os.environ,
        "CARGO_TARGET_DIR": os.path.join(scratch, "target"),
        "CARGO_HOME": os.path.join(scratch, "home"),
        "CARGO_NET_OFFLINE": "true",
        "CARGO_TERM_COLOR": "never",
    }
    worst = 0
    for target in argv:
        try:
            child = subprocess.Popen(  # noqa: TID251 (the sandbox-side kit: stdlib only)
                ["cargo", "test", "--offline", "--test", target],
                stdout=subprocess.PIPE,
                cwd=cwd,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            print(f"cargo test adapter: cannot run cargo: {exc}", file=sys.stderr)
            return 127
        assert child.stdout is not None
        reporting, reported = True, False
        for raw in child.stdout:
            line = raw.decode("utf-8", "replace")
            sys.stdout.write(line)
            text = line.rstrip("\n")
            if text.startswith("running "):
                reporting = True
            elif (text in ("failures:", "") and reported) or text.startswith("test result:"):
                reporting = False
            elif reporting and (match := LINE.match(text)):
                reported = True
                results.emit(channel, f"{target}::{match.group(1)}", OUTCOME[match.group(2)])
        code = child.wait()
        if code != 0 and not reported:
            results.emit(channel, f"{target}::[build]", "error", "the test target did not build or run")
        worst = worst or code
    results.done(channel)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
