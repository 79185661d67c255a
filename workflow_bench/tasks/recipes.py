"""``tasks build-corpus``: a corpus of real upstream fixes, built from a recipe at run time.

A recipe (``workflow_bench/corpus/realworld/recipe.yaml`` is the shipped one) names, per task, a
package on a registry (PyPI sdists, npm tarballs), two consecutive releases pinned by sha256 (the
base, and the release whose changes fix it, tests included) and what of them the task repository
holds. Nothing third-party is vendored here: ``build_corpus`` fetches each release once into the
cache (``releases/``, checked against the recipe's sha256 every time it is used), writes a
two-commit git repository (base, fix; fixed identity and dates, so the SHAs are a pure function
of the bytes), builds its dependency trees (``tasks deps``: wheels for ``.wfbench-deps``, the
recipe's lockfile into ``.wfbench-node/node_modules``; each built once into the cache and linked
in), then writes every task with ``tasks new`` from the fix commit, self-checked and locked:
a task that does not discriminate is reported and not written.

Extraction is bounded and refuses anything but regular files and directories below the archive's
one top directory (no links, devices, absolute or ``..`` paths).

Callers: ``python -m workflow_bench.tasks build-corpus``, tests.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationError

from workflow_bench.input_files import InputFileError, InputModel, Text, load_yaml, problems, read_bounded
from workflow_bench.process import run_process
from workflow_bench.taskspec.oracles import read_beneath
from workflow_bench.taskspec.repos import cache_root
from workflow_bench.workspace.git import SNAPSHOT_IDENTITY, run_git

from .deps import DependencyBuildError, build_dependencies, build_node_modules, find_uv
from .new import NewTask, NewTaskError
from .new_cli import create
from .selfcheck import CheckOptions, SelfCheckError

MAX_RECIPE_BYTES = 256 * 1024
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024  # a package release, compressed; the largest here is ~1 MB
MAX_EXTRACTED_BYTES = 256 * 1024 * 1024
MAX_ARCHIVE_FILES = 20_000
FETCH_TIMEOUT_S = 300
PYPI_INDEX = "https://pypi.org/simple"  # $WORKFLOW_BENCH_PYPI_INDEX overrides (a mirror)
PYTHON_TREE = ".wfbench-deps"
NODE_PROJECT = ".wfbench-node"


class RecipeError(ValueError):
    """The recipe, a release or a build step was refused (exit 2); the message names it."""


def _sha256(value: object) -> str:
    if not isinstance(value, str) or len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ValueError(f"want 64 lowercase hex characters, got {value!r}")
    return value


class Release(InputModel):
    version: Text = Field(description="the release's exact version on the registry")
    sha256: Annotated[str, BeforeValidator(_sha256)] = Field(description="sha256 of its archive")


class NewOptions(InputModel):
    """``tasks new`` options for this task (the defaults detect everything)."""

    framework: Text | None = None
    verify: Text | None = None
    test_command: Text | None = None
    typecheck: bool = True
    exclude: Annotated[tuple[Text, ...], Field(strict=False)] = ()


class RecipeTask(InputModel):
    task_id: Text = Field(alias="id")
    task_class: Text = Field(alias="class")
    registry: Literal["pypi", "npm"]
    package: Text
    base: Release
    fix: Release
    include: Annotated[tuple[Text, ...], Field(strict=False)] = Field(
        ("*",), description="fnmatch patterns ('*' spans '/') of the archive paths the repository holds"
    )
    add: Annotated[dict[str, Text], Field(strict=False)] = Field(
        default_factory=dict, description="repository path -> a recipe file, written into both commits"
    )
    python_requirements: Text | None = Field(None, description="a pinned requirements file -> .wfbench-deps")
    node_project: Text | None = Field(
        None,
        description="a recipe directory with package.json and its lockfile -> .wfbench-node/node_modules",
    )
    runtimes: Annotated[dict[str, Text], Field(strict=False)] = Field(default_factory=dict)
    prompt: Annotated[str, Field(min_length=1, max_length=64 * 1024)]
    new: NewOptions = Field(default_factory=NewOptions)


class Recipe(InputModel):
    tasks: Annotated[tuple[RecipeTask, ...], Field(strict=False, min_length=1)]


def load_recipe(path: Path) -> Recipe:
    try:
        data = load_yaml(read_bounded(path, max_bytes=MAX_RECIPE_BYTES).decode("utf-8"))
        return Recipe.model_validate(data, by_alias=True)
    except FileNotFoundError:
        raise RecipeError(f"--recipe {path}: no such file") from None
    except (InputFileError, UnicodeDecodeError, OSError) as err:
        raise RecipeError(f"--recipe {path}: {err}") from None
    except ValidationError as exc:
        raise RecipeError(
            "\n".join(f"{path}: {key}: {message}" for key, message in problems(exc, Recipe))
        ) from None


# ── releases ───────────────────────────────────────────────────────────────


def fetch_release(registry: str, package: str, release: Release, *, cache: Path) -> Path:
    """The release's archive in the cache, fetched once and checked against its sha256 every time."""
    store = cache / "releases"
    store.mkdir(parents=True, exist_ok=True)
    cached = store / f"{release.sha256}.tar.gz"
    if not cached.is_file():
        with tempfile.TemporaryDirectory(dir=store, prefix=".fetch-") as scratch:
            fetched = (_fetch_pypi if registry == "pypi" else _fetch_npm)(
                package, release.version, Path(scratch)
            )
            _check_sha256(fetched, release, package)
            os.replace(fetched, cached)
    _check_sha256(cached, release, package)
    return cached


