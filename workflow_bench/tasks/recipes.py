"""``tasks build-corpus``: a corpus of real upstream fixes, built from a recipe at run time.

A recipe (``workflow_bench/corpus/realworld/recipe.yaml`` is the shipped one) names, per task, a
package on a registry (PyPI sdists, npm tarballs), two consecutive releases pinned by sha256 (the
base, and the release whose changes fix it, tests included) and what of them the task repository
holds. Nothing third-party is vendored here: ``build_corpus`` fetches each release once into the
cache (``tasks.releases``: checked against the recipe's sha256 every time it is used), writes a
two-commit git repository (base, fix; fixed identity and dates, so the SHAs are a pure function
of the bytes), builds its dependency trees (``tasks deps``: wheels for ``.wfbench-deps``, the
recipe's lockfile into ``.wfbench-node/node_modules``; each built once into the cache and linked
in), then writes every task with ``tasks new`` from the fix commit, self-checked and locked:
a task that does not discriminate is reported and not written. ``fetch_corpus``
(``--fetch-only``) fills the cache and builds nothing: CI runs it before the tests, so the
corpus's e2e test runs offline.

Callers: ``python -m workflow_bench.tasks build-corpus``, tests.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from workflow_bench.input_files import InputFileError, InputModel, Text, load_yaml, problems, read_bounded
from workflow_bench.runtimes import RuntimeProvisionError, provision
from workflow_bench.taskspec.oracles import read_beneath
from workflow_bench.taskspec.repos import cache_root
from workflow_bench.workspace.git import SNAPSHOT_IDENTITY, run_git

from .deps import DependencyBuildError, build_dependencies, build_node_modules, find_uv
from .new import NewTask, NewTaskError
from .new_cli import create
from .releases import RecipeError, Release, extract, fetch_release
from .selfcheck import CheckOptions, SelfCheckError

MAX_RECIPE_BYTES = 256 * 1024
PYTHON_TREE = ".wfbench-deps"
NODE_PROJECT = ".wfbench-node"


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


def fetch_corpus(recipe_path: Path, *, progress: Callable[[str], None] = print) -> int:
    """Fetch everything the recipe needs into the cache (releases, dependency trees, runtimes) and
    build nothing else: a later ``build_corpus`` runs offline. 0, or ``RecipeError``."""
    recipe = load_recipe(recipe_path)
    cache = cache_root()
    for task in recipe.tasks:
        for release in (task.base, task.fix):
            fetch_release(task.registry, task.package, release, cache=cache)
        try:
            if task.python_requirements is not None:
                _python_tree(recipe_path.parent / task.python_requirements, cache)
            if task.node_project is not None:
                _node_tree(recipe_path.parent / task.node_project, cache)
            for name, version in task.runtimes.items():
                provision(name, version, cache=cache)
        except (DependencyBuildError, RuntimeProvisionError) as exc:
            raise RecipeError(f"{task.task_id}: {exc}") from None
        progress(f"[corpus] {task.task_id}: cached")
    return 0


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
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="a new or empty directory for the corpus")
    where.add_argument(
        "--fetch-only",
        action="store_true",
        help="only fetch what the recipe needs into the cache (releases, dependency trees, runtimes)",
    )
    parser.add_argument("--repeats", type=int, default=3, choices=range(1, 11), metavar="1..10")
    parser.add_argument("--toolkit", default="demo", metavar="DIR|NAME")
    parser.add_argument("--verify-timeout", type=int, default=600, choices=range(1, 86_401), metavar="S")
    parser.add_argument("--bwrap-bin", default="bwrap", help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    options = CheckOptions(
        toolkit=args.toolkit, bwrap_bin=args.bwrap_bin, repeats=args.repeats, timeout_s=args.verify_timeout
    )
    try:
        if args.fetch_only:
            return fetch_corpus(args.recipe)
        return build_corpus(args.recipe, args.out, options)
    except (RecipeError, NewTaskError, SelfCheckError, DependencyBuildError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
