"""``tasks new``: a task from a known fix (a base commit and a fix commit, or a fix patch).

``draft_task`` decides everything from the two trees and says why (``decisions``):

- **reference patch** = the fix's changes to every path that is not a test (``fixdiff``);
- **hidden oracle** = the fix's added and modified test-side files, staged at their repository
  paths and run over a copy of the agent's workspace (``frameworks.overlay_oracle``) with the
  detected framework's command, so they import the code exactly as upstream's tests do;
- **visible verify** = the repository's own tests for what the fix touches, at the base
  (``frameworks.visible_tests``); they pass on the base (``base_expected: {verify: pass}``);
- **dependencies** = the working tree's ``node_modules`` / ``.wfbench-deps`` (or ``--dependency``);
- **prompt** from a template the user edits (never the commit message: it usually names the fix).

``main`` then stages the draft, runs the self-check on it (the same judges as a cell), and only
if the task discriminates writes it into the task file, its files beside it and its lock entry;
otherwise it prints why and writes nothing (exit 1). Bad input is exit 2, nothing written.

Callers: ``python -m workflow_bench.tasks new``, ``tasks.recipes``, tests.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from workflow_bench.input_files import InputFileError, read_bounded
from workflow_bench.taskspec.oracle_spec import MAX_ORACLE_FILES, target_problem
from workflow_bench.taskspec.schema import TASK_ID_PATTERN
from workflow_bench.workspace.git import query_git

from .draft import TaskDraft
from .fixdiff import FixError, FixSplit, TreeView, split_fix, with_named_tests
from .frameworks import (
    ECOSYSTEMS,
    FRAMEWORKS,
    Framework,
    FrameworkError,
    detect_framework,
    ecosystem_of,
    facts,
    overlay_oracle,
    runner_options,
    test_command_problem,
    visible_tests,
)
from .project_name import project_name

DEFAULT_TEMPLATE = Path(__file__).with_name("prompt-template.txt")
DEFAULT_CLASS = "investigation-bug"
MAX_TEMPLATE_BYTES = 64 * 1024
TEMPLATE_FIELDS = ("repo_name", "modules", "source_files", "test_framework", "commit_subject")


class NewTaskError(ValueError):
    """``tasks new`` refused its input (exit 2); nothing was written."""


@dataclass(frozen=True, slots=True)
class NewTask:
    """What ``tasks new`` was asked: the fix, where the task goes, and the author's overrides."""

    repo: Path
    base: str
    tasks_file: Path
    fix: str | None = None
    fix_patch: Path | None = None
    task_id: str | None = None
    task_class: str = DEFAULT_CLASS
    framework: str | None = None
    test_command: str | None = None
    verify: str | None = None
    typecheck: bool = True
    dependencies: tuple[tuple[str, str], ...] | None = None
    runtimes: Mapping[str, str] = field(default_factory=dict)
    setup: str | None = None
    prompt: str | None = None
    prompt_template: Path | None = None
    exclude: tuple[str, ...] = ()
    oracle_tests: tuple[str, ...] = ()
    """Test files the fix leaves unchanged that exercise it (its test side is a fixture)."""


@dataclass(frozen=True, slots=True)
class Drafted:
    draft: TaskDraft
    decisions: tuple[str, ...]


def worktree_top(path: Path) -> Path:
    """The top level of the git working tree at ``path``; ``NewTaskError`` if it is none."""
    if not path.is_dir():
        raise NewTaskError(f"--repo {path}: not a directory")
    ok, bare = query_git(["rev-parse", "--is-bare-repository"], cwd=path)
    if not ok:
        raise NewTaskError(f"--repo {path}: not a git repository: {bare}")
    if bare == "true":
        raise NewTaskError(f"--repo {path}: a bare repository has no working tree to mount dependencies from")
    ok, top = query_git(["rev-parse", "--show-toplevel"], cwd=path)
    if not ok or not top:
        raise NewTaskError(f"--repo {path}: no working tree: {top}")
    return Path(top).resolve()


