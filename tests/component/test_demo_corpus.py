"""The embedded demo corpus is what the demo claims: pinned, unsolved, and scored as scripted.

For every task × arm the scripted model's Write/Edit calls are applied in plain Python to a fresh
checkout of the bundle at the pinned SHA (no CLI, no sandbox), then the task's authored verify and
its hidden oracle (staged exactly as the cell stages it) run with the system ``/usr/bin/python3`` —
the only Python inside the sandbox. The outcome must match ``EXPECTED``, and the unmodified
checkout must fail every task (a corpus whose tasks pass untouched measures nothing).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from workflow_bench.corpus.build_target import (
    BUNDLE_PATH,
    HISTORY_CANARY,
    PRIVATE_NOTES_NAME,
    TARGET_DIR,
    build_bundle,
)
from workflow_bench.judging.outcome_report import KIT, KIT_ENV, read_evidence
from workflow_bench.judging.verdict import for_task, verdict
from workflow_bench.taskspec.oracle_staging import stage_oracle, verify_staged
from workflow_bench.taskspec.spec import TaskBinding, bind_tasks, load_task_file

pytestmark = pytest.mark.component

REPO_ROOT = Path(__file__).resolve().parents[2]
TASK_FILE = REPO_ROOT / "tasks.scenarios.yaml"
CORPUS_DIR = REPO_ROOT / "workflow_bench" / "corpus"
SCRIPT_FILE = CORPUS_DIR / "scripts" / "demo.yaml"
SKILLS_DIR = CORPUS_DIR / "toolkit" / "skills"
SYSTEM_PYTHON = Path("/usr/bin/python3")
ORACLE_ENV_VAR = "WORKFLOW_BENCH_ORACLE_ROOT"  # keep in sync with cell.ORACLE_ENV_VAR
ARMS = ("workflow", "workflow_direct", "baseline")
TASK_IDS = (
    "trivial-amount-grouping",
    "bug-negative-amounts",
    "feature-report-filter",
    "cross-module-report-cutoff",
)

# (authored verify passed, hidden oracle passed); keep in sync with the table atop demo.yaml.
EXPECTED: dict[tuple[str, str], tuple[bool, bool]] = {
    ("trivial-amount-grouping", "workflow"): (True, True),
    ("trivial-amount-grouping", "workflow_direct"): (True, True),
    ("trivial-amount-grouping", "baseline"): (True, True),
    ("bug-negative-amounts", "workflow"): (True, True),
    ("bug-negative-amounts", "workflow_direct"): (True, True),
    ("bug-negative-amounts", "baseline"): (True, False),
    ("feature-report-filter", "workflow"): (True, True),
    ("feature-report-filter", "workflow_direct"): (True, False),
    ("feature-report-filter", "baseline"): (True, True),
    ("cross-module-report-cutoff", "workflow"): (True, True),
    ("cross-module-report-cutoff", "workflow_direct"): (False, False),
    ("cross-module-report-cutoff", "baseline"): (True, False),
}
# The pristine checkout: the authored tests of the two in-place tasks already pass (the defect
# is what they do not test), the two new-test-file tasks fail verify; every oracle fails.
UNSOLVED: dict[str, tuple[bool, bool]] = {
    "trivial-amount-grouping": (True, False),
    "bug-negative-amounts": (True, False),
    "feature-report-filter": (False, False),
    "cross-module-report-cutoff": (False, False),
}

# a fixture, not a skipif: under WORKFLOW_BENCH_REQUIRE_SANDBOX=1 a missing interpreter fails
needs_system_python = pytest.mark.usefixtures("system_python")


# ── fixtures ───────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def bindings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskBinding]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKFLOW_BENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        return {b.spec.task_id: b for b in bind_tasks(load_task_file(TASK_FILE))}


@pytest.fixture(scope="module")
def pinned_tree(bindings: dict[str, TaskBinding], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned commit's files, exported with ``git archive`` (no ``.git``, like a sanitized clone)."""
    (sha,) = {b.resolved_sha for b in bindings.values()}
    repo = next(iter(bindings.values())).repo_path
    archive = subprocess.run(
        ["git", "--git-dir", str(repo), "archive", "--format=tar", sha], check=True, capture_output=True
    ).stdout
    dest = tmp_path_factory.mktemp("pinned")
    # GNU tar, not tarfile: extractall(filter=) is missing from Debian 12's Python 3.11.2.
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


@pytest.fixture(scope="module")
def script() -> dict[str, Any]:
    return yaml.safe_load(SCRIPT_FILE.read_text())


