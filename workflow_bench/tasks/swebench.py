"""SWE-bench-style instances as tasks: the record's parts mapped onto a task, over a local clone.

One JSONL line per instance with ``repo`` (``owner/name``), ``instance_id``, ``base_commit``,
``patch`` (the gold patch), ``test_patch``, ``problem_statement``, ``FAIL_TO_PASS`` and
``PASS_TO_PASS`` (lists, or JSON text holding them as the published datasets do); other keys
(``hints_text``, ``version``, ``environment_setup_commit``, ...) are ignored. ``draft_instance``:

- **repository**: the clone at ``<clones>/<owner>__<name>``, ``<clones>/<owner>/<name>`` or
  ``<clones>/<name>`` (the first that exists), a git working tree holding ``base_commit``; ``repo``
  is ``owner/name`` or ``name`` of plain names only, and the clone (symlinks resolved) is strictly
  beneath ``--clones`` and the top of its own working tree (``find_clone``);
- **bounds** (``size_problem``): test ids, patches, the problem statement and ``base_commit``
  each bounded, so an oversized instance is refused by name before any work, never the import;
- **prompt** = ``problem_statement``; **reference patch** = ``patch``, verbatim (it must apply);
- **hidden oracle** = the files ``test_patch`` adds or changes, at their contents after it,
  staged at their repository paths and run over a copy of the agent's workspace (as ``tasks
  new`` does), with pytest and ``kit/wfbench_select.py``: only the tests FAIL_TO_PASS ∪
  PASS_TO_PASS name run, so the self-check records exactly them as the expected tests;
- **verify** = PASS_TO_PASS, run as pytest node ids in the workspace (the repository's own
  tests that pass before and after; ``base_expected: {verify: pass}``).

After the self-check, ``expectation_problems`` holds the recorded tests to the instance: every
FAIL_TO_PASS and PASS_TO_PASS id names a test that passed with the gold patch (``matches``, the
mapping the plugin selects with), and every FAIL_TO_PASS one failed on the base. An instance that
misses any of this is refused by name, never imported.

Callers: ``tasks.importers``, tests.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, ValidationError

from workflow_bench.input_files import InputModel, Text, problems
from workflow_bench.redaction import printable
from workflow_bench.taskspec.oracle_spec import MAX_ORACLE_FILES, target_problem
from workflow_bench.taskspec.oracles import MAX_ORACLE_FILE_BYTES
from workflow_bench.taskspec.schema import MAX_PROMPT_BYTES, MAX_REFERENCE_PATCH_BYTES, TASK_ID_PATTERN

from .check import TaskCheck
from .draft import TaskDraft
from .fixdiff import FixError, TreeView, apply_to_base, borrowing_repo, changed_files, resolve_commit
from .frameworks import FRAMEWORKS, overlay_oracle, runner_options
from .kit.wfbench_select import SELECTION, matches
from .new import NewTaskError, worktree_top

PLUGIN = Path(__file__).with_name("kit") / "wfbench_select.py"
MAX_LINE_BYTES = 16 * 1024 * 1024  # one instance: its patches and problem statement
MAX_INSTANCES = 10_000
MAX_VERIFY_BYTES = 60 * 1024  # verify runs as one /bin/sh -c string (taskspec.schema.MAX_COMMAND_BYTES)
# Per-instance bounds, each refused by name (the published datasets' largest instances are far
# below them: a few thousand test ids, patches of a few hundred KiB).
MAX_TEST_IDS = 20_000
MAX_TEST_ID_CHARS = 1024
MAX_TEST_PATCH_BYTES = 4 * 1024 * 1024
MAX_COMMIT_CHARS = 256
_REPO_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class InstanceError(ValueError):
    """One instance cannot become a task; the message is the named refusal."""


def _test_list(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("want a list of test ids (or JSON text of one)") from None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("want a list of non-empty test id strings")
    return tuple(dict.fromkeys(value))


TestList = Annotated[tuple[str, ...], BeforeValidator(_test_list)]


class Instance(InputModel):
    """The keys of a SWE-bench instance the import reads (others are the dataset's own: ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True, populate_by_name=True)

    repo: Text
    instance_id: Text
    base_commit: Text
    patch: Annotated[str, Field(min_length=1)]
    test_patch: Annotated[str, Field(min_length=1)]
    problem_statement: Annotated[str, Field(min_length=1)]
    fail_to_pass: TestList = Field(alias="FAIL_TO_PASS")
    pass_to_pass: TestList = Field(alias="PASS_TO_PASS")


def read_instances(path: Path) -> Iterator[tuple[int, Instance | str]]:
    """(line number, the instance or why that line is not one), for every non-blank line."""
    try:
        handle = path.open("rb")
    except OSError as err:
        raise InstanceError(f"--instances {path}: {err.strerror or err}") from None
    with handle:
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if number > MAX_INSTANCES:
                raise InstanceError(f"--instances {path}: over {MAX_INSTANCES} lines")
            if len(raw) > MAX_LINE_BYTES:
                # One oversized instance is refused by its line; the rest of it is skipped unread.
                while not raw.endswith(b"\n") and (raw := handle.readline(MAX_LINE_BYTES)):
                    pass
                yield number, f"over {MAX_LINE_BYTES} bytes"
                continue
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
                yield number, Instance.model_validate(data, by_alias=True)
            except ValueError as err:
                if isinstance(err, ValidationError):
                    yield number, "; ".join(f"{k}: {m}" for k, m in problems(err, Instance))
                else:
                    yield number, f"not JSON ({err})"


def find_clone(clones: Path, repo: str) -> Path:
    """The clone ``repo`` names, strictly beneath ``clones``: ``owner/name`` (looked for as
    ``owner__name``, ``owner/name``, then ``name``) or a bare ``name``, each part a plain name (no
    ``..``, no absolute path, no separator), and the directory found — symlinks resolved — inside
    ``clones`` (``InstanceError`` naming why not)."""
    parts = repo.split("/")
    if len(parts) > 2 or not all(_REPO_PART.fullmatch(part) for part in parts):
        raise InstanceError(
            f"repo {printable(repo, 120)!r} is not owner/name or name (letters, digits, '.', '_', '-'; "
            "no '..', no absolute path): it must name a clone beneath --clones"
        )
    owner, name = parts if len(parts) == 2 else ("", parts[0])
    candidates = (
        [clones / f"{owner}__{name}", clones / owner / name, clones / name] if owner else [clones / name]
    )
    root = clones.resolve()
    for candidate in candidates:
        if not candidate.is_dir():
            continue
        real = candidate.resolve()
        if real == root or not real.is_relative_to(root):
            raise InstanceError(f"{candidate} leads outside --clones {clones} (to {real})")
        return candidate
    looked = ", ".join(str(c.relative_to(clones)) for c in candidates)
    raise InstanceError(f"no clone of {repo} in {clones} (looked for {looked})")


def size_problem(instance: Instance) -> str | None:
    """Why the instance is too large to import (None: within every bound), before any work on it."""
    ids = {*instance.fail_to_pass, *instance.pass_to_pass}
    if len(ids) > MAX_TEST_IDS:
        return f"FAIL_TO_PASS and PASS_TO_PASS name {len(ids)} tests, over {MAX_TEST_IDS}"
    if long := next((i for i in ids if len(i) > MAX_TEST_ID_CHARS), None):
        return f"a test id is {len(long)} characters, over {MAX_TEST_ID_CHARS}: {printable(long, 60)!r}"
    if (size := len(_selection(instance)) + 1) > MAX_ORACLE_FILE_BYTES:
        return f"its test ids take {size} bytes, over an oracle file's {MAX_ORACLE_FILE_BYTES}"
    for label, text, limit in (
        ("patch", instance.patch, MAX_REFERENCE_PATCH_BYTES),
        ("test_patch", instance.test_patch, MAX_TEST_PATCH_BYTES),
        ("problem_statement", instance.problem_statement, MAX_PROMPT_BYTES),
    ):
        if (size := len(text.encode())) > limit:
            return f"{label} is {size} bytes, over {limit}"
    if len(instance.base_commit) > MAX_COMMIT_CHARS:
        return f"base_commit is {len(instance.base_commit)} characters, over {MAX_COMMIT_CHARS}"
    return None


def _selection(instance: Instance) -> bytes:
    return json.dumps(sorted({*instance.fail_to_pass, *instance.pass_to_pass}), indent=0).encode()


@dataclass(frozen=True, slots=True)
class ImportOptions:
    clones: Path
    dependencies: tuple[tuple[str, str], ...] | None = None
    test_command: str | None = None


def draft_instance(instance: Instance, options: ImportOptions) -> TaskDraft:
    """The task an instance maps to; ``InstanceError`` naming why it cannot."""
    task_id = instance.instance_id
    if not TASK_ID_PATTERN.fullmatch(task_id):
        raise InstanceError(f"instance_id {task_id!r} is not a usable task id ({TASK_ID_PATTERN.pattern})")
    if not instance.fail_to_pass:
        raise InstanceError("FAIL_TO_PASS is empty: nothing shows the gold patch fixes anything")
    if problem := size_problem(instance):
        raise InstanceError(problem)
    try:
        clone = find_clone(options.clones, instance.repo)
        repo = worktree_top(clone)
        if repo != clone.resolve():
            # A directory inside some other repository: git would work in that one, outside --clones.
            raise InstanceError(f"{clone} is not a clone's top directory (its working tree is {repo})")
        base = resolve_commit(repo, instance.base_commit, what="base_commit")
        with tempfile.TemporaryDirectory(prefix="wfbench-swe-") as scratch:
            borrowed = borrowing_repo(repo, Path(scratch))
            apply_to_base(borrowed, base, instance.patch.encode(), name="patch")
            tested = apply_to_base(borrowed, base, instance.test_patch.encode(), name="test_patch")
            apply_to_base(
                borrowed, base, (instance.patch + instance.test_patch).encode(), name="patch + test_patch"
            )
            changed = changed_files(borrowed, base, tested)
            view = TreeView.of(borrowed, tested)
            files = [(c.path, view.read(c.path) or b"") for c in changed if c.status != "D"]
    except (FixError, NewTaskError) as err:
        raise InstanceError(str(err)) from None
    if not files:
        raise InstanceError("test_patch adds or changes no file: nothing to stage as the oracle")
    if len(files) + 2 > MAX_ORACLE_FILES:
        raise InstanceError(
            f"test_patch changes {len(files)} files; with the selection plugin and its list an oracle "
            f"holds at most {MAX_ORACLE_FILES - 2}"
        )
    for path, data in files:
        if problem := target_problem(path):
            raise InstanceError(f"test_patch's {path!r} cannot be an oracle file: it {problem}")
        if len(data) > MAX_ORACLE_FILE_BYTES:
            raise InstanceError(f"test_patch's {path!r} is {len(data)} bytes, over {MAX_ORACLE_FILE_BYTES}")
    pytest = FRAMEWORKS["pytest"]
    runnable = [p for p, data in files if pytest.runs(p, data)]
    if not runnable and options.test_command is None:
        raise InstanceError(
            f"test_patch changes no pytest test module ({', '.join(p for p, _ in files)}); "
            "give --test-command for this repository's runner"
        )
    dependencies = options.dependencies if options.dependencies is not None else _found_trees(repo)
    site = [f"{t}/site-packages" for s, t in dependencies if (repo / s / "site-packages").is_dir()]
    base_view = TreeView.of(repo, base)
    runner, _ = runner_options(pytest, base_view)
    oracle = _oracle_command(options, runnable, site, runner, [t for _, t in dependencies])
    verify = _verify_command(options, instance, runnable, site, runner, base_view)
    selection = _selection(instance)
    oracle_files = [
        *files,
        (".wfbench-select/wfbench_select.py", PLUGIN.read_bytes()),
        (SELECTION, selection + b"\n"),
    ]
    entry: dict[str, Any] = {
        "id": task_id,
        "class": "swe-bench",
        "ref": base,
        "prompt": instance.problem_statement,
        "verify": verify,
    }
    if dependencies:
        entry["sandbox_dependencies"] = [{"source": s, "target": t} for s, t in dependencies]
    entry["oracle"] = {
        "command": oracle,
        "files": [{"source": f"oracles/{task_id}/{p}", "target": p} for p, _ in oracle_files],
    }
    entry["reference_patch"] = f"reference/{task_id}.patch"
    entry["base_expected"] = {"verify": "pass"}
    written = (
        *((f"oracles/{task_id}/{p}", data) for p, data in oracle_files),
        (f"reference/{task_id}.patch", instance.patch.encode()),
    )
    return TaskDraft(task_id, repo, entry, written)


def _found_trees(repo: Path) -> tuple[tuple[str, str], ...]:
    return tuple((d, d) for d in (".wfbench-deps",) if (repo / d).is_dir())


def _oracle_command(
    options: ImportOptions,
    runnable: Sequence[str],
    site: Sequence[str],
    runner: Sequence[str],
    linked: Sequence[str],
) -> str:
    if options.test_command is not None:
        command = options.test_command.replace("{files}", " ".join(shlex.quote(f) for f in runnable))
    else:
        command = FRAMEWORKS["pytest"].command(
            runnable, pythonpath=[".wfbench-select", *site], options=["-p", "wfbench_select", *runner]
        )
    return overlay_oracle(command, linked=linked)


def _verify_command(
    options: ImportOptions,
    instance: Instance,
    runnable: Sequence[str],
    site: Sequence[str],
    runner: Sequence[str],
    base: TreeView,
) -> str:
    """PASS_TO_PASS as pytest node ids (an id cut at whitespace by SWE-bench's log parser runs as its
    test function); without any, the test patch's files that exist at the base."""
    ids = list(dict.fromkeys(_runnable_id(i) for i in instance.pass_to_pass if "::" in i))
    if not ids:
        ids = [p for p in runnable if base.has(p)]
    if not ids:
        raise InstanceError(
            "no PASS_TO_PASS node id and no test file of test_patch at the base: nothing to verify"
        )
    if options.test_command is not None:
        return options.test_command.replace("{files}", " ".join(shlex.quote(i) for i in ids))
    command = FRAMEWORKS["pytest"].command(ids, pythonpath=site, options=runner)
    if len(command.encode()) > MAX_VERIFY_BYTES:
        files = sorted({i.split("::", 1)[0] for i in ids})
        command = FRAMEWORKS["pytest"].command(files, pythonpath=site, options=runner)
    return command


def _runnable_id(test_id: str) -> str:
    """A node id pytest accepts: one cut inside its parameters runs as the whole test function."""
    return test_id.split("[", 1)[0] if test_id.count("[") != test_id.count("]") else test_id


def expectation_problems(instance: Instance, check: TaskCheck) -> list[str]:
    """Why the instance's tests are not what the self-check saw (empty: they are).

    Judged on what ran: a PASS_TO_PASS id that no test of the base's oracle run matches never ran
    (whether or not the task discriminates: such an id also breaks verify, and this says which;
    FAIL_TO_PASS ones may fairly not run on the base, e.g. a test module importing a name only the
    fix adds); with the recorded expected tests (a task that discriminates), every id must have
    passed with the gold patch and every FAIL_TO_PASS one failed on the base."""
    named = instance.pass_to_pass
    base_tests = check.base.oracle.tests if check.base is not None and check.base.oracle is not None else None
    problems_found = []
    ghosts: list[str] = []
    if base_tests:
        ghosts = [i for i in named if not any(matches(i, t.test_id) for t in base_tests)]
        if ghosts:
            problems_found.append(f"PASS_TO_PASS test(s) never ran on the base: {_some(ghosts)}")
    if check.expected is None or base_tests is None:
        return problems_found
    recorded = check.expected.oracle
    for label, ids in (("FAIL_TO_PASS", instance.fail_to_pass), ("PASS_TO_PASS", instance.pass_to_pass)):
        missing = [i for i in ids if i not in ghosts and not any(matches(i, t) for t in recorded.passed)]
        skipped = [i for i in missing if any(matches(i, t) for t in recorded.skipped)]
        if skipped:
            problems_found.append(f"{label} test(s) skipped here with the gold patch: {_some(skipped)}")
        never = [i for i in missing if i not in skipped]
        if never:
            problems_found.append(f"{label} test(s) never ran and passed with the gold patch: {_some(never)}")
    passing_on_base = [
        i
        for i in instance.fail_to_pass
        if any(matches(i, t.test_id) for t in base_tests)
        and not any(matches(i, t.test_id) and not t.passed for t in base_tests)
    ]
    if passing_on_base:
        problems_found.append(f"FAIL_TO_PASS test(s) pass on the base already: {_some(passing_on_base)}")
    return problems_found


def _some(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
