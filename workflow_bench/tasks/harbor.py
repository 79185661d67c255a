"""Harbor / Terminal-Bench task directories as tasks, where they map.

A Harbor task is a directory: ``instruction.md``, ``task.toml``, ``environment/`` (a Dockerfile or
compose file and its build context), ``solution/solve.sh`` and ``tests/`` (``test.sh``, which
writes a reward file, and usually ``test_outputs.py``). What maps (``draft_harbor``):

- **prompt** = ``instruction.md``; **class** = ``harbor`` (``task.toml``'s ``[metadata]``
  ``category`` appended when it has one);
- **repository** = ``--repo`` (a git working tree at the task's starting state), else the
  ``environment/`` build context without its Dockerfile and compose files, committed as one
  commit into ``repos/<task>`` beside the task file;
- **hidden oracle** = ``tests/``'s Python test files (``test_*.py`` / ``*_test.py``; at most 8
  files), staged at ``tests/…`` and run with pytest (the harness's adapter) over a copy of the
  workspace, as ``tasks new`` does;
- **reference patch** = the changes ``solution/solve.sh`` makes, run once in the sandbox on a
  fresh clone (no network, like every sandboxed process) and taken with git;
- a Terminal-Bench 1 directory (``task.yaml`` with ``instruction`` and ``category``,
  ``solution.sh``, ``run-tests.sh``, ``tests/``, the Dockerfile's build context being the task
  directory itself) maps the same way: the prompt from ``task.yaml``, the repository from the
  directory without its harness files;
- **verify** = ``true``: a Harbor task has no tests the agent sees; the hidden oracle decides.

What does not map, and why: the Docker environment (the Dockerfile's ``RUN`` steps never run:
cells run in bubblewrap on the host's ``/usr``; what the tests import must come from a
``--dependency`` tree), ``[environment]`` resources and network (sweep-wide ``--cell-*`` limits;
cells never have network), ``[agent]`` / ``[verifier]`` timeouts (``--timeout``,
``--verify-timeout``), ``tests/test.sh`` and its reward file (a number is not proof: the judge
needs each test's result), ``skills_dir`` (the toolkit under test is the sweep's), MCP servers
and multi-step tasks. A task whose instruction, tests or solution name ``/app`` (the container's
working directory) is refused: cells work in ``/workspace``.

Callers: ``tasks.importers``, tests.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow_bench.input_files import InputFileError, TreeLimitError, bounded_walk, load_yaml, read_bounded
from workflow_bench.process import ProcessError
from workflow_bench.sandbox import Mount, RunPolicy, SandboxKind, create_sandbox
from workflow_bench.taskspec.oracle_spec import MAX_ORACLE_FILES, target_problem
from workflow_bench.taskspec.schema import MAX_PROMPT_BYTES, MAX_REFERENCE_PATCH_BYTES, TASK_ID_PATTERN
from workflow_bench.workspace.clone import build_template, copy_clone
from workflow_bench.workspace.git import sandbox_git
from workflow_bench.workspace.paths import make_work_root
from workflow_bench.workspace.remove import remove_tree

from .draft import TaskDraft
from .fixdiff import FixError, resolve_commit
from .frameworks import FRAMEWORKS, overlay_oracle
from .new import NewTaskError, worktree_top
from .recipes import linked_copy, write_repository

MAX_FILE_BYTES = 512 * 1024
MAX_TREE_ENTRIES = 20_000  # a task's environment/ or tests/: files for a starting state, not a dataset
MAX_TREE_DEPTH = 64
SOLVE_TIMEOUT_S = 600
MAX_CATEGORY_CHARS = 64  # a longer category is no class name: the task is plain "harbor"
ENVIRONMENT_EXCLUDED = ("Dockerfile", "docker-compose.yaml", "docker-compose.yml", ".dockerignore")
CONTAINER_WORKDIR = "/app"
# Terminal-Bench 1 task files that are the harness's, not the starting state.
TERMINAL_BENCH_FILES = ("task.yaml", "solution.sh", "solution.yaml", "run-tests.sh", "tests")


class HarborError(ValueError):
    """The task directory cannot become a task; the message is the named refusal."""


def _read(path: Path) -> bytes:
    try:
        return read_bounded(path, max_bytes=MAX_FILE_BYTES)
    except FileNotFoundError:
        raise HarborError(f"no {path.name} ({path})") from None
    except (OSError, InputFileError) as err:
        raise HarborError(f"{path}: {err}") from None


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a task directory keeps its parts: Harbor's, or Terminal-Bench 1's."""

    instruction_name: str
    instruction: str
    category: object
    solve_name: str
    context: str
    context_excluded: frozenset[str]


