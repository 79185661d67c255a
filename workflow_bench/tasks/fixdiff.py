"""A known fix, split in two: its test changes (the hidden oracle) and the rest (the reference patch).

Owns ``split_fix``: from a repository, a base commit and either a fix commit or a fix patch, the
changed paths sorted by ``is_test_path`` (the rules of ``TEST_PATH_RULES``, one line per
ecosystem), the fix's bytes of every added or modified test-side file, and the reference patch
(``git diff --binary`` of the base against the fix, limited to the other paths). A fix patch is
applied to the base in a private bare repository that borrows the user's objects (git
alternates), so the user's repository is only ever read: no object, ref or index of it changes.

Every git call is ``workspace.git``'s hardened one, on the user's repository before any sandboxed
process existed (its trust rule). Problems are ``FixError`` naming what was refused and why: a
commit that does not exist, a patch that does not apply, a fix that changes no tests or only tests.

Callers: ``tasks.new``, ``tasks.swebench``, tests.
"""

from __future__ import annotations

import re
import secrets
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from workflow_bench.process import ProcessError
from workflow_bench.workspace.git import query_git, run_git

# Which changed paths are test changes, by ecosystem: matched against the repository-relative
# path. A test-side file goes to the hidden oracle; everything else is the reference patch.
# ``testing/`` is not here on purpose: it is a library module in real projects (numpy.testing).
TEST_PATH_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a test directory", re.compile(r"(^|/)(tests?|__tests__|__snapshots__|spec)/")),
    ("python", re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$|(^|/)conftest\.py$")),
    # ``test.js`` at the root: tape's (and node --test's) usual single test file.
    ("javascript/typescript", re.compile(r"\.(test|spec)\.[cm]?[jt]sx?$|(^|/)test\.[cm]?[jt]s$")),
    ("go", re.compile(r"_test\.go$")),
    ("java/kotlin", re.compile(r"(^|/)src/test/")),
    ("ruby", re.compile(r"_(spec|test)\.rb$")),
    ("perl", re.compile(r"(^|/)t/(.+/)?[^/]+\.t$")),
)
# Bounds on what is read from a fix: a single diff or file past these is not one task's fix.
MAX_PATCH_BYTES = 1024 * 1024  # keep in sync with taskspec.schema.MAX_REFERENCE_PATCH_BYTES
MAX_FILE_BYTES = 512 * 1024  # keep in sync with taskspec.oracles.MAX_ORACLE_FILE_BYTES
MAX_CHANGED_PATHS = 10_000
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}  # a path is a path, never a pathspec pattern
_DIFF_OPTIONS = (
    "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", "--no-relative",
    "--src-prefix=a/", "--dst-prefix=b/",
)  # fmt: skip


class FixError(ValueError):
    """The fix was refused; the message says what and why."""


def test_rule(path: str) -> str | None:
    """The name of the first rule that makes ``path`` a test-side file, or None."""
    return next((name for name, pattern in TEST_PATH_RULES if pattern.search(path)), None)


def is_test_path(path: str) -> bool:
    return test_rule(path) is not None


@dataclass(frozen=True, slots=True)
class ChangedPath:
    """One path the fix changes: ``status`` A (added), M (modified), D (deleted), T (type changed)."""

    path: str
    status: str
    test_rule: str | None

    @property
    def is_test(self) -> bool:
        return self.test_rule is not None


@dataclass(frozen=True, slots=True)
class FixSplit:
    """A fix, split: the base and fix it was taken from, every changed path, the fix's bytes of each
    added or modified test-side file, and the reference patch (the other paths' diff)."""

    base_sha: str
    fix_ref: str
    """The fix commit's SHA, or ``patch <name>`` for a fix patch."""
    changed: tuple[ChangedPath, ...]
    test_files: tuple[tuple[str, bytes], ...]
    reference_patch: bytes

    @property
    def source_paths(self) -> tuple[str, ...]:
        return tuple(c.path for c in self.changed if not c.is_test)

    @property
    def deleted_tests(self) -> tuple[str, ...]:
        return tuple(c.path for c in self.changed if c.is_test and c.status == "D")