def fresh_workspace(pinned_tree: Path, tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    subprocess.run(["cp", "-a", f"{pinned_tree}/.", str(workspace)], check=True)
    return workspace


# ── the scripted model, applied without the CLI ───────────────────────────


def cell_sessions(script: dict[str, Any], task: str, arm: str) -> list[dict[str, Any]]:
    """The first cell whose globs match, as the provider picks it."""

    def globs(value: str | list[str] | None) -> list[str]:
        return ["*"] if value is None else [value] if isinstance(value, str) else value

    for cell in script["cells"]:
        match = cell.get("match") or {}
        if any(fnmatch.fnmatchcase(task, g) for g in globs(match.get("task"))) and any(
            fnmatch.fnmatchcase(arm, g) for g in globs(match.get("arm"))
        ):
            return cell["sessions"]
    raise AssertionError(f"demo.yaml has no cell for {task} × {arm}")


def with_cwd(value: Any, cwd: str) -> Any:
    if isinstance(value, dict):
        return {k: with_cwd(v, cwd) for k, v in value.items()}
    if isinstance(value, list):
        return [with_cwd(v, cwd) for v in value]
    return value.replace("{cwd}", cwd) if isinstance(value, str) else value


def tool_calls(session: dict[str, Any], workspace: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for turn in session["turns"]:
        for call in turn.get("tool_calls") or []:
            yield call["name"], with_cwd(call.get("input") or {}, str(workspace))


def apply_session(session: dict[str, Any], workspace: Path) -> None:
    """Perform the session's file tools the way Claude Code would, with its read-before-write rule."""
    read: set[Path] = set()
    for name, args in tool_calls(session, workspace):
        if name in ("Skill", "Bash"):
            continue  # Bash runs the tests; the outcome is judged below by verify and the oracle
        path = Path(args["file_path"])
        assert path.is_relative_to(workspace), f"{name} outside the workspace: {path}"
        if name == "Read":
            assert path.is_file(), f"Read of a missing file {path}"
            read.add(path)
        elif name == "Write":
            # Claude Code refuses to overwrite a file this session has not read.
            assert not path.exists() or path in read, f"Write to unread existing file {path}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(args["content"])
            read.add(path)
        elif name == "Edit":
            assert path in read, f"Edit of unread file {path}"
            text = path.read_text()
            count = text.count(args["old_string"])
            assert count == 1 or (count and args.get("replace_all")), (
                f"Edit old_string found {count}x in {path}"
            )
            path.write_text(text.replace(args["old_string"], args["new_string"]))
        else:
            raise AssertionError(f"unexpected tool {name}")


# ── judging ────────────────────────────────────────────────────────────────


def sandbox_like_env(home: Path, **extra: str) -> dict[str, str]:
    # /usr/bin first: the sandbox has no other python3 (no pyenv, no venv).
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", **extra}


def run_judged(command: str, *, workspace: Path, env: dict[str, str], min_tests: int, tmp_path: Path) -> bool:
    """The harness's real judge runner and unittest shim, on the host: a pass needs the report."""
    nonce, token = secrets.token_hex(16), secrets.token_hex(4)
    report, junit_dir = tmp_path / f"report-{token}.json", tmp_path / f"junit-{token}"
    junit_dir.mkdir()
    request = {
        "nonce": nonce,
        "report": str(report),
        "channel": str(tmp_path / f"channel-{token}"),
        "junit_dir": str(junit_dir),
        "deadline_s": 120,
        "command": command,
    }
    subprocess.run(
        ["python3", "-I", "-B", str(KIT / "judge_runner.py")],
        input=(json.dumps(request) + "\n").encode(),
        cwd=workspace,
        env={**env, **{var: str(KIT / name) for var, name in KIT_ENV.items()}},
        capture_output=True,
        timeout=120,
    )
    data = report.read_bytes() if report.exists() else None
    evidence = read_evidence(data, nonce=nonce, junit_dir=junit_dir)
    return verdict(evidence, for_task(min_tests=min_tests, expected=None, report_required=True)).passed


def judge(binding: TaskBinding, workspace: Path, tmp_path: Path) -> tuple[bool, bool]:
    assert binding.spec.verify_min_tests is not None  # every demo task proves verify too
    verify = run_judged(
        binding.spec.verify,
        workspace=workspace,
        env=sandbox_like_env(tmp_path),
        min_tests=binding.spec.verify_min_tests,
        tmp_path=tmp_path,
    )
    staged = tmp_path / "oracle-stage"
    stage_oracle(binding.oracle, staged)
    oracle = run_judged(
        binding.oracle.command,
        workspace=workspace,
        env=sandbox_like_env(tmp_path, **{ORACLE_ENV_VAR: str(staged)}),
        min_tests=binding.spec.oracle.min_tests,
        tmp_path=tmp_path,
    )
    verify_staged(binding.oracle, staged)
    # Both run on a read-only workspace in the sandbox: neither may try to write bytecode.
    assert not list(workspace.rglob("__pycache__")) and not list(staged.rglob("__pycache__"))
    return verify, oracle


# ── tests ──────────────────────────────────────────────────────────────────


def test_task_file_declares_the_four_demo_tasks(bindings: dict[str, TaskBinding]) -> None:
    assert tuple(bindings) == TASK_IDS
    classes = {task_id: b.spec.task_class for task_id, b in bindings.items()}
    assert classes == {
        "trivial-amount-grouping": "trivial",
        "bug-negative-amounts": "investigation-bug",
        "feature-report-filter": "investigation-feature",
        "cross-module-report-cutoff": "cross-module",
    }
    assert [b.spec.expensive for b in bindings.values()] == [False, False, False, True]
    for binding in bindings.values():
        assert binding.spec.ref == binding.resolved_sha  # pinned, not a moving ref
        assert binding.repo_identity.startswith("bundle:sha256:")
        assert f"${ORACLE_ENV_VAR}" in binding.oracle.command


def test_rebuilding_the_bundle_reproduces_the_pinned_sha(
    bindings: dict[str, TaskBinding], tmp_path: Path
) -> None:
    (pinned,) = {b.resolved_sha for b in bindings.values()}
    assert build_bundle(TARGET_DIR, tmp_path / "rebuilt.bundle") == pinned
    heads = subprocess.run(
        ["git", "bundle", "list-heads", str(BUNDLE_PATH)], check=True, capture_output=True, text=True
    ).stdout.split()
    assert heads == [pinned, "refs/heads/main", pinned, "HEAD"]


def test_history_holds_the_canary_and_the_pinned_tree_does_not(
    bindings: dict[str, TaskBinding], pinned_tree: Path
) -> None:
    repo = next(iter(bindings.values())).repo_path

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(repo), *args], check=True, capture_output=True, text=True
        ).stdout

    commits = git("rev-list", "--all").split()
    assert len(commits) == 2
    assert HISTORY_CANARY in git("show", f"{commits[1]}:{PRIVATE_NOTES_NAME}")
    assert not (pinned_tree / PRIVATE_NOTES_NAME).exists()
    for tree in (pinned_tree, TARGET_DIR):
        for path in tree.rglob("*"):
            if path.is_file():
                assert HISTORY_CANARY.encode() not in path.read_bytes(), path


