"""The patch and churn of a cell, from a git directory the agent never had.

Contract: ``PatchView`` owns a bare repository created by the harness outside the workspace (and,
for a cell, outside the cell's volume: the view is harness work, never charged to
``--cell-disk-mib``), never mounted into the sandbox. It writes exactly the bytes on disk as
commits through ``git fast-import``: no index, no ``.gitignore``, ``.gitattributes``,
clean/smudge filters, ``info/exclude``, skip-worktree or assume-unchanged flag, hook or config of
the agent's is ever consulted, and the workspace's ``.git`` is not read at all. ``diff`` compares
two such commits in that bare repository (no work tree, so no attributes from the tree;
``core.attributesFile`` and the system attributes are disabled, as for every git command the
harness runs: ``workspace.git``).

Work proportional to what changed (issue 26): the template's tree is recorded once
(``record_state``, in the template's own view); a cell's view borrows its objects (git
alternates, harness-owned and read-only to the cell) and ``record_changes`` commits, on top of
that base, only the paths the snapshot scans reported changed (``workspace.snapshot``), so the
diff walks only changed subtrees. Compression is off in every view (the repositories are
throwaway; a 1 GB template took longer to deflate than to write). ``record`` still walks and
imports a whole tree (tests, tools).

So the saved patch is what changed on disk between the state before the first session and the
state after the last one. Files a ``.gitignore`` hides are on disk, so they are in the patch.
Not represented (documented limits): empty directories, special files (FIFOs, sockets,
devices) and any path with a component named ``.git`` (git cannot store one), the dependency
mount points (read-only, never the agent's work).

Bounded by the cell, not by what the agent writes (issue 30): the view lives beside the cell
directory, on the host's disk, so what it stores is capped. A file over ``MAX_BLOB_BYTES``, and
in a cell's view every file once one import (the base: what setup changed; the after: what the
sessions changed) has taken ``MAX_VIEW_IMPORT_BYTES`` of content (the smallest first), is
recorded as a one-line stand-in naming its size and sha256 (the snapshot's streamed digest: the
file is not read again), so the diff shows that stand-in instead of its bytes; the saved patch
is capped at ``MAX_PATCH_BYTES`` anyway. Content is copied into the import stream in chunks,
never held whole. A cell's view so costs the host at most two imports' content stored
(uncompressed) and one's spooled at a time, plus one stand-in line per path past the caps; the
runner's memory does not grow with any file's size. A file over a cap counts as one changed
file with the stand-in's one line in the churn.
Before this, a 1 GB file was read into the runner twice and stored twice beside the cell.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from workflow_bench.process import ProcessError

from .git import git_result, run_git, scaled_timeout
from .snapshot import (
    MAX_SNAPSHOT_BYTES,
    NON_WORK_PATHS,
    WorkspaceLimitError,
    WorkspaceState,
    walk_tree,
)

MAX_PATCH_BYTES = 300_000  # reference harness cap; a larger diff is truncated with a marker
# A file larger than this is a stand-in in every view (its diff could never fit the patch cap),
# and each import of a cell's view takes at most this much content: the host cost of its view.
MAX_BLOB_BYTES = 8 * 1024 * 1024
MAX_VIEW_IMPORT_BYTES = 16 * 1024 * 1024
STAND_IN = b"workflow-bench: content not recorded in the patch view"
_CHUNK = 1 << 20
# numstat is one short line per changed path: 64 MiB is ~1M paths. Above it the churn would be a
# silent undercount, so the change is refused instead (charged to the arm as workspace-invalid).
MAX_NUMSTAT_BYTES = 64 * 1024 * 1024
_COMMITTER = b"committer workflow-bench <view@workflow-bench.invalid> 946684800 +0000\n"
# Throwaway repositories: store objects as they are (deflating a 1 GB template cost seconds).
_UNCOMPRESSED = ("-c", "core.compression=0", "-c", "pack.compression=0", "-c", "core.looseCompression=0")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_BLOB_KINDS = ("file:", "link:")
_NO_CHURN = {"diff_files": 0, "diff_insertions": 0, "diff_deletions": 0}


class PatchView:
    """A harness-owned bare repository recording workspace states of one template or one cell.

    ``alternate``: another view (the template's) whose objects this one may read: a cell's
    commits then hold only what the cell changed. ``create=False`` defers ``git init`` to the
    first import, so a cell that changed nothing never starts a git process for its patch.
    """

    def __init__(
        self,
        git_dir: Path,
        *,
        excluded: Iterable[str] = (),
        alternate: PatchView | None = None,
        create: bool = True,
        budget_bytes: int | None = None,
    ) -> None:
        self.git_dir = git_dir
        self._excluded = frozenset(p.strip("/") for p in excluded)
        self._alternate = alternate
        self._created = False
        self._budget = budget_bytes
        """Content bytes one import may take (None: no such cap, the template's own view)."""
        self.stand_ins = 0
        """Files recorded as a stand-in (over a cap) by this view so far."""
        if create:
            self._create()

    def _create(self) -> None:
        if self._created:
            return
        run_git(["init", "-q", "--bare", "--template=", str(self.git_dir)], what="init harness patch view")
        if self._alternate is not None:
            info = self.git_dir / "objects" / "info"
            info.mkdir(parents=True, exist_ok=True)
            (info / "alternates").write_text(f"{self._alternate.git_dir.resolve() / 'objects'}\n")
        self._created = True

    def _args(self, *args: str) -> list[str]:
        return [*_UNCOMPRESSED, f"--git-dir={self.git_dir}", *args]

    def record(self, workspace: Path, ref: str) -> str:
        """Commit the exact on-disk state of ``workspace`` as ``refs/heads/<ref>`` (a full walk); its SHA."""
        return self._import(ref, None, (), _entries(workspace, self._excluded))

    def record_state(self, workspace: Path, ref: str, state: WorkspaceState) -> str:
        """Commit every file and link of ``state`` (just scanned from ``workspace``, nothing writing it)."""
        paths = sorted(p for p, e in state.entries.items() if e.startswith(_BLOB_KINDS) and self._kept(p))
        blobs = self._blobs(workspace, paths, state, budget=None)
        return self._import(ref, None, (), blobs, total_bytes=state.total_bytes, entries=len(paths))

    def record_changes(
        self,
        workspace: Path,
        ref: str,
        *,
        parent: str,
        before: WorkspaceState,
        after: WorkspaceState,
        paths: Iterable[str],
    ) -> str:
        """Commit ``after`` as ``refs/heads/<ref>`` on top of ``parent`` (the commit of ``before``),
        importing only ``paths`` (every path whose entry differs between the two states); the
        commit's SHA, or ``parent`` itself when no recorded path changed."""
        deleted, written = [], []
        for path in sorted(paths):
            if not self._kept(path):
                continue
            old, new = before.entries.get(path, ""), after.entries.get(path, "")
            if new.startswith(_BLOB_KINDS):
                written.append(path)
            elif old.startswith(_BLOB_KINDS):
                deleted.append(path)  # gone, or now a directory or a special file
        if not deleted and not written:
            return parent
        size = sum(after.keys[p][2] for p in written)
        blobs = self._blobs(workspace, written, after, budget=self._budget)
        return self._import(
            ref, parent, deleted, blobs, total_bytes=size, entries=len(written) + len(deleted)
        )

    def _blobs(
        self, workspace: Path, paths: list[str], state: WorkspaceState, *, budget: int | None
    ) -> Iterator[_Blob]:
        """The blobs of ``paths`` (files and links of ``state``): content while the caps allow
        (``budget``: this import's content bytes, None for none), the smallest first, else a
        stand-in."""
        for path in sorted(paths, key=lambda p: (state.keys[p][2], p)):
            entry = state.entries[path]
            if entry.startswith("link:"):
                yield os.fsencode(path), b"120000", os.fsencode(entry[len("link:") :])
                continue
            size = state.keys[path][2]
            mode = b"100755" if int(entry.split(":", 2)[1], 8) & 0o111 else b"100644"
            if size > MAX_BLOB_BYTES or (budget is not None and size > budget):
                self.stand_ins += 1
                yield os.fsencode(path), mode, stand_in(size, entry.rsplit(":", 1)[1])
                continue
            if budget is not None:
                budget -= size
            yield os.fsencode(path), mode, _Content(os.path.join(workspace, path), size)

    def _kept(self, rel: str) -> bool:
        return not any(part.lower() == ".git" for part in rel.split("/")) and not any(
            rel == e or rel.startswith(e + "/") for e in self._excluded
        )

    def _import(
        self,
        ref: str,
        parent: str | None,
        deleted: Iterable[str],
        blobs: Iterable[_Blob],
        *,
        total_bytes: int = 0,
        entries: int = 0,
    ) -> str:
        """One fast-import commit; the stream is spooled beside the view, never held in memory."""
        self._create()
        stream, marks = self.git_dir / f"import-{ref}.stream", self.git_dir / f"import-{ref}.marks"
        try:
            with open(stream, "wb") as out:
                out.write(f"commit refs/heads/{ref}\nmark :1\n".encode() + _COMMITTER + b"data 0\n")
                out.write(b"deleteall\n" if parent is None else b"from %s\n" % parent.encode())
                for gone in deleted:
                    out.write(b"D %s\n" % _quote(os.fsencode(gone)))
                for path, mode, data in blobs:
                    out.write(b"M %s inline %s\ndata %d\n" % (mode, _quote(path), len(data)))
                    if isinstance(data, _Content):
                        data.copy_to(out)
                    else:
                        out.write(data)
                    out.write(b"\n")
                out.write(b"done\n")
            run_git(
                self._args("fast-import", "--quiet", "--done", f"--export-marks={marks}"),
                what="record the workspace in the harness patch view",
                stdin=stream,
                timeout_s=scaled_timeout(total_bytes=total_bytes, entries=entries),
            )
            mark, _, sha = marks.read_text().strip().partition(" ")
            if mark != ":1" or not _SHA.fullmatch(sha):
                raise RuntimeError(f"the harness patch view exported no commit for {ref!r}")
            return sha
        finally:
            stream.unlink(missing_ok=True)
            marks.unlink(missing_ok=True)

    def read(self, commit: str, path: str) -> bytes:
        """The bytes ``commit`` (a recorded commit's SHA, in this view or the one it borrows from)
        holds at ``path`` (a symlink's target for a link). Raises ``ProcessError`` when it holds
        no such file."""
        result = run_git(
            self._args("cat-file", "blob", f"{commit}:{path}"),
            what=f"read {path!r} from the harness patch view",
            max_stdout_bytes=MAX_BLOB_BYTES,
        )
        if result.stdout_overflow or result.stdout.startswith(STAND_IN):
            raise WorkspaceLimitError(f"{path!r} is over the patch view's caps: its bytes were not recorded")
        return result.stdout

    def diff(self, base: str, after: str) -> tuple[bytes, dict[str, int]]:
        """The bounded binary patch from ``base`` to ``after`` (recorded refs or commit SHAs) and its
        churn (non-work paths excluded)."""
        if base == after and _SHA.fullmatch(base):
            return b"", dict(_NO_CHURN)  # one commit: nothing changed
        old, new = (r if _SHA.fullmatch(r) else f"refs/heads/{r}" for r in (base, after))
        diff = ["diff", "--no-ext-diff", "--no-textconv", "--no-renames"]
        result = git_result(self._args(*diff, "--binary", old, new), max_stdout_bytes=MAX_PATCH_BYTES)
        if not result.ok:
            raise ProcessError("diff the harness patch view", result)
        patch = result.stdout
        if result.stdout_overflow:
            patch += f"\n[truncated at {MAX_PATCH_BYTES} bytes]\n".encode()
        excludes = [f":(exclude){p}" for p in NON_WORK_PATHS]
        numstat = run_git(
            self._args(*diff, "--numstat", old, new, "--", *excludes),
            what="diff --numstat on the harness patch view",
            max_stdout_bytes=MAX_NUMSTAT_BYTES,
        )
        if numstat.stdout_overflow:
            raise WorkspaceLimitError(
                f"the change's numstat exceeds {MAX_NUMSTAT_BYTES} bytes (too many paths)"
            )
        return patch, parse_numstat(numstat.stdout.decode("utf-8", "replace"))


class _Content:
    """A file's bytes, copied into the import stream in chunks when the stream is written."""

    def __init__(self, path: str, size: int) -> None:
        self.path, self.size = path, size

    def __len__(self) -> int:
        return self.size

    def copy_to(self, out: BinaryIO) -> None:
        """Copy exactly ``size`` bytes (never through a link); ``WorkspaceLimitError`` if it changed."""
        fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        copied = 0
        with os.fdopen(fd, "rb") as handle:
            while chunk := handle.read(min(_CHUNK, self.size + 1 - copied)):
                copied += len(chunk)
                if copied > self.size:
                    break
                out.write(chunk)
        if copied != self.size:
            raise WorkspaceLimitError(f"{self.path} changed size while it was recorded")


_Blob = tuple[bytes, bytes, "bytes | _Content"]


def stand_in(size: int, sha256: str) -> bytes:
    """What a view records for a file over its caps: its size and digest, on one line."""
    return STAND_IN + b": %d bytes, sha256 %s\n" % (size, sha256.encode())


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _entries(root: Path, excluded: frozenset[str]) -> Iterator[_Blob]:
    """(path, git mode, content) of every regular file and symlink, sorted, never through a link."""
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
            if st.st_size > MAX_BLOB_BYTES:
                yield os.fsencode(rel), mode, stand_in(st.st_size, _sha256(full))
            else:
                yield os.fsencode(rel), mode, _Content(full, st.st_size)


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