@dataclass(frozen=True, slots=True)
class TreeView:
    """Read-only view of one commit of a repository: its file paths and their bytes."""

    repo: Path
    sha: str
    paths: tuple[str, ...]
    index: frozenset[str]

    @classmethod
    def of(cls, repo: Path, sha: str) -> TreeView:
        listing = run_git(
            ["ls-tree", "-r", "--name-only", "-z", "--full-tree", sha],
            what=f"list the files of {sha[:12]}",
            cwd=repo,
            max_stdout_bytes=64 * 1024 * 1024,
        )
        names = [n.decode("utf-8", "surrogateescape") for n in listing.stdout.split(b"\0") if n]
        return cls(repo, sha, tuple(names), frozenset(names))

    def has(self, path: str) -> bool:
        return path in self.index

    def read(self, path: str, *, max_bytes: int = MAX_FILE_BYTES) -> bytes | None:
        """The file's bytes at this commit (None if absent or over ``max_bytes``)."""
        if not self.has(path):
            return None
        try:
            data = _blob(self.repo, self.sha, path, max_bytes=max_bytes)
        except FixError:
            return None
        return data

    def text(self, path: str) -> str:
        data = self.read(path)
        return data.decode("utf-8", "replace") if data is not None else ""


def resolve_commit(repo: Path, rev: str, *, what: str) -> str:
    """The commit SHA ``rev`` names in ``repo``; ``FixError`` naming ``what`` otherwise."""
    if not rev or rev.startswith("-"):
        raise FixError(f"{what} {rev!r} is not a revision")
    ok, out = query_git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd=repo
    )
    if not ok or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", out):
        raise FixError(f"{what} {rev!r} does not name a commit in {repo}")
    return out


def split_fix(
    repo: Path,
    *,
    base: str,
    fix: str | None = None,
    fix_patch: bytes | None = None,
    patch_name: str = "fix.patch",
    exclude: Sequence[str] = (),
) -> FixSplit:
    """Split the fix (a commit, or a patch applied to ``base``) against ``base``; ``FixError``.

    ``exclude``: glob patterns (``PurePosixPath.match``, e.g. ``CHANGELOG*``, ``docs/*``) of paths
    left out of both sides, as if the fix had not changed them.
    """
    if (fix is None) == (fix_patch is None):
        raise FixError("give exactly one of a fix commit and a fix patch")
    base_sha = resolve_commit(repo, base, what="base")
    if fix is not None:
        fix_sha = resolve_commit(repo, fix, what="fix commit")
        if fix_sha == base_sha:
            raise FixError(f"the fix commit {fix!r} is the base commit: there is no change")
        return _split(repo, base_sha, fix_sha, fix_ref=fix_sha, exclude=exclude)
    assert fix_patch is not None
    if len(fix_patch) > MAX_PATCH_BYTES:
        raise FixError(f"the fix patch is {len(fix_patch)} bytes; at most {MAX_PATCH_BYTES}")
    with tempfile.TemporaryDirectory(prefix="wfbench-fix-") as scratch:
        borrowed = borrowing_repo(repo, Path(scratch))
        tree = apply_to_base(borrowed, base_sha, fix_patch, name=f"the fix patch {patch_name}")
        return _split(borrowed, base_sha, tree, fix_ref=f"patch {patch_name}", exclude=exclude)


def borrowing_repo(repo: Path, scratch: Path) -> Path:
    """A bare repository in ``scratch`` that reads ``repo``'s objects and writes only its own."""
    ok, objects = query_git(["rev-parse", "--path-format=absolute", "--git-path", "objects"], cwd=repo)
    if not ok:
        raise FixError(f"{repo}: cannot find its object store: {objects}")
    borrowed = scratch / "borrowed.git"
    run_git(["init", "-q", "--bare", str(borrowed)], what="git init (fix patch)")
    (borrowed / "objects" / "info" / "alternates").write_text(objects + "\n")
    return borrowed


def apply_to_base(borrowed: Path, base_sha: str, patch: bytes, *, name: str) -> str:
    """The tree of ``base_sha`` with ``patch`` applied (in a private index), or ``FixError``."""
    index = {"GIT_INDEX_FILE": str(borrowed / f"fix-{secrets.token_hex(4)}.index")}
    run_git(["read-tree", base_sha], what="read the base tree", cwd=borrowed, env=index)
    try:
        run_git(
            ["apply", "--cached", "--whitespace=nowarn", "-"],
            what=f"{name} does not apply to the base {base_sha[:12]}",
            cwd=borrowed,
            env=index,
            stdin=patch,
        )
    except ProcessError as exc:
        raise FixError(str(exc)) from None
    tree = run_git(["write-tree"], what="write the fixed tree", cwd=borrowed, env=index)
    return tree.stdout.decode().strip()


def changed_files(repo: Path, base_sha: str, fix: str) -> list[ChangedPath]:
    """Every path ``fix`` (a commit or a tree) changes against ``base_sha``, no renames."""
    listing = run_git(
        ["diff", *_DIFF_OPTIONS, "--raw", "-z", base_sha, fix],
        what="list the fix's changes",
        cwd=repo,
        env=_LITERAL,
    )
    return _raw_entries(listing.stdout)


