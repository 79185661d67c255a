"""A fork server for `tools/mutation.py`: runs one mutant's tests per request, each in a fresh import.

Contract: started with its working tree as argv[1]; imports pytest once but never the project,
so every forked child imports `workflow_bench` (and runs its import-time code) anew — with
the mutant in place. Reads one JSON request per stdin line: {"path": <file to overwrite or
null>, "source": <its mutated text>, "env": {...}, "tests": [...], "timeout": <s>}; writes one
JSON line back: {"verdict": "killed" | "survived" | "timeout"}. The file is restored after the
child exits, whatever happened. A request with "warm_only": true only learns its tests' imports
(below) and answers {"verdict": "warm"}. Exit on EOF.

Speed: before its first request the server learns, in a throwaway child, which third-party
modules the requested tests import (scipy alone takes seconds), and imports them itself, so
every mutant's child inherits them and re-imports only the project and its tests. Nothing
under the working tree is ever pre-imported: that is the code a mutant changes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest  # imported before forking: the shared, project-free part of every run

ARGS = ("-x", "-q", "--tb=no", "-p", "no:cacheprovider", "-p", "no:randomly")  # output goes nowhere
_PROJECT = {"__main__", "workflow_bench", "tests", "conftest"}  # never pre-imported, whatever __file__ says


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


def _third_party_modules(tree: Path, tests: list[str]) -> list[str]:
    """Names of the modules outside `tree` that collecting `tests` imports (learned in a child)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.chdir(tree)
        sys.path.insert(0, str(tree))
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        names: list[str] = []
        try:
            pytest.main(["--collect-only", *ARGS, *tests])
            root = str(tree)
            for name, module in list(sys.modules.items()):
                where = getattr(module, "__file__", None) or ""
                top = name.partition(".")[0]
                if top not in _PROJECT and not where.startswith(root):
                    names.append(name)
        finally:
            with os.fdopen(write, "w") as out:
                out.write(json.dumps(names))
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(text or "[]")


def _preimport(names: list[str]) -> None:
    for name in sorted(names, key=lambda n: n.count(".")):
        if name in sys.modules:
            continue
        # a module that cannot be pre-imported is simply imported by each child, as before
        with contextlib.suppress(Exception):
            __import__(name)


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
    warm = False
    for line in sys.stdin:
        request = json.loads(line)
        if not warm:
            _preimport(_third_party_modules(tree, request["tests"]))
            warm = True
        if request.get("warm_only"):  # learn the imports of these tests, run nothing
            print(json.dumps({"verdict": "warm"}), flush=True)
            continue
        print(json.dumps({"verdict": _run(tree, request)}), flush=True)


if __name__ == "__main__":
    main()
