"""Task repositories on disk: git queries, the bundle mirror cache and working-tree sources.

Owns every git command the task layer runs: the read-only probes behind loading (``rev-parse``,
``bundle list-heads``) and binding's one write, a ``clone --mirror`` of a bundle into the
content-addressed cache under ``cache_root()``. Also owns the checks that a ``sandbox_copy`` or
``sandbox_dependencies`` source lies inside a repository's working tree on disk, and the manifest
(path, size, sha256) of a dependency tree.

Must never: let a git environment variable of the caller redirect a query, run a hook or an
fsmonitor (every command goes through ``workspace.git``'s hardened configuration), accept a
source that resolves outside the working tree or into ``.git``, or follow a symlink inside a
dependency tree (it is recorded by its target text instead).

Callers: ``taskspec.schema`` (``repo_ref_problem`` at load time) and ``taskspec.spec`` (binding). Problems
come back as strings or ``WorktreeError``; the caller names the file, task and key.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from workflow_bench.workspace.git import git_result, query_git, scaled_timeout
from workflow_bench.workspace.snapshot import MAX_TASK_ENTRIES

SHA_PATTERN = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # sha1 or sha256 object format
_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{4,64}")
_BUNDLE_SIGNATURES = (b"# v2 git bundle\n", b"# v3 git bundle\n")
# git queries are local and read-only; a minute means a hung filesystem or a lock, not work.
GIT_TIMEOUT_S = 60
# Cloning a bundle copies its whole history; the largest real targets (~100 MB) clone in seconds.
BUNDLE_CLONE_TIMEOUT_S = 600
# Dependency-tree limits of the reference harness's task_assets.py (reference-harness.md §2:
# "limits 100 000 entries, 2 GiB"); the real node_modules trees it mounts fit under them.
MAX_DEPENDENCY_ENTRIES = 100_000
MAX_DEPENDENCY_BYTES = 2 * 1024**3


def cache_root() -> Path:
    """``$WORKFLOW_BENCH_CACHE`` or ``~/.cache/workflow-bench``."""
    configured = os.environ.get("WORKFLOW_BENCH_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "workflow-bench"


# ── git ────────────────────────────────────────────────────────────────────


def _git(args: Sequence[str], *, cwd: Path, timeout_s: float = GIT_TIMEOUT_S) -> tuple[bool, str]:
    """A read-only query (or the bundle clone) with the harness's hardened git (``workspace.git``)."""
    return query_git(args, cwd=cwd, timeout_s=timeout_s)


def _is_bundle(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError:
        return False
    return head in _BUNDLE_SIGNATURES


def _probe_repo(location: Path) -> tuple[str | None, dict[str, str] | None]:
    """(problem, None), or (None, None) for a repository, or (None, heads) for a bundle."""
    if location.is_file():
        if location.suffix != ".bundle" or not _is_bundle(location):
            return f"{location} is a file but not a git bundle (*.bundle with a bundle header)", None
        ok, output = _git(["bundle", "list-heads", str(location)], cwd=location.parent)
        if not ok:
            return f"{location} is not a readable git bundle: {output}", None
        heads = {}
        for line in output.splitlines():
            sha, _, name = line.partition(" ")
            heads[name] = sha
        return None, heads
    if not location.is_dir():
        return f"{location} does not exist (want a git repository or a *.bundle file)", None
    root, why, _ = _repo_root(location)
    if root is None:
        return f"{location} is not a git repository ({why})", None
    if root != location.resolve():
        return f"{location} is inside the git repository {root} but is not its top level", None
    return None, None


def _repo_root(location: Path) -> tuple[Path | None, str, bool]:
    """(worktree top level, or git dir of a bare repository, containing ``location``; git's
    complaint; whether the repository is bare)."""
    ok, bare = _git(["rev-parse", "--is-bare-repository"], cwd=location)
    if not ok:
        return None, bare, False
    is_bare = bare == "true"
    what = "--absolute-git-dir" if is_bare else "--show-toplevel"
    ok, output = _git(["rev-parse", what], cwd=location)
    if ok and output:
        return Path(output).resolve(), "", is_bare
    return None, output or "no top level", is_bare


def resolve_ref(repo: Path, ref: str) -> str | None:
    """The commit SHA ``ref`` names in ``repo``, or ``None`` if it names none."""
    ok, output = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], cwd=repo)
    return output if ok and SHA_PATTERN.fullmatch(output) else None