def _split(repo: Path, base_sha: str, fix: str, *, fix_ref: str, exclude: Sequence[str]) -> FixSplit:
    changed = [c for c in changed_files(repo, base_sha, fix) if not _excluded(c.path, exclude)]
    if not changed:
        raise FixError(
            f"the fix changes nothing against the base {base_sha[:12]}"
            + (" outside --exclude" if exclude else "")
        )
    tests = [c for c in changed if c.is_test]
    sources = [c for c in changed if not c.is_test]
    if not tests:
        raise FixError(
            "the fix changes no test files, so there is nothing to build a hidden oracle from "
            f"(changed: {', '.join(c.path for c in changed[:8])}); test files are named by "
            "tasks.fixdiff.TEST_PATH_RULES"
        )
    if not sources:
        raise FixError(
            "the fix changes only test files, so there is no reference patch: nothing for an agent "
            f"to do (changed: {', '.join(c.path for c in changed[:8])})"
        )
    files = []
    for entry in tests:
        if entry.status == "D":
            continue
        data = _blob(repo, fix, entry.path)
        files.append((entry.path, data))
    patch = run_git(
        # Explicit prefixes and options: the repository's own config (diff.noprefix, color.ui,
        # diff.relative) must not change the patch `git apply` reads later.
        ["diff", *_DIFF_OPTIONS, "--binary", "--full-index", base_sha, fix, "--", *(c.path for c in sources)],
        what="diff the reference patch",
        cwd=repo,
        env=_LITERAL,
        max_stdout_bytes=MAX_PATCH_BYTES + 1,
    ).stdout
    if len(patch) > MAX_PATCH_BYTES:
        raise FixError(f"the reference patch is over {MAX_PATCH_BYTES} bytes: not one task's fix")
    return FixSplit(base_sha, fix_ref, tuple(changed), tuple(files), patch)


def _excluded(path: str, patterns: Sequence[str]) -> bool:
    return any(PurePosixPath(path).match(pattern) for pattern in patterns)


def _raw_entries(raw: bytes) -> list[ChangedPath]:
    """``git diff --raw -z`` records: ``:<modes> <shas> <status>\\0<path>\\0`` (no renames)."""
    parts = raw.split(b"\0")
    entries = []
    for header, name in zip(parts[0::2], parts[1::2], strict=False):
        if not header:
            continue
        fields = header.decode("ascii", "replace").split()
        if len(fields) < 5:
            raise FixError(f"unexpected git diff --raw record {header[:80]!r}")
        old_mode, new_mode, status = fields[0].lstrip(":"), fields[1], fields[4][:1]
        path = name.decode("utf-8", "surrogateescape")
        if "160000" in (old_mode, new_mode):
            raise FixError(f"the fix changes the submodule {path!r}; tasks cannot carry submodules")
        if status == "T" or (status != "D" and new_mode == "120000" and is_test_path(path)):
            raise FixError(
                f"the fix turns {path!r} into a symlink or changes its type; an oracle holds files only"
            )
        entries.append(ChangedPath(path, status, test_rule(path)))
        if len(entries) > MAX_CHANGED_PATHS:
            raise FixError(f"the fix changes over {MAX_CHANGED_PATHS} paths: not one task's fix")
    return entries


def _blob(repo: Path, tree: str, path: str, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    try:
        result = run_git(
            ["cat-file", "blob", f"{tree}:{path}"],
            what=f"read {path} from {tree[:12]}",
            cwd=repo,
            max_stdout_bytes=max_bytes + 1,
        )
    except ProcessError as exc:
        raise FixError(str(exc)) from None
    if len(result.stdout) > max_bytes:
        raise FixError(f"the fix's {path} is over {max_bytes} bytes; an oracle file holds at most that")
    return result.stdout


def with_named_tests(split: FixSplit, base: TreeView, paths: Sequence[str]) -> FixSplit:
    """``split`` with ``paths`` among its test files: test files the fix leaves unchanged that
    exercise it (its test side is a fixture they read), with their base bytes; ``FixError``
    (message starting with the path) for one the fix changes as code or the base lacks."""
    have = {p for p, _ in split.test_files}
    extra: list[tuple[str, bytes]] = []
    for path in paths:
        if path in have:
            continue
        if path in set(split.source_paths):
            raise FixError(f"{path}: the fix changes it as code, not as a test")
        data = base.read(path)
        if data is None:
            raise FixError(f"{path}: no such file at the base commit")
        extra.append((path, data))
    return replace(split, test_files=(*split.test_files, *extra)) if extra else split