def _layout(task_dir: Path) -> Layout:
    """Harbor (``instruction.md``, ``task.toml``, ``environment/``, ``solution/solve.sh``) or
    Terminal-Bench 1 (``task.yaml`` holding ``instruction``, ``solution.sh``, the task directory
    itself as the build context, its ``run-tests.sh`` and harness files left out)."""
    if (task_dir / "instruction.md").exists() or not (task_dir / "task.yaml").exists():
        config = _config(task_dir / "task.toml")
        metadata = config.get("metadata")
        return Layout(
            "instruction.md",
            _read(task_dir / "instruction.md").decode("utf-8", "replace"),
            metadata.get("category") if isinstance(metadata, dict) else None,
            "solution/solve.sh",
            "environment",
            frozenset(ENVIRONMENT_EXCLUDED),
        )
    try:
        config = load_yaml(_read(task_dir / "task.yaml").decode("utf-8"))
    except (InputFileError, UnicodeDecodeError) as err:
        raise HarborError(f"task.yaml: {err}") from None
    instruction = config.get("instruction") if isinstance(config, dict) else None
    if not isinstance(instruction, str) or not instruction.strip():
        raise HarborError("task.yaml has no 'instruction' text")
    return Layout(
        "task.yaml",
        instruction,
        config.get("category"),
        "solution.sh",
        ".",
        frozenset({*ENVIRONMENT_EXCLUDED, *TERMINAL_BENCH_FILES}),
    )


def _walk(root: Path, *, excluded: frozenset[str] = frozenset()) -> list[tuple[str, Path, os.stat_result]]:
    """Every entry below ``root`` (bounded; links never followed): (relative path, path, lstat)."""
    try:
        return [
            (rel, Path(full), st)
            for rel, full, st in bounded_walk(
                root, max_entries=MAX_TREE_ENTRIES, max_depth=MAX_TREE_DEPTH, skip_top=excluded
            )
        ]
    except (TreeLimitError, OSError) as err:
        raise HarborError(f"{root}: {err}") from None


def _files(root: Path, *, excluded: frozenset[str]) -> dict[str, tuple[bytes, bool]]:
    found: dict[str, tuple[bytes, bool]] = {}
    for rel, path, st in _walk(root, excluded=excluded):
        if stat.S_ISLNK(st.st_mode):
            raise HarborError(f"{path} is a symlink; a task repository holds files only")
        if stat.S_ISREG(st.st_mode):
            found[rel] = (_read(path), bool(st.st_mode & 0o111))
    return found


def draft_harbor(
    task_dir: Path,
    *,
    tasks_dir: Path,
    repo: Path | None,
    bwrap_bin: str,
    dependencies: tuple[tuple[str, str], ...] = (),
) -> TaskDraft:
    task_id = task_dir.name
    if not TASK_ID_PATTERN.fullmatch(task_id):
        raise HarborError(f"directory name {task_id!r} is not a usable task id ({TASK_ID_PATTERN.pattern})")
    layout = _layout(task_dir)
    instruction = layout.instruction
    if len(instruction.encode()) > MAX_PROMPT_BYTES:
        raise HarborError(f"{layout.instruction_name} is over {MAX_PROMPT_BYTES} bytes")
    solve = _read(task_dir / layout.solve_name)
    tests_dir = task_dir / "tests"
    pytest = FRAMEWORKS["pytest"]
    tests = (
        {
            f"tests/{rel}": _read(path)
            for rel, path, st in _walk(tests_dir)
            if rel.endswith(".py") and stat.S_ISREG(st.st_mode)
        }
        if tests_dir.is_dir()
        else {}
    )
    runnable = [p for p, data in tests.items() if pytest.runs(p, data)]
    if not runnable:
        raise HarborError(
            "tests/ holds no pytest test file (test_*.py): its test.sh and reward file are not proof"
        )
    if len(tests) > MAX_ORACLE_FILES:
        raise HarborError(
            f"tests/ holds {len(tests)} Python files; an oracle holds at most {MAX_ORACLE_FILES}"
        )
    for name, text in (
        (layout.instruction_name, instruction.encode()),
        (layout.solve_name, solve),
        *tests.items(),
    ):
        if CONTAINER_WORKDIR.encode() in text:
            raise HarborError(
                f"{name} names {CONTAINER_WORKDIR} (the container's working directory); cells work in "
                "/workspace, so its paths would not hold"
            )
    if repo is not None:
        try:
            source = worktree_top(repo)
        except NewTaskError as err:
            raise HarborError(str(err)) from None
    else:
        context = task_dir / layout.context
        if not context.is_dir():
            raise HarborError("no environment/ build context and no --repo: nothing to start the agent in")
        source = tasks_dir / "repos" / task_id
        if source.exists():
            raise HarborError(f"{source} exists already")
        trees = _prepared_trees(dependencies)
        write_repository(
            source,
            [(f"harbor task {task_id}", _files(context, excluded=layout.context_excluded))],
            ignored=tuple(t for _, t in trees),
        )
        for tree, target in trees:
            linked_copy(tree, source / target)
        dependencies = tuple((t, t) for _, t in trees)
    try:
        ref = resolve_commit(source, "HEAD", what="the repository's HEAD")
        patch = solution_patch(source, ref, solve, bwrap_bin=bwrap_bin)
    except FixError as err:
        if repo is None:
            discard_repository(source)
        raise HarborError(str(err)) from None
    except BaseException:
        if repo is None:
            discard_repository(source)
        raise
    problem = None
    if not patch.strip():
        problem = f"{layout.solve_name} changed nothing in the repository: no reference patch"
    elif len(patch) > MAX_REFERENCE_PATCH_BYTES:
        problem = (
            f"{layout.solve_name}'s change is {len(patch)} bytes, over a reference patch's "
            f"{MAX_REFERENCE_PATCH_BYTES}"
        )
    if problem is not None:
        if repo is None:
            discard_repository(source)
        raise HarborError(problem)
    site = [f"{t}/site-packages" for s, t in dependencies if (source / s / "site-packages").is_dir()]
    oracle = overlay_oracle(pytest.command(runnable, pythonpath=site), linked=[t for _, t in dependencies])
    category = layout.category
    entry: dict[str, Any] = {
        "id": task_id,
        "class": (
            f"harbor-{category}"
            if isinstance(category, str) and category.isidentifier() and len(category) <= MAX_CATEGORY_CHARS
            else "harbor"
        ),
        "ref": ref,
        "prompt": instruction,
        "verify": "true",
    }
    if dependencies:
        entry["sandbox_dependencies"] = [{"source": s, "target": t} for s, t in dependencies]
    entry["oracle"] = {
        "command": oracle,
        "files": [{"source": f"oracles/{task_id}/{p}", "target": p} for p in tests],
    }
    entry["reference_patch"] = f"reference/{task_id}.patch"
    entry["base_expected"] = {"verify": "pass"}
    files = (
        *((f"oracles/{task_id}/{p}", d) for p, d in tests.items()),
        (f"reference/{task_id}.patch", patch),
    )
    return TaskDraft(task_id, source, entry, files)