_SIZE_LINE_BYTES = 21  # one decimal object size (or "-") and its newline, at most


def tree_size(repo: Path, sha: str) -> tuple[int, int] | str:
    """(entries, bytes of every blob) of commit ``sha``'s whole tree, or why it could not be read.

    One ``ls-tree`` that prints only each entry's size, capped just past ``MAX_TASK_ENTRIES``
    lines: a larger tree is reported as over the cap without being listed to its end.
    """
    cap = (MAX_TASK_ENTRIES + 1) * _SIZE_LINE_BYTES
    args = ["-C", str(repo), "ls-tree", "-r", "-t", "--format=%(objectsize)", "--end-of-options", sha]
    result = git_result(args, max_stdout_bytes=cap, timeout_s=scaled_timeout(entries=MAX_TASK_ENTRIES))
    if not result.ok:
        return f"cannot list the tree of {sha[:12]}: {result.describe()}"
    lines = result.stdout.split(b"\n")
    if result.stdout_overflow:
        return len(lines), 0  # past the entry cap: the count alone refuses it
    sizes = [line for line in lines if line]
    return len(sizes), sum(int(line) for line in sizes if line.isdigit())


def tree_entry_type(repo: Path, sha: str, path: str) -> str | None:
    """The object type (``tree``, ``blob``, ``commit``) at ``path`` in commit ``sha``, or ``None``."""
    ok, output = _git(["ls-tree", "--end-of-options", sha, "--", path], cwd=repo)
    if not ok or not output:
        return None
    fields = output.splitlines()[0].split(None, 3)
    return fields[1] if len(fields) == 4 and fields[3] == path else None


def repo_ref_problem(location: Path, ref: str | None) -> tuple[str, str] | None:
    """``("repo" | "ref", problem)`` for the repository at ``location`` and ``ref``, or ``None``.

    Checked without cloning: a bundle's ref only against its heads where they can answer (an
    object name or expression waits for the clone at bind time). ``ref=None`` (malformed and
    already reported) checks the repository alone.
    """
    problem, heads = _probe_repo(location)
    if problem:
        return "repo", problem
    if ref is None:
        return None
    if heads is None:
        found = resolve_ref(location, ref)
        return None if found is not None else ("ref", f"{ref!r} does not name a commit in {location}")
    problem = _bundle_ref_problem(ref, heads)
    return None if problem is None else ("ref", problem)