def draft_task(request: NewTask) -> Drafted:
    """The task ``request`` describes, and why each part is what it is; ``NewTaskError``."""
    repo = worktree_top(request.repo)
    patch = _read_patch(request.fix_patch) if request.fix_patch is not None else None
    try:
        split = split_fix(
            repo,
            base=request.base,
            fix=request.fix,
            fix_patch=patch,
            patch_name=request.fix_patch.name if request.fix_patch else "fix.patch",
            exclude=request.exclude,
        )
    except FixError as exc:
        raise NewTaskError(str(exc)) from None
    base = TreeView.of(repo, split.base_sha)
    try:
        split = with_named_tests(split, base, request.oracle_tests)
    except FixError as exc:
        raise NewTaskError(f"--oracle-test {exc}") from None
    task_id = request.task_id or _default_id(repo, split)
    if not TASK_ID_PATTERN.fullmatch(task_id):
        raise NewTaskError(f"--id {task_id!r} does not match {TASK_ID_PATTERN.pattern}")
    decisions = [
        f"base {split.base_sha[:12]}, fix {split.fix_ref[:40]}: {len(split.changed)} changed path(s)",
        *(
            f"  test-side ({c.test_rule}): {c.path}{' (deleted: not run)' if c.status == 'D' else ''}"
            for c in split.changed
            if c.is_test
        ),
        *(f"  reference patch: {c.path}" for c in split.changed if not c.is_test),
    ]
    plan = _test_plan(request, repo, base, split, decisions)
    prompt = _prompt(request, repo, base, split, plan.framework, decisions)
    entry: dict[str, Any] = {"id": task_id, "class": request.task_class, "ref": split.base_sha}
    entry["prompt"] = prompt
    entry["verify"] = plan.verify
    if request.setup:
        entry["setup"] = request.setup
    if plan.dependencies:
        entry["sandbox_dependencies"] = [{"source": s, "target": t} for s, t in plan.dependencies]
    runtimes = dict(request.runtimes)
    default = FRAMEWORKS[plan.framework].runtime if plan.framework in FRAMEWORKS else None
    if default is not None and default[0] not in runtimes:
        runtimes[default[0]] = default[1]
        decisions.append(
            f"runtimes: {default[0]} {default[1]} ({plan.framework}'s toolchain, provisioned by the harness "
            "into its cache; --runtime overrides)"
        )
    if runtimes:
        entry["runtimes"] = runtimes
    entry["oracle"] = {
        "command": plan.oracle,
        "files": [{"source": f"oracles/{task_id}/{path}", "target": path} for path, _ in split.test_files],
    }
    entry["reference_patch"] = f"reference/{task_id}.patch"
    entry["base_expected"] = {"verify": "pass"}
    decisions.append(
        "base_expected: {verify: pass}: verify runs the base's own tests, which do not cover the fix yet"
    )
    files = (
        *((f"oracles/{task_id}/{path}", data) for path, data in split.test_files),
        (f"reference/{task_id}.patch", split.reference_patch),
    )
    return Drafted(TaskDraft(task_id, repo, entry, files), tuple(decisions))


@dataclass(frozen=True, slots=True)
class _Plan:
    framework: str
    verify: str
    oracle: str
    dependencies: tuple[tuple[str, str], ...]


