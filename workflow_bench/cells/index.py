"""The toolkit's code-graph index as a per-task snapshot: built once on the sanitized template.

Public surface: ``IndexResult``, ``build_index``, ``index_digest``. The toolkit's index step runs
inside the sandbox over the template (no network, the toolkit's runtime mounts read-only, a
private HOME that vanishes), before any cell is copied from it; the output directory is then
digested, reproducibly: files the toolkit declares volatile count by name, and its optional
read-only dump command stands in for their content (``IndexStep``). Cells get the index
read-only (``cells/run.py`` binds it over the clone's copy; ``baseline_nomcp`` gets an empty dir
there). A task repository that already holds the output directory is refused at bind time
(``taskspec/index_guard.py``, exit 2); the check here is a second line. A failed build is
recorded, not raised: that task's cells become ``infra-error`` with the log tail; other tasks run.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.input_files import bounded_walk
from workflow_bench.process import run_process
from workflow_bench.sandbox import Mount, RunPolicy, SandboxKind, create_sandbox, tool_environment
from workflow_bench.toolkit.spec import Toolkit

INDEX_TIMEOUT_S = 900
# An index is a database and a few metadata files (GitNexus: under 100 entries, 3 levels).
MAX_INDEX_ENTRIES, MAX_INDEX_DEPTH = 100_000, 64
LOG_TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class IndexResult:
    """``digest`` of the built index, or ``error`` (with the build log tail) when it failed."""

    output: str
    digest: str | None
    error: str | None


def index_digest(root: Path, *, volatile: tuple[str, ...] = (), canonical: bytes | None = None) -> str:
    """sha256 over every file under ``root`` (relative path, bytes); symlinks by target.

    Files matching a ``volatile`` glob count by name only (their bytes differ between two builds
    of the same commit); ``canonical`` (a dump of their content) counts by its sorted lines.
    """
    h = hashlib.sha256()
    # Walked by input_files.bounded_walk (one sorted order; a deep or huge index raises, never recurses).
    for rel, full, st in bounded_walk(root, max_entries=MAX_INDEX_ENTRIES, max_depth=MAX_INDEX_DEPTH):
        if stat.S_ISDIR(st.st_mode):
            continue
        if stat.S_ISLNK(st.st_mode):
            entry = ["link", rel, os.readlink(full)]
        elif any(fnmatch.fnmatchcase(rel, pattern) for pattern in volatile):
            entry = ["volatile", rel]
        else:
            entry = ["file", rel, _file_sha256(full)]
        h.update(json.dumps(entry).encode())
    if canonical is not None:
        lines = sorted(canonical.decode("utf-8", "replace").splitlines())
        h.update(json.dumps(["canonical", hashlib.sha256("\n".join(lines).encode()).hexdigest()]).encode())
    return "sha256:" + h.hexdigest()


def build_index(template: Path, *, toolkit: Toolkit, bwrap_bin: str) -> IndexResult | None:
    """Run the toolkit's index step on ``template`` (None when the toolkit has none)."""
    step = toolkit.index
    if step is None:
        return None
    output = template / step.output
    if os.path.lexists(output):
        return IndexResult(
            step.output,
            None,
            f"task repository already contains {step.output}/ (a committed index could leak answers or "
            "be tampered with); refused",
        )
    sandbox = create_sandbox(SandboxKind.BWRAP, workspace=template, claude_bin=None, bwrap_bin=bwrap_bin)
    mounts = tuple(Mount(source=Path(m.source), target=m.target) for m in toolkit.runtime_mounts)
    result = sandbox.run(
        list(step.command),
        policy=RunPolicy(workspace_writable=True, mounts=mounts),
        env=tool_environment(step.env),
        timeout_s=INDEX_TIMEOUT_S,
    )
    log = result.stdout.decode("utf-8", "replace")
    if not result.ok or not output.is_dir() or output.is_symlink():
        tail = (result.describe() + "\n" + log)[-LOG_TAIL_CHARS:]
        return IndexResult(step.output, None, f"index build failed ({' '.join(step.command[-4:])}): {tail}")
    canonical = None
    if step.digest_command is not None:
        # Read-only: the dump describes the index as built, and cannot change it.
        dump = sandbox.run(
            list(step.digest_command),
            policy=RunPolicy(workspace_writable=False, mounts=mounts),
            env=tool_environment(step.env),
            timeout_s=INDEX_TIMEOUT_S,
        )
        if not dump.ok:
            tail = (dump.describe() + "\n" + dump.stdout.decode("utf-8", "replace"))[-LOG_TAIL_CHARS:]
            return IndexResult(step.output, None, f"index digest command failed: {tail}")
        canonical = dump.stdout
    # Cells read the snapshot as their own unprivileged uid (sandbox/_userns.py), never as the
    # uid that built it: whatever modes the toolkit left, everyone may read it (never write).
    made_readable = run_process(["chmod", "-R", "a+rX", "--", str(output)], timeout_s=INDEX_TIMEOUT_S)
    if not made_readable.ok:
        return IndexResult(step.output, None, f"index output not readable: {made_readable.describe()}")
    try:
        digest = index_digest(output, volatile=step.digest_volatile, canonical=canonical)
    except (ValueError, OSError) as exc:  # TreeLimitError is a ValueError
        return IndexResult(step.output, None, f"index output unreadable: {exc}"[:LOG_TAIL_CHARS])
    return IndexResult(step.output, digest, None)


def _file_sha256(path: str) -> str:
    """In 1 MiB chunks: an index file is never held in the runner's memory whole."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