def test_nothing_in_the_target_points_at_the_oracles(pinned_tree: Path) -> None:
    for path in pinned_tree.rglob("*"):
        assert "oracle" not in path.name.lower()
        if path.is_file():
            text = path.read_text()
            assert ORACLE_ENV_VAR not in text and "wfbench" not in text.lower(), path


@needs_system_python
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_tasks_are_unsolved_at_the_pinned_sha(
    task_id: str, bindings: dict[str, TaskBinding], pinned_tree: Path, tmp_path: Path
) -> None:
    outcome = judge(bindings[task_id], fresh_workspace(pinned_tree, tmp_path), tmp_path)
    assert outcome == UNSOLVED[task_id]
    assert outcome != (True, True)


@needs_system_python
@pytest.mark.parametrize(("task_id", "arm"), list(EXPECTED))
def test_scripted_cell_outcome(
    task_id: str,
    arm: str,
    bindings: dict[str, TaskBinding],
    pinned_tree: Path,
    script: dict[str, Any],
    tmp_path: Path,
) -> None:
    workspace = fresh_workspace(pinned_tree, tmp_path)
    for session in cell_sessions(script, task_id, arm):
        apply_session(session, workspace)
    assert judge(bindings[task_id], workspace, tmp_path) == EXPECTED[(task_id, arm)]


def test_the_demo_shows_differences() -> None:
    resolved = {cell for cell, outcome in EXPECTED.items() if outcome == (True, True)}
    fooled_verify = {cell for cell, outcome in EXPECTED.items() if outcome == (True, False)}
    assert resolved and fooled_verify
    assert ("bug-negative-amounts", "baseline") in fooled_verify
    assert len({tuple(EXPECTED[(t, arm)] for t in TASK_IDS) for arm in ARMS}) == len(ARMS)