def _test_plan(request: NewTask, repo: Path, base: TreeView, split: FixSplit, decisions: list[str]) -> _Plan:
    if len(split.test_files) > MAX_ORACLE_FILES:
        raise NewTaskError(
            f"the fix adds or changes {len(split.test_files)} test-side files; an oracle holds at most "
            f"{MAX_ORACLE_FILES}: --exclude the ones that do not test the fix "
            f"({', '.join(p for p, _ in split.test_files[:10])})"
        )
    for path, _ in split.test_files:
        if problem := target_problem(path):
            raise NewTaskError(f"the fix's test file {path!r} cannot be an oracle file: it {problem}")
    framework = _framework(request, base, split, repo, decisions)
    runnable = [p for p, data in split.test_files if framework.runs(p, data)]
    if not runnable:
        raise NewTaskError(
            f"none of the fix's test-side files is a test file {framework.name} runs "
            f"({', '.join(p for p, _ in split.test_files)}): name the test files that exercise the fix "
            "with --oracle-test (a fix whose test side is a fixture), or give --test-command"
        )
    dependencies = _dependencies(request, repo, framework, decisions)
    pythonpath = _pythonpath(framework, repo, base, split, dependencies)
    options, why = runner_options(framework, base)
    if why is not None:
        decisions.append(f"runner options {' '.join(options)}: {why}")
    oracle_command = overlay_oracle(
        framework.command(runnable, pythonpath=pythonpath, options=options),
        linked=[t for _, t in dependencies],
    )
    decisions.append(
        f"oracle: {', '.join(runnable)} (the fix's versions, laid over a copy of the agent's workspace at "
        "their repository paths so they import the code as upstream's tests do)"
    )
    if request.verify is not None:
        decisions.append("verify: as given (--verify)")
        decisions.append(f"oracle command: {oracle_command}")
        return _Plan(framework.name, request.verify, oracle_command, dependencies)
    modified = [c.path for c in split.changed if c.is_test and c.status == "M"]
    visible, why = visible_tests(framework, base, modified_tests=modified, source_paths=split.source_paths)
    if not visible:
        raise NewTaskError(f"verify: {why}; give --verify with the command that runs them")
    verify = framework.command(visible, pythonpath=pythonpath, options=options)
    tsc = _typecheck(request, repo, base, framework, dependencies)
    if tsc is not None:
        verify = f"{tsc} && {verify}"
        decisions.append(
            "verify type-checks first (tsconfig.json and node_modules/.bin/tsc exist; "
            "--no-typecheck drops it)"
        )
    decisions.append(f"verify: {', '.join(visible)} ({why})")
    decisions.append(f"verify command: {verify}")
    decisions.append(f"oracle command: {oracle_command}")
    return _Plan(framework.name, verify, oracle_command, dependencies)


def _framework(
    request: NewTask, base: TreeView, split: FixSplit, repo: Path, decisions: list[str]
) -> Framework:
    if request.test_command is not None:
        if problem := test_command_problem(request.test_command):
            raise NewTaskError(problem)
        # The detected ecosystem stays: its dependency trees are mounted and its type check runs
        # (--dependency / --no-typecheck say otherwise); only the command is the user's.
        ecosystems = {e for p, _ in split.test_files if (e := ecosystem_of(p)) is not None}
        custom = Framework(
            "custom",
            ecosystems.pop() if len(ecosystems) == 1 else "any",
            lambda path, data: any(f.runs(path, data) for f in FRAMEWORKS.values()),
            request.test_command.replace("{", "{{").replace("}", "}}").replace("{{files}}", "{files}"),
            "as given (--test-command)",
        )
        decisions.append("framework: --test-command, as given")
        return custom
    if request.framework is not None:
        if request.framework not in FRAMEWORKS:
            raise NewTaskError(f"--framework {request.framework!r}: known: {', '.join(FRAMEWORKS)}")
        chosen = FRAMEWORKS[request.framework]
        decisions.append(f"framework: {chosen.name} (--framework): {chosen.why}")
        return chosen
    try:
        found = detect_framework(base, split.test_files, facts=_facts(request, repo, split))
    except FrameworkError as exc:
        raise NewTaskError(str(exc)) from None
    decisions.append(f"framework: {found.framework.name} ({'; '.join(found.reasons)}): {found.framework.why}")
    return found.framework


def _facts(request: NewTask, repo: Path, split: FixSplit) -> Mapping[str, object]:
    """What the fix's ecosystem's detection reads of the working tree (vitest's major version)."""
    ecosystems = {e for p, _ in split.test_files if (e := ecosystem_of(p)) is not None}
    if len(ecosystems) != 1:
        return {}
    (name,) = ecosystems
    trees = (
        [s for s, _ in request.dependencies] if request.dependencies is not None else ECOSYSTEMS[name].trees
    )
    return facts(name, repo, trees)