def _bundle_ref_problem(ref: str, heads: Mapping[str, str]) -> str | None:
    """Check ``ref`` against a bundle's heads where that is possible without cloning it."""
    if any(name in heads for name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/{ref}")):
        return None
    if _HEX_PREFIX.fullmatch(ref) or any(c in ref for c in "~^:@{"):
        return None  # an object name or an expression: only the clone can answer, at bind time
    names = ", ".join(sorted(heads)) or "none"
    return f"{ref!r} is not a ref in the bundle (its refs: {names})"


# ── materializing ──────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class RepoHandle:
    """A task repository ready for binding."""

    path: Path
    """Where git queries run: the worktree top level, a bare repository's git dir, or a cached mirror."""
    identity: str
    """The repository's identity in a binding: its path, or ``bundle:sha256:<digest of the bundle>``."""
    worktree: Path | None
    """The resolved working tree on disk, or ``None`` for a bundle or a bare repository."""
    kind: Literal["worktree", "bare", "bundle"]
    """What ``location`` held; errors about a missing working tree name it."""


def materialize_repo(location: Path) -> RepoHandle | str:
    """A handle for a repository or bundle at ``location``, or the problem as a string.

    Bundles are cloned (``--mirror``) at most once into the content-addressed cache.
    """
    problem, heads = _probe_repo(location)
    if problem:
        return problem
    if heads is not None:
        cloned = _clone_bundle(location)
        if isinstance(cloned, str):
            return cloned
        return RepoHandle(path=cloned[0], identity=cloned[1], worktree=None, kind="bundle")
    root, why, is_bare = _repo_root(location)
    if root is None:
        return f"{location} is not a git repository ({why})"
    if is_bare:
        return RepoHandle(path=root, identity=str(root), worktree=None, kind="bare")
    return RepoHandle(path=root, identity=str(root), worktree=root, kind="worktree")


def _clone_bundle(bundle: Path) -> tuple[Path, str] | str:
    repos_dir = cache_root() / "repos"
    repos_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bundle-", dir=repos_dir) as tmp:
        # Hash and clone the same bytes: a bundle rewritten between the two steps must not end up
        # cached under the digest of its previous content.
        copy = Path(tmp) / "source.bundle"
        digest = hashlib.sha256()
        with bundle.open("rb") as src, copy.open("wb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                dst.write(chunk)
        identity = f"bundle:sha256:{digest.hexdigest()}"
        final = repos_dir / digest.hexdigest()
        if final.is_dir():
            # --git-dir, not discovery: a damaged cache entry must not resolve to an enclosing repo.
            ok, bare = _git(["--git-dir", str(final), "rev-parse", "--is-bare-repository"], cwd=repos_dir)
            if ok and bare == "true":
                return final, identity
            return f"cached clone {final} of {bundle} is not a bare repository; delete it and retry"
        staging = Path(tmp) / f"mirror-{secrets.token_hex(4)}"
        ok, output = _git(
            ["clone", "--mirror", "--quiet", "--", str(copy), str(staging)],
            cwd=Path(tmp),
            timeout_s=BUNDLE_CLONE_TIMEOUT_S,
        )
        if not ok:
            return f"cannot clone bundle {bundle}: {output}"
        ok, output = _git(["bundle", "verify", str(copy)], cwd=staging)
        if not ok:
            return f"bundle {bundle} failed 'git bundle verify': {output}"
        try:
            os.rename(staging, final)  # atomic: readers see no clone or a complete one
        except OSError:
            if not final.is_dir():
                raise
            shutil.rmtree(staging)  # another process published the same content first
    return final, identity


# ── working-tree sources ───────────────────────────────────────────────────


class WorktreeError(ValueError):
    """A working-tree source is unusable; the message names the path and why, never contents."""


def worktree_source(worktree: Path, source: str, *, directory_only: bool) -> Path:
    """The absolute path ``source`` resolves to inside ``worktree`` (already resolved).

    Symlinks are resolved first, so a link pointing out of the tree or into ``.git`` is refused
    like a path that does. Accepts a directory, or a regular file unless ``directory_only``.
    Raises ``WorktreeError``.
    """
    candidate = worktree / source
    try:
        resolved = candidate.resolve(strict=True)
    except FileNotFoundError:
        dangling = " (a dangling symlink)" if candidate.is_symlink() else ""
        raise WorktreeError(f"{source!r} does not exist in the working tree {worktree}{dangling}") from None
    except (OSError, RuntimeError) as err:  # RuntimeError: how Python 3.11 reports a symlink loop
        raise WorktreeError(f"{source!r} cannot be resolved in {worktree}: {err}") from None
    if not resolved.is_relative_to(worktree):
        raise WorktreeError(f"{source!r} resolves to {resolved}, outside the working tree {worktree}")
    inside = resolved.relative_to(worktree)
    if not inside.parts:
        raise WorktreeError(f"{source!r} resolves to the top level of {worktree}; name something inside it")
    if any(part.casefold() == ".git" for part in inside.parts):
        raise WorktreeError(f"{source!r} resolves into repository metadata ({inside})")
    try:
        mode = resolved.stat().st_mode
    except OSError as err:
        raise WorktreeError(f"{source!r} cannot be examined: {err.strerror}") from None
    if stat.S_ISDIR(mode) or (stat.S_ISREG(mode) and not directory_only):
        return resolved
    want = "a directory" if directory_only else "a regular file or a directory"
    raise WorktreeError(f"{source!r} is not {want}")


class TreeEntry(NamedTuple):
    """One manifest entry: a regular file (size, sha256) or a symlink (its target text, unfollowed)."""

    path: str
    size: int | None
    sha256: str | None
    link: str | None


@dataclass(frozen=True, slots=True)
class TreeManifest:
    """Every regular file and symlink under a dependency directory, path-sorted."""

    entries: tuple[TreeEntry, ...]
    entry_count: int
    """Directory entries walked, directories included: what ``MAX_DEPENDENCY_ENTRIES`` counts."""
    total_bytes: int


def tree_manifest(
    root: Path, *, max_entries: int = MAX_DEPENDENCY_ENTRIES, max_bytes: int = MAX_DEPENDENCY_BYTES
) -> TreeManifest:
    """Walk ``root`` without following symlinks and hash every regular file.

    Stops with ``WorktreeError`` past ``max_entries`` entries or ``max_bytes`` of file content,
    and on anything that is neither a file, a directory nor a symlink (a FIFO, a socket, a device).
    """
    entries: list[TreeEntry] = []
    count = total = 0
    stack = [("", root)]
    while stack:
        prefix, directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                batch = list(listing)
        except OSError as err:
            raise WorktreeError(f"{directory} cannot be listed: {err.strerror}") from None
        for entry in batch:
            count += 1
            if count > max_entries:
                raise WorktreeError(f"{root} has more than {max_entries} entries (the limit)")
            rel = f"{prefix}{entry.name}"
            try:
                if entry.is_symlink():
                    entries.append(TreeEntry(rel, None, None, os.readlink(entry.path)))
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((f"{rel}/", Path(entry.path)))
                    continue
                is_file = entry.is_file(follow_symlinks=False)
                declared = entry.stat(follow_symlinks=False).st_size if is_file else 0
            except OSError as err:
                raise WorktreeError(f"{root}: {rel!r} cannot be examined: {err.strerror}") from None
            if not is_file:
                raise WorktreeError(f"{root}: {rel!r} is not a file, directory or symlink")
            if total + declared > max_bytes:
                raise WorktreeError(f"{root} holds more than {max_bytes} bytes of files (the limit)")
            size, digest = _hash_file(Path(entry.path), rel, max_bytes=max_bytes - total)
            total += size
            entries.append(TreeEntry(rel, size, digest, None))
    entries.sort(key=lambda e: e.path)
    return TreeManifest(entries=tuple(entries), entry_count=count, total_bytes=total)


def _hash_file(path: Path, rel: str, *, max_bytes: int) -> tuple[int, str]:
    # O_NOFOLLOW: a file swapped for a symlink since the listing is refused, not followed;
    # O_NONBLOCK: a FIFO swapped in fails the type check instead of hanging the bind.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise WorktreeError(f"{rel!r} in a dependency tree cannot be read: {err.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WorktreeError(f"{rel!r} in a dependency tree changed type while it was read")
        digest, size = hashlib.sha256(), 0
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            size += len(chunk)
            if size > max_bytes:  # the file grew after it was listed
                raise WorktreeError(f"{rel!r} grew past the dependency byte limit while it was read")
        return size, digest.hexdigest()
    except OSError as err:
        raise WorktreeError(f"{rel!r} in a dependency tree cannot be read: {err.strerror}") from None
    finally:
        os.close(fd)