def discard_repository(repo: Path) -> None:
    """Remove a repository this import made, and ``repos/`` beside the task file if now empty."""
    remove_tree(repo)
    with contextlib.suppress(OSError):  # not empty: other tasks' repositories
        repo.parent.rmdir()


def _prepared_trees(dependencies: tuple[tuple[str, str], ...]) -> list[tuple[Path, str]]:
    """Without ``--repo``, a ``--dependency`` names a prepared tree on disk (SOURCE) and where the
    new repository's working tree holds it (TARGET, default its name): linked in, git-ignored."""
    trees = []
    for source, target in dependencies:
        tree = Path(source).expanduser().absolute()
        if not tree.is_dir():
            raise HarborError(f"--dependency {source}: not a directory (a prepared tree to mount)")
        name = target or tree.name
        if problem := target_problem(name):
            raise HarborError(f"--dependency {source}:{name}: the target {problem}")
        trees.append((tree, name))
    return trees


def _config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        return tomllib.loads(_read(path).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise HarborError(f"task.toml: {err}") from None


def solution_patch(repo: Path, sha: str, script: bytes, *, bwrap_bin: str) -> bytes:
    """What ``script`` changes in a fresh clone of ``repo`` at ``sha``, run in the sandbox (no network)."""
    work = make_work_root()
    try:
        template = work / "template"
        build_template(source_repo=repo, sha=sha, dest=template)
        workspace = work / "workspace"
        copy_clone(template, workspace)
        sandbox = create_sandbox(SandboxKind.BWRAP, workspace=workspace, claude_bin=None, bwrap_bin=bwrap_bin)
        staged = work / f"solution-{secrets.token_hex(4)}"
        staged.mkdir(mode=0o755)
        (staged / "solve.sh").write_bytes(script)
        (staged / "solve.sh").chmod(0o555)
        result = sandbox.run(
            ["/bin/sh", "/.wfbench-solution/solve.sh"],
            policy=RunPolicy(
                workspace_writable=True, mounts=(Mount(source=staged, target="/.wfbench-solution"),)
            ),
            timeout_s=SOLVE_TIMEOUT_S,
        )
        if not result.ok:
            raise HarborError(
                f"solution/solve.sh failed in the sandbox (no network there): {result.describe()}"
            )
        try:
            sandbox_git(sandbox, ["add", "-A"], what="stage the solution", writable=True)
            return sandbox_git(
                sandbox,
                [
                    "diff",
                    "--cached",
                    "--binary",
                    "--full-index",
                    "--no-renames",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--src-prefix=a/",
                    "--dst-prefix=b/",
                    "HEAD",
                ],
                what="diff the solution",
            )
        except ProcessError as err:
            raise HarborError(str(err)) from None
    finally:
        remove_tree(work)