def _dependencies(
    request: NewTask, repo: Path, framework: Framework, decisions: list[str]
) -> tuple[tuple[str, str], ...]:
    if request.dependencies is not None:
        for source, _ in request.dependencies:
            if not (repo / source).is_dir():
                raise NewTaskError(f"--dependency {source}: no such directory in {repo}'s working tree")
        decisions.append(
            f"dependencies: {', '.join(f'{s} -> {t}' for s, t in request.dependencies)} (--dependency)"
        )
        return request.dependencies
    ecosystem = ECOSYSTEMS.get(framework.ecosystem)
    trees = ecosystem.trees if ecosystem is not None else ()
    found = tuple((d, d) for d in trees if (repo / d).is_dir())
    missing = framework.needs_tree
    if missing is not None and not found:
        hint = ecosystem.tree_hint.format(repo=repo) if ecosystem is not None else ""
        raise NewTaskError(
            f"{framework.name} needs {missing} in {repo}'s working tree (the sandbox has no network and "
            f"no {'pytest' if framework.ecosystem == 'python' else 'packages'} of its own): "
            f"build it with `{hint}`, "
            "or name another tree with --dependency"
        )
    if found:
        decisions.append(
            f"dependencies: {', '.join(s for s, _ in found)} (found in the working tree, mounted read-only)"
        )
    return found


def _pythonpath(
    framework: Framework, repo: Path, base: TreeView, split: FixSplit, dependencies: Sequence[tuple[str, str]]
) -> tuple[str, ...]:
    ecosystem = ECOSYSTEMS.get(framework.ecosystem)
    if ecosystem is None or ecosystem.import_roots is None or framework.name == "custom":
        return ()
    site = tuple(f"{t}/site-packages" for s, t in dependencies if (repo / s / "site-packages").is_dir())
    return (*ecosystem.import_roots(base, split.source_paths), *site)


def _typecheck(
    request: NewTask,
    repo: Path,
    base: TreeView,
    framework: Framework,
    dependencies: Sequence[tuple[str, str]],
) -> str | None:
    ecosystem = ECOSYSTEMS.get(framework.ecosystem)
    if not request.typecheck or ecosystem is None or ecosystem.typecheck is None:
        return None
    return ecosystem.typecheck(repo, base, dependencies)


def _read_patch(path: Path) -> bytes:
    try:
        return read_bounded(path, max_bytes=1024 * 1024)
    except FileNotFoundError:
        raise NewTaskError(f"--fix-patch {path}: no such file") from None
    except (OSError, InputFileError) as err:
        raise NewTaskError(f"--fix-patch {path}: {err}") from None


def _default_id(repo: Path, split: FixSplit) -> str:
    suffix = split.fix_ref[:8] if not split.fix_ref.startswith("patch ") else Path(split.fix_ref[6:]).stem
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{repo.name}-{suffix}").strip("-._")
    return slug[:128] or "task"


class _Fields(dict[str, str]):
    def __missing__(self, key: str) -> str:
        raise NewTaskError(f"the prompt template names {{{key}}}; it may use {', '.join(TEMPLATE_FIELDS)}")


def _prompt(
    request: NewTask, repo: Path, base: TreeView, split: FixSplit, framework: str, decisions: list[str]
) -> str:
    if request.prompt is not None:
        decisions.append("prompt: as given (--prompt)")
        return request.prompt
    template_path = request.prompt_template or DEFAULT_TEMPLATE
    try:
        template = read_bounded(template_path, max_bytes=MAX_TEMPLATE_BYTES).decode("utf-8")
    except (OSError, InputFileError, UnicodeDecodeError) as err:
        raise NewTaskError(f"--prompt-template {template_path}: {err}") from None
    modules = sorted({_module(p) for p in split.source_paths})
    subject = ""
    if not split.fix_ref.startswith("patch "):
        _, subject = query_git(["log", "-1", "--format=%s", split.fix_ref], cwd=repo)
    fields = _Fields(
        repo_name=project_name(repo, base),
        modules=", ".join(f"`{m}`" for m in modules),
        source_files=", ".join(f"`{p}`" for p in split.source_paths),
        test_framework=framework,
        commit_subject=subject,
    )
    try:
        prompt = string.Formatter().vformat(template, (), fields).strip() + "\n"
    except (ValueError, IndexError) as err:
        raise NewTaskError(f"--prompt-template {template_path}: {err}") from None
    decisions.append(
        f"prompt: from {template_path.name}; edit it in the task file (tasks check and the runner refuse "
        "the placeholder) to describe the problem as a user "
        "would report it (the commit message is not used: it usually names the fix)"
    )
    return prompt


def _module(path: str) -> str:
    pure = PurePosixPath(path)
    return str(pure.parent) if pure.name in ("__init__.py", "index.js", "index.ts") else path
