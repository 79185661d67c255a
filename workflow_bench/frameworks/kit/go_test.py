"""Harness-owned ``go test`` adapter: ``go test -json``'s event stream as the judge's result lines.

``python3 -I -B "$WORKFLOW_BENCH_GO_TEST" PACKAGE...`` claims the judge runner's result channel
(``wfbench_result_channel``) before any Go code is built, then runs ``go test -json -count=1
PACKAGE...`` (``go`` from ``PATH``: the task's provisioned runtime) offline (``GOPROXY=off``,
``GOFLAGS=-mod=mod``, ``CGO_ENABLED=0``: standard-library tasks, no C toolchain), with its build
cache under ``$TMPDIR``. Every test's final event (``pass`` / ``fail`` / ``skip``) becomes one
line ``<package>::<test>``; a package that fails without a test event (it does not build) is one
errored ``<package>::[build]``. The tests' own output is printed as plain text. ``{"done":
true}`` follows only if ``go`` exited by itself; the exit status is ``go``'s. Stdlib only.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench_result_channel as results

del sys.path[0]

OUTCOME = {"pass": "passed", "fail": "failed", "skip": "skipped"}


def main(argv: list[str]) -> int:
    try:
        channel = results.open_channel()
    except results.NoChannel as exc:
        print(f"go test adapter: {exc}", file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="wfbench-go-")
    env = {
        **os.environ,
        "CGO_ENABLED": "0",
        "GOPROXY": "off",
        "GOFLAGS": "-mod=mod",
        "GOTOOLCHAIN": "local",
        "GOTELEMETRY": "off",
        "GOCACHE": os.path.join(scratch, "cache"),
        "GOPATH": os.path.join(scratch, "path"),
        "GOENV": "off",
    }
    try:
        child = subprocess.Popen(  # noqa: TID251 (the sandbox-side kit: stdlib only)
            ["go", "test", "-json", "-count=1", *argv], stdout=subprocess.PIPE, env=env, close_fds=True
        )
    except OSError as exc:
        print(f"go test adapter: cannot run go: {exc}", file=sys.stderr)
        return 127
    tested: set[str] = set()
    assert child.stdout is not None
    for raw in child.stdout:
        try:
            event = json.loads(raw)
        except ValueError:
            sys.stdout.write(raw.decode("utf-8", "replace"))
            continue
        if not isinstance(event, dict):
            continue
        action, package, test = event.get("Action"), str(event.get("Package", "")), event.get("Test")
        if action == "output":
            sys.stdout.write(str(event.get("Output", "")))
        elif action in OUTCOME and isinstance(test, str):
            tested.add(package)
            results.emit(channel, f"{package}::{test}", OUTCOME[action])
        elif action == "fail" and package not in tested:
            results.emit(channel, f"{package}::[build]", "error", "the package failed without running a test")
    code = child.wait()
    results.done(channel)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