def _check_sha256(path: Path, release: Release, package: str) -> None:
    digest = hashlib.sha256(read_bounded(path, max_bytes=MAX_ARCHIVE_BYTES)).hexdigest()
    if digest != release.sha256:
        raise RecipeError(
            f"{package} {release.version}: the archive's sha256 is {digest}, the recipe pins {release.sha256}"
        )


def _fetch_pypi(package: str, version: str, scratch: Path) -> Path:
    """The sdist from the package index's JSON API (PEP 691), hashes checked by the caller."""
    index = os.environ.get("WORKFLOW_BENCH_PYPI_INDEX", PYPI_INDEX).rstrip("/")
    request = urllib.request.Request(
        f"{index}/{package}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
            listing = json.loads(response.read(8 * 1024 * 1024))
    except (OSError, ValueError) as err:
        raise RecipeError(f"{package}: the package index {index} did not answer: {err}") from None
    normalized = package.replace("-", "_").lower()
    wanted = {f"{package}-{version}.tar.gz", f"{normalized}-{version}.tar.gz"}
    found = [f for f in listing.get("files", ()) if isinstance(f, dict) and f.get("filename") in wanted]
    if not found:
        raise RecipeError(f"{package} {version}: no sdist ({' or '.join(sorted(wanted))}) on {index}")
    target = scratch / "release.tar.gz"
    try:
        with urllib.request.urlopen(found[0]["url"], timeout=FETCH_TIMEOUT_S) as response:
            target.write_bytes(response.read(MAX_ARCHIVE_BYTES + 1))
    except OSError as err:
        raise RecipeError(f"{package} {version}: download failed: {err}") from None
    return target


def _fetch_npm(package: str, version: str, scratch: Path) -> Path:
    """The tarball through ``npm pack`` (the registry's integrity checked by npm, sha256 by the caller)."""
    result = run_process(
        ["npm", "pack", f"{package}@{version}", "--pack-destination", str(scratch), "--json", "--silent"],
        cwd=scratch,
        timeout_s=FETCH_TIMEOUT_S,
    )
    if not result.ok:
        raise RecipeError(f"{package}@{version} is not on the npm registry: {result.describe()}")
    packed = sorted(scratch.glob("*.tgz"))
    if len(packed) != 1:
        raise RecipeError(f"npm pack {package}@{version} left {len(packed)} tarballs")
    return packed[0]


def extract(archive: Path, include: tuple[str, ...]) -> dict[str, tuple[bytes, bool]]:
    """The archive's regular files below its one top directory: path -> (bytes, executable)."""
    files: dict[str, tuple[bytes, bool]] = {}
    total = 0
    with tarfile.open(archive, mode="r:*") as tar:
        for index, member in enumerate(tar):
            if index >= MAX_ARCHIVE_FILES:
                raise RecipeError(f"{archive.name}: over {MAX_ARCHIVE_FILES} entries")
            parts = [p for p in PurePosixPath(member.name.lstrip("./")).parts if p not in ("", ".")]
            if member.name.startswith("/") or ".." in parts:
                raise RecipeError(f"{archive.name}: entry {member.name!r} escapes the archive")
            if member.isdir() or len(parts) < 2:
                continue
            if not member.isreg():
                continue  # links and devices: never written
            path = "/".join(parts[1:])
            if not any(fnmatch.fnmatchcase(path, pattern) for pattern in include):
                continue
            total += member.size
            if total > MAX_EXTRACTED_BYTES:
                raise RecipeError(f"{archive.name}: over {MAX_EXTRACTED_BYTES} bytes extracted")
            handle = tar.extractfile(member)
            if handle is None:
                continue
            files[path] = (handle.read(), bool(member.mode & 0o111))
    if not files:
        raise RecipeError(f"{archive.name}: no file matches include {list(include)}")
    return files


# ── the repository ─────────────────────────────────────────────────────────


_DATES = ("2000-01-01T00:00:00+0000", "2000-01-02T00:00:00+0000")  # base, fix: arbitrary, fixed


def write_repository(
    repo: Path, commits: list[tuple[str, Mapping[str, tuple[bytes, bool]]]], *, ignored: tuple[str, ...]
) -> list[str]:
    """A fresh git repository at ``repo`` with one commit per (message, files); the SHAs."""
    repo.mkdir(parents=True)
    run_git(["init", "-q", "-b", "main", str(repo)], what="git init (corpus repository)")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("".join(f"/{p}/\n" for p in ignored))
    shas = []
    for number, (message, files) in enumerate(commits):
        for entry in repo.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        for path, (data, executable) in sorted(files.items()):
            target = repo / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(0o755 if executable else 0o644)
        date = _DATES[min(number, len(_DATES) - 1)]
        env = {**SNAPSHOT_IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        run_git(["-c", "core.autocrlf=false", "add", "-A"], what="git add (corpus repository)", cwd=repo)
        run_git(
            ["-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", message],
            what="git commit (corpus repository)",
            cwd=repo,
            env=env,
        )
        shas.append(run_git(["rev-parse", "HEAD"], what="rev-parse", cwd=repo).stdout.decode().strip())
    return shas


def _python_tree(requirements: Path, cache: Path) -> Path:
    """``.wfbench-deps`` for these pinned requirements, built once into the cache."""
    digest = hashlib.sha256(read_bounded(requirements, max_bytes=64 * 1024)).hexdigest()[:16]
    built = cache / "realworld" / f"pydeps-{digest}"
    if not (built / "wfbench-deps.json").is_file():
        shutil.rmtree(built, ignore_errors=True)
        build_dependencies(requirements=requirements, out=built, uv_bin=find_uv())
    return built


def _node_tree(project: Path, cache: Path) -> Path:
    """``node_modules`` of this recipe project (package.json + lockfile), built once into the cache."""
    lock = project / "package-lock.json"
    digest = hashlib.sha256(read_bounded(lock, max_bytes=16 * 1024 * 1024)).hexdigest()[:16]
    built = cache / "realworld" / f"node-{digest}"
    if not (built / "node_modules" / ".wfbench-deps.json").is_file():
        shutil.rmtree(built, ignore_errors=True)
        built.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(project / name, built / name)
        build_node_modules(project=built)
    return built


def linked_copy(source: Path, dest: Path) -> None:
    """``source`` at ``dest``, hard-linked where the filesystem allows (no bytes copied)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(source, dest, symlinks=True, copy_function=os.link)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, symlinks=True)


def build_task(task: RecipeTask, recipe_dir: Path, out: Path, *, cache: Path) -> tuple[Path, NewTask]:
    """The task's repository (base, fix) with its dependency trees, and the ``tasks new`` request."""
    added = {
        path: (read_beneath(recipe_dir, source, max_bytes=1024 * 1024), False)
        for path, source in task.add.items()
    }
    trees = [
        extract(fetch_release(task.registry, task.package, release, cache=cache), task.include)
        for release in (task.base, task.fix)
    ]
    repo = out / "repos" / task.task_id
    write_repository(
        repo,
        [
            (f"{task.package} {task.base.version}", {**trees[0], **added}),
            (f"{task.package} {task.fix.version}", {**trees[1], **added}),
        ],
        ignored=(PYTHON_TREE, NODE_PROJECT),
    )
    dependencies = []
    if task.python_requirements is not None:
        linked_copy(_python_tree(recipe_dir / task.python_requirements, cache), repo / PYTHON_TREE)
        dependencies.append((PYTHON_TREE, PYTHON_TREE))
    if task.node_project is not None:
        built = _node_tree(recipe_dir / task.node_project, cache)
        linked_copy(built / "node_modules", repo / NODE_PROJECT / "node_modules")
        dependencies.append((f"{NODE_PROJECT}/node_modules", "node_modules"))
    request = NewTask(
        repo=repo,
        base="HEAD~1",
        fix="HEAD",
        tasks_file=out / "tasks.yaml",
        task_id=task.task_id,
        task_class=task.task_class,
        framework=task.new.framework,
        test_command=task.new.test_command,
        verify=task.new.verify,
        typecheck=task.new.typecheck,
        dependencies=tuple(dependencies),
        runtimes=dict(task.runtimes),
        prompt=task.prompt,
        exclude=task.new.exclude,
    )
    return repo, request


def build_corpus(
    recipe_path: Path, out: Path, options: CheckOptions, *, progress: Callable[[str], None] = print
) -> int:
    """Build every task of the recipe into ``out`` (new or empty): 0 all written, 1 one was refused."""
    recipe = load_recipe(recipe_path)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RecipeError(f"--out {out}: must be a new or empty directory")
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    cache = cache_root()
    refused = []
    for task in recipe.tasks:
        progress(
            f"[corpus] {task.task_id}: {task.package} {task.base.version} -> {task.fix.version} "
            f"({task.registry})"
        )
        try:
            _, request = build_task(task, recipe_path.parent, out, cache=cache)
        except DependencyBuildError as exc:
            raise RecipeError(f"{task.task_id}: {exc}") from None
        code, _ = create(request, options, progress=progress)
        if code != 0:
            refused.append(task.task_id)
    if refused:
        progress(f"[corpus] not written (they do not discriminate): {', '.join(refused)}")
        return 1
    progress(f"[corpus] wrote {len(recipe.tasks)} task(s) to {out / 'tasks.yaml'}")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--recipe",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "corpus" / "realworld" / "recipe.yaml",
        help="the recipe (default: the shipped real-world corpus)",
    )
    parser.add_argument("--out", required=True, type=Path, help="a new or empty directory for the corpus")
    parser.add_argument("--repeats", type=int, default=3, choices=range(1, 11), metavar="1..10")
    parser.add_argument("--toolkit", default="demo", metavar="DIR|NAME")
    parser.add_argument("--verify-timeout", type=int, default=600, choices=range(1, 86_401), metavar="S")
    parser.add_argument("--bwrap-bin", default="bwrap", help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    options = CheckOptions(
        toolkit=args.toolkit, bwrap_bin=args.bwrap_bin, repeats=args.repeats, timeout_s=args.verify_timeout
    )
    try:
        return build_corpus(args.recipe, args.out, options)
    except (RecipeError, NewTaskError, SelfCheckError, DependencyBuildError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
