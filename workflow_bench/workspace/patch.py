"""The patch and churn of a cell, from a git directory the agent never had.

Contract: ``PatchView`` owns a bare repository created by the harness in the cell's directory,
outside the workspace and never mounted into the sandbox. ``record`` walks the workspace on
the host (never following a symlink, bounded by the snapshot caps) and writes exactly the
bytes on disk as one commit through ``git fast-import``: no index, no ``.gitignore``,
``.gitattributes``, clean/smudge filters, ``info/exclude``, skip-worktree or assume-unchanged
flag, hook or config of the agent's is ever consulted, and the workspace's ``.git`` is not read
at all. ``diff`` compares two such commits in that bare repository (no work tree, so no
attributes from the tree; ``core.attributesFile`` and the system attributes are disabled, as for
every git command the harness runs: ``workspace.git``).

So the saved patch is what changed on disk between the state before the first session and the
state after the last one. Files a ``.gitignore`` hides are on disk, so they are in the patch.
Not represented (documented limits): empty directories, special files (FIFOs, sockets,
devices) and any path with a component named ``.git`` (git cannot store one), the dependency
mount points (read-only, never the agent's work).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from workflow_bench.process import ProcessError

from .git import git_result, run_git
from .snapshot import MAX_SNAPSHOT_BYTES, NON_WORK_PATHS, WorkspaceLimitError, walk_tree

MAX_PATCH_BYTES = 300_000  # reference harness cap; a larger diff is truncated with a marker
# numstat is one short line per changed path: 64 MiB is ~1M paths. Above it the churn would be a
# silent undercount, so the change is refused instead (charged to the arm as workspace-invalid).
MAX_NUMSTAT_BYTES = 64 * 1024 * 1024
_COMMITTER = b"committer workflow-bench <view@workflow-bench.invalid> 946684800 +0000\n"


class PatchView:
    """A harness-owned bare repository recording workspace states of one cell."""

    def __init__(self, git_dir: Path, *, excluded: Iterable[str] = ()) -> None:
        self.git_dir = git_dir
        self._excluded = frozenset(p.strip("/") for p in excluded)
        run_git(["init", "-q", "--bare", "--template=", str(git_dir)], what="init harness patch view")

    def _args(self, *args: str) -> list[str]:
        return [f"--git-dir={self.git_dir}", *args]

    def record(self, workspace: Path, ref: str) -> None:
        """Commit the exact on-disk state of ``workspace`` as ``refs/heads/<ref>``.

        The import stream is spooled to a file beside the view (bounded by the snapshot caps),
        so a large workspace is never held in memory.
        """
        stream = self.git_dir / f"import-{ref}.stream"
        try:
            with open(stream, "wb") as out:
                out.write(f"commit refs/heads/{ref}\n".encode() + _COMMITTER + b"data 0\ndeleteall\n")
                for path, mode, data in _entries(workspace, self._excluded):
                    out.write(b"M %s inline %s\ndata %d\n" % (mode, _quote(path), len(data)))
                    out.write(data + b"\n")
                out.write(b"done\n")
            run_git(
                self._args("fast-import", "--quiet", "--done"),
                what="record the workspace in the harness patch view",
                stdin=stream,
            )
        finally:
            stream.unlink(missing_ok=True)

    def read(self, ref: str, path: str) -> bytes:
        """The bytes ``ref`` recorded at ``path`` (a symlink's target for a link). Raises
        ``ProcessError`` when it recorded no such file."""
        result = run_git(
            self._args("cat-file", "blob", f"refs/heads/{ref}:{path}"),
            what=f"read {path!r} from the harness patch view",
            max_stdout_bytes=MAX_SNAPSHOT_BYTES,
        )
        return result.stdout

    def diff(self, base: str, after: str) -> tuple[bytes, dict[str, int]]:
        """The bounded binary patch from ``base`` to ``after`` and its churn (non-work paths excluded)."""
        diff = ["diff", "--no-ext-diff", "--no-textconv", "--no-renames"]
        result = git_result(
            self._args(*diff, "--binary", f"refs/heads/{base}", f"refs/heads/{after}"),
            max_stdout_bytes=MAX_PATCH_BYTES,
        )
        if not result.ok:
            raise ProcessError("diff the harness patch view", result)
        patch = result.stdout
        if result.stdout_overflow:
            patch += f"\n[truncated at {MAX_PATCH_BYTES} bytes]\n".encode()
        excludes = [f":(exclude){p}" for p in NON_WORK_PATHS]
        numstat = run_git(
            self._args(*diff, "--numstat", f"refs/heads/{base}", f"refs/heads/{after}", "--", *excludes),
            what="diff --numstat on the harness patch view",
            max_stdout_bytes=MAX_NUMSTAT_BYTES,
        )
        if numstat.stdout_overflow:
            raise WorkspaceLimitError(
                f"the change's numstat exceeds {MAX_NUMSTAT_BYTES} bytes (too many paths)"
            )
        return patch, parse_numstat(numstat.stdout.decode("utf-8", "replace"))


def _entries(root: Path, excluded: frozenset[str]) -> Iterator[tuple[bytes, bytes, bytes]]:
    """(path, git mode, bytes) of every regular file and symlink, sorted, never through a link."""
    total = 0
    for rel, full, st in walk_tree(root):
        parts = rel.split("/")
        if any(part.lower() == ".git" for part in parts) or any(
            rel == e or rel.startswith(e + "/") for e in excluded
        ):
            continue
        if stat.S_ISLNK(st.st_mode):
            yield os.fsencode(rel), b"120000", os.fsencode(os.readlink(full))
        elif stat.S_ISREG(st.st_mode):
            total += st.st_size
            if total > MAX_SNAPSHOT_BYTES:
                raise WorkspaceLimitError(f"workspace exceeds {MAX_SNAPSHOT_BYTES} bytes")
            mode = b"100755" if st.st_mode & 0o111 else b"100644"
            yield os.fsencode(rel), mode, _read(full, st.st_size)


def _read(path: str, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(size + 1)
    if len(data) != size:
        raise WorkspaceLimitError(f"{path} changed size while it was recorded")
    return data


def _quote(path: bytes) -> bytes:
    """A C-style quoted path for fast-import: any byte is representable, nothing is interpreted."""
    out = bytearray(b'"')
    for byte in path:
        if byte in (0x22, 0x5C) or byte < 0x20 or byte >= 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def parse_numstat(text: str) -> dict[str, int]:
    """Churn from ``git diff --numstat``; binary files count as a file with 0/0 lines."""
    files = insertions = deletions = 0
    for line in text.splitlines():
        parts = line.split("\t", 2)
        if len(parts) != 3:
            continue
        files += 1
        insertions += int(parts[0]) if parts[0].isdigit() else 0
        deletions += int(parts[1]) if parts[1].isdigit() else 0
    return {"diff_files": files, "diff_insertions": insertions, "diff_deletions": deletions}
