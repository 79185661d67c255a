"""The fork-server pool of `./dev mutation`: verdicts for mutants run in fresh interpreters.

Contract: `run_pool(tree, requests, jobs=, label=)` starts `jobs` servers
(tools/mutation_worker.py) and returns one verdict ("killed" | "survived" | "timeout") per
request, in order. Every server first learns what the requested tests import (pre-imported once,
so no child pays for scipy); the first one also runs every requested test on the unmutated tree
as the negative control: a harness that fails it reports no kill (SystemExit). Progress goes to
stderr (`Progress`), at most once a minute and at the end. Used by tools/mutation.py only.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


STARTED = time.monotonic()  # imported when the command starts: progress reads as time since then


class Progress:
    """`[mutation] <label>: done/total at M.M min` (since the command started) on stderr,
    at most once every `every` seconds and when the last one is done."""

    def __init__(self, label: str, total: int, *, every: float = 60.0) -> None:
        self.label, self.total, self.every = label, total, every
        self.done = 0
        self._lock = threading.Lock()
        self._last = time.monotonic()

    def tick(self, done: int | None = None) -> None:
        with self._lock:
            self.done = self.done + 1 if done is None else done
            now = time.monotonic()
            if now - self._last >= self.every or self.done == self.total:
                self._last = now
                self.say()

    def say(self) -> None:
        minutes = (time.monotonic() - STARTED) / 60
        line = f"[mutation] {self.label}: {self.done}/{self.total} at {minutes:.1f} min"
        print(line, file=sys.stderr, flush=True)


def run_pool(
    tree: Path, requests: list[dict], *, jobs: int, label: str, copies: list[Path] | None = None
) -> list[str]:
    """Verdicts for `requests`, run by `jobs` fork servers (tools/mutation_worker.py).

    With `copies`, worker i works in copies[i] (requests that rewrite a file need a tree each);
    otherwise every worker shares `tree` (requests that only set the environment)."""
    if not requests:
        return []
    trees = copies or [tree] * jobs
    pending: queue.Queue[tuple[int, dict]] = queue.Queue()
    for item in enumerate(requests):
        pending.put(item)
    verdicts: list[str] = [""] * len(requests)
    control = sorted({t for r in requests for t in (*r["tests"], *r.get("then", {}).get("tests", ()))})
    if not control:
        return ["survived"] * len(requests)  # no mapped test: nothing can kill them
    broken: list[str] = []
    stop = threading.Event()
    progress = Progress(label, len(requests))

    def serve(where: Path, control_here: bool) -> None:
        def ask(request: dict) -> str:
            if not request["tests"]:
                return "survived"  # no mapped test: nothing can kill it
            fields = {k: v for k, v in request.items() if k != "then"}
            worker.stdin.write(json.dumps({"timeout": 300, **fields}) + "\n")
            worker.stdin.flush()
            return json.loads(worker.stdout.readline())["verdict"]

        worker = subprocess.Popen(
            [sys.executable, str(ROOT / "tools" / "mutation_worker.py"), str(where)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        try:
            # Negative control, once per pool (the first worker, while the others start): the
            # unmutated tree must pass every requested test through this harness, or every "kill"
            # would be a broken harness, not a test doing its job. The other workers' trees are
            # copies of the same files (copytree raises on any failure), so one control stands for all.
            first = {"timeout": 600, "tests": control, "warm_only": not control_here}
            worker.stdin.write(json.dumps(first) + "\n")  # also pre-imports what they all import
            worker.stdin.flush()
            if json.loads(worker.stdout.readline())["verdict"] != ("survived" if control_here else "warm"):
                broken.append(str(where))
                stop.set()
                return
            while not stop.is_set():
                try:
                    index, request = pending.get_nowait()
                except queue.Empty:
                    return
                verdict = ask(request)
                if verdict == "survived" and request.get("then"):
                    verdict = ask(request["then"])  # a second, wider run for a survivor
                verdicts[index] = verdict
                progress.tick()
        finally:
            worker.stdin.close()
            worker.wait(timeout=60)

    threads = [threading.Thread(target=serve, args=(where, i == 0)) for i, where in enumerate(trees[:jobs])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if broken:
        raise SystemExit(f"the unmutated tests fail inside the mutation worker for {broken}")
    if "" in verdicts:
        raise SystemExit("a mutation worker died before finishing its mutants")
    return verdicts
