"""Harness-owned Maven adapter: ``mvn -o test`` of named test classes, Surefire's JUnit XML as evidence.

``python3 -I -B "$WORKFLOW_BENCH_MAVEN" CLASS...`` (fully qualified test classes, from
``src/test/java``) claims the judge runner's result channel before anything is built, copies the
working tree (without ``.git`` and ``target``) to ``$TMPDIR``, so every run compiles from the
sources alone into a build directory of its own (nothing an earlier build or the agent left in
``target/`` is reused, and verify's read-only workspace builds), and runs ``mvn -o -B -q test
-Dtest=CLASS,...`` there (``mvn`` from ``PATH``: the task's provisioned runtime, offline
against its packaged repository). The JUnit paths are not passed on to Maven, so nothing it runs
writes there. When it exits, Surefire's reports (``target/surefire-reports/TEST-*.xml``, one per
class) are joined under one ``<testsuites>`` into ``$WORKFLOW_BENCH_JUNIT``, which the harness
attests and parses with its own hardened reader (ids ``<class>::<method>``); a run that wrote no
report (the build failed) is one errored ``[build]`` result line. ``{"done": true}`` follows
when ``mvn`` exited by itself; the exit status is Maven's. Stdlib only.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wfbench_result_channel as results

del sys.path[0]

PROLOG = re.compile(rb"^\s*<\?xml[^>]*\?>")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
MAX_JUNIT_FILE_BYTES = 16 * 1024 * 1024  # keep in sync with judging/kit/judge_runner.py


def main(argv: list[str]) -> int:
    try:
        channel = results.open_channel()
    except results.NoChannel as exc:
        print(f"maven adapter: {exc}", file=sys.stderr)
        return 2
    junit = os.environ.get("WORKFLOW_BENCH_JUNIT")
    if not junit or not argv:
        print("maven adapter: want WORKFLOW_BENCH_JUNIT and at least one test class", file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="wfbench-maven-")
    project = os.path.join(scratch, "project")
    shutil.copytree(os.getcwd(), project, symlinks=True, ignore=shutil.ignore_patterns(".git", "target"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKFLOW_BENCH_JUNIT")}
    # Maven's own JVM only (not the forked one the tests run in): a short-lived build starts faster
    # with the client compiler and the serial collector (about half the CPU time on two cores).
    fast = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    env["MAVEN_OPTS"] = f"{fast} -Djava.io.tmpdir={scratch} {env.get('MAVEN_OPTS', '')}".strip()
    command = [
        "mvn", "-o", "-B", "-q", "-Dstyle.color=never", "-DfailIfNoTests=false",
        "-Dsurefire.failIfNoSpecifiedTests=false", f"-Dtest={','.join(argv)}", "test",
    ]  # fmt: skip
    try:
        child = subprocess.Popen(  # noqa: TID251 (the sandbox-side kit: stdlib only)
            command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, close_fds=True
        )
    except OSError as exc:
        print(f"maven adapter: cannot run mvn: {exc}", file=sys.stderr)
        return 127
    assert child.stdout is not None
    for raw in child.stdout:  # Debian's maven 3.8 writes colour resets even in batch mode
        sys.stdout.write(ANSI.sub("", raw.decode("utf-8", "replace")))
    code = child.wait()
    reports = sorted(glob.glob(os.path.join(project, "target", "surefire-reports", "TEST-*.xml")))
    if reports:
        parts, size = [], 0
        for path in reports:
            with open(path, "rb") as handle:
                data = handle.read(MAX_JUNIT_FILE_BYTES + 1)
            size += len(data)
            parts.append(PROLOG.sub(b"", data, count=1))
        if size <= MAX_JUNIT_FILE_BYTES:
            with open(junit, "wb") as out:
                out.write(b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n')
                out.writelines(parts)
                out.write(b"\n</testsuites>\n")
        else:
            results.emit(channel, "[surefire]", "error", f"the reports exceed {MAX_JUNIT_FILE_BYTES} bytes")
    else:
        results.emit(channel, "[build]", "error", "Maven wrote no Surefire report (the build failed)")
    results.done(channel)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