def test_expected_table_matches_the_script_header() -> None:
    rows = {}
    for line in SCRIPT_FILE.read_text().splitlines():
        match = re.fullmatch(r"#\s+(\S+)\s+(V[+-] O[+-])\s+(V[+-] O[+-])\s+(V[+-] O[+-])", line)
        if match:
            rows[match.group(1)] = match.groups()[1:]
    assert tuple(rows) == TASK_IDS
    for task_id, cells in rows.items():
        for arm, cell in zip(ARMS, cells, strict=True):
            assert cell == "V{} O{}".format(*("+" if ok else "-" for ok in EXPECTED[(task_id, arm)]))


@pytest.mark.parametrize(("task_id", "arm"), list(EXPECTED))
def test_script_follows_each_arms_protocol(
    task_id: str, arm: str, script: dict[str, Any], tmp_path: Path
) -> None:
    sessions = cell_sessions(script, task_id, arm)
    assert len(sessions) == (2 if arm == "workflow" else 1)
    for session in sessions:
        turns = session["turns"]
        # Every turn but the last asks for tools; the last one ends the session with text.
        assert all(turn.get("tool_calls") for turn in turns[:-1])
        assert not turns[-1].get("tool_calls") and turns[-1].get("text")
        for turn in turns:
            usage = turn["usage"]
            assert set(usage) == {
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            }
            assert all(type(v) is int and v >= 0 for v in usage.values())
    calls = [list(tool_calls(s, tmp_path)) for s in sessions]
    if arm == "workflow":
        plan, work = calls
        assert plan[0] == ("Skill", {"skill": "plan"})
        writes = [args["file_path"] for name, args in plan if name == "Write"]
        assert len(writes) == 1 and re.fullmatch(
            rf"{re.escape(str(tmp_path))}/docs/plans/[\w.-]+\.md", writes[0]
        )
        assert {name for name, _ in plan} == {"Skill", "Read", "Write"}
        implementation = work
    else:
        (implementation,) = calls
    names = [name for name, _ in implementation]
    if arm == "baseline":
        assert "Skill" not in names
    else:
        assert implementation[0] == ("Skill", {"skill": "work"})
    assert "Write" in names and "Bash" in names
    assert all(
        not args["file_path"].startswith(f"{tmp_path}/docs/plans")
        for name, args in implementation
        if name in ("Write", "Edit")
    )


def test_declared_usage_and_turns_differ_between_arms(script: dict[str, Any]) -> None:
    for task_id in TASK_IDS:
        tokens, turns = {}, {}
        for arm in ARMS:
            sessions = cell_sessions(script, task_id, arm)
            all_turns = [t for s in sessions for t in s["turns"]]
            turns[arm] = len(all_turns)
            tokens[arm] = sum(sum(t["usage"].values()) for t in all_turns)
        assert tokens["workflow"] > tokens["workflow_direct"] > tokens["baseline"], (task_id, tokens)
        assert turns["workflow"] > turns["workflow_direct"] > turns["baseline"], (task_id, turns)


def test_script_loads_with_the_provider() -> None:
    from workflow_bench.providers.scripted import load_script

    loaded = load_script(SCRIPT_FILE)
    assert loaded.model == "scripted-demo"
    for task_id, arm in EXPECTED:
        assert loaded.cell_for(task=task_id, arm=arm) is not None


@pytest.mark.parametrize("skill", ["plan", "work", "review"])
def test_toolkit_skills_have_front_matter(skill: str) -> None:
    text = (SKILLS_DIR / skill / "SKILL.md").read_text()
    match = re.match(r"---\n(.*?)\n---\n(.+)", text, re.DOTALL)
    assert match, f"{skill}/SKILL.md has no YAML front matter"
    front = yaml.safe_load(match.group(1))
    assert front["name"] == skill
    assert isinstance(front["description"], str) and len(front["description"]) > 40
    assert len(match.group(2).split()) > 80  # a real discipline, not a stub


def test_target_project_is_small_and_stdlib_only() -> None:
    sources = [p for p in TARGET_DIR.rglob("*") if p.is_file()]
    assert sum(len(p.read_text().splitlines()) for p in sources) < 400
    allowed = {"collections", "dataclasses", "datetime", "unittest", "ledger", "re"}
    for path in sources:
        if path.suffix == ".py":
            for module in re.findall(r"^(?:from|import) (\w+)", path.read_text(), re.MULTILINE):
                assert module in allowed, (path, module)
    assert not [p for p in TARGET_DIR.rglob("__pycache__")]
    assert os.access(BUNDLE_PATH, os.R_OK)
