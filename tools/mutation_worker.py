"""A fork server for `tools/mutation.py`: runs one mutant's tests per request, each in a fresh import.

Contract: started with its working tree as argv[1]; imports pytest once but never the project,
so every forked child imports `workflow_bench` (and runs its import-time code) anew — with
the mutant in place. Reads one JSON request per stdin line: {"path": <file to overwrite or
null>, "source": <its mutated text>, "env": {...}, "tests": [...], "timeout": <s>}; writes one
JSON line back: {"verdict": "killed" | "survived" | "timeout"}. The file is restored after the
child exits, whatever happened. Exit on EOF.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest  # imported before forking: the shared, project-free part of every run

ARGS = ("-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly")


def _child(tree: Path, env: dict[str, str], tests: list[str]) -> None:
    os.environ.update(env)
    os.chdir(tree)
    sys.path.insert(0, str(tree))
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        code = pytest.main([*ARGS, *tests])
    except BaseException:  # any crash in the child is a failed run: the mutant is killed
        code = 1
    os._exit(int(code))


def _run(tree: Path, request: dict) -> str:
    target = tree / request["path"] if request.get("path") else None
    original = target.read_bytes() if target else None
    if target:
        target.write_text(request["source"])
    try:
        pid = os.fork()
        if pid == 0:
            _child(tree, request.get("env", {}), request["tests"])
        deadline = time.monotonic() + request["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                return "survived" if code == 0 else "killed"
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "timeout"
            time.sleep(0.02)
    finally:
        if target:
            target.write_bytes(original)


def main() -> None:
    sys.dont_write_bytecode = True  # a mutant's .pyc must never outlive it (same size, same mtime second)
    tree = Path(sys.argv[1]).resolve()
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps({"verdict": _run(tree, request)}), flush=True)


if __name__ == "__main__":
    main()
