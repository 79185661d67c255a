"""The toolkit's code-graph index as a per-task snapshot: built once on the sanitized template.

Public surface: ``IndexResult``, ``build_index``, ``index_digest``. The toolkit's index step runs
inside the sandbox over the template (no network, the toolkit's runtime mounts read-only, a
private HOME that vanishes), before any cell is copied from it; the output directory is then
digested. Cells get the index read-only (``cells/run.py`` binds it over the clone's copy;
``baseline_nomcp`` gets an empty dir there). A task repository that already holds the output
directory is refused: a committed index could leak answers or be tampered with. A failed build is
recorded, not raised: that task's cells become ``infra-error`` with the log tail; other tasks run.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from workflow_bench.sandbox import Mount, RunPolicy, SandboxKind, create_sandbox, tool_environment
from workflow_bench.toolkit.spec import Toolkit

INDEX_TIMEOUT_S = 900
LOG_TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class IndexResult:
    """``digest`` of the built index, or ``error`` (with the build log tail) when it failed."""

    output: str
    digest: str | None
    error: str | None


def index_digest(root: Path) -> str:
    """sha256 over every file under ``root`` (relative path, bytes); symlinks by target."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                entry = ["link", rel, os.readlink(full)]
            else:
                entry = ["file", rel, hashlib.sha256(full.read_bytes()).hexdigest()]
            h.update(json.dumps(entry).encode())
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
    return IndexResult(step.output, index_digest(output), None)
