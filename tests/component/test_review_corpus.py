"""The demo review corpus is what it claims: patches that apply, labels that point at them, hidden.

Plain git in temp directories, no sandbox and no CLI: each case's ``setup`` runs with ``/bin/sh``
on a one-commit snapshot of the bundle at the pinned SHA (the shape of a sanitized clone), and
must leave the pull request as uncommitted changes. Every hidden label must sit on lines the
patch added. Every artifact the scripted model writes must satisfy the review contract, and
scoring it against the case's labels (read from the captured oracle, as a cell will) must give
the outcome table at the top of ``scripts/review-demo.yaml``. Nothing that names or quotes a label
file may reach what the agent sees.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from workflow_bench.review.score import (
    REVIEW_LABELS_TARGET,
    REVIEW_OUTPUT_ENV_VAR,
    REVIEW_OUTPUT_PATH,
    VERDICTS,
    Label,
    ReviewScore,
    labels_from_oracle,
    parse_review_artifact,
    review_oracle_passed,
    score_review,
)
from workflow_bench.taskspec.spec import TaskBinding, TaskSpec, bind_tasks, load_task_file

pytestmark = pytest.mark.component

REPO_ROOT = Path(__file__).resolve().parents[2]
TASK_FILE = REPO_ROOT / "tasks.review.yaml"
SCENARIO_FILE = REPO_ROOT / "tasks.scenarios.yaml"
CORPUS_DIR = REPO_ROOT / "workflow_bench" / "corpus"
LABEL_DIR = CORPUS_DIR / "review" / "labels"
SCRIPT_FILE = CORPUS_DIR / "scripts" / "review-demo.yaml"
REVIEW_SKILL = CORPUS_DIR / "toolkit" / "skills" / "review" / "SKILL.md"
SYSTEM_PYTHON = Path("/usr/bin/python3")
ARMS = ("review", "ce_review", "candidate_review")
# ce_review invokes the comparator plugin's skill by its qualified name; a bare "code-review" would
# resolve to a Claude Code built-in skill of that name (seen in 2.1.332's init event).
ARM_SKILLS = {"review": "review", "ce_review": "compound-demo:ce-code-review", "candidate_review": "review"}
CASES = {  # case id -> (class, files the pull request touches)
    "review-report-prefix-defect": ("review-defect", {"ledger/report.py", "tests/test_report.py"}),
    "review-csv-export-defect": ("review-defect", {"ledger/export.py", "tests/test_export.py"}),
    "review-balance-cache-defect": ("review-defect", {"ledger/accounts.py", "tests/test_accounts.py"}),
    "review-amount-grouping-clean": ("review-clean", {"ledger/money.py", "tests/test_money.py"}),
    "review-negative-amounts-clean": ("review-clean", {"ledger/money.py", "tests/test_money.py"}),
}
SETUP_TIMEOUT_S = 60  # a local git apply; the cell allows 600 s for setups that install things

# (tp, fp, fn, verdict correct, labels fully matched); keep in sync with the table atop review-demo.yaml.
EXPECTED: dict[tuple[str, str], tuple[int, int, int, bool, bool]] = {
    ("review-report-prefix-defect", "review"): (2, 0, 0, True, True),
    ("review-report-prefix-defect", "ce_review"): (1, 0, 1, True, False),
    ("review-report-prefix-defect", "candidate_review"): (2, 0, 0, True, True),
    ("review-csv-export-defect", "review"): (2, 0, 0, True, True),
    ("review-csv-export-defect", "ce_review"): (1, 0, 1, False, False),
    ("review-csv-export-defect", "candidate_review"): (0, 0, 2, False, False),
    ("review-balance-cache-defect", "review"): (2, 0, 0, True, True),
    ("review-balance-cache-defect", "ce_review"): (2, 1, 0, True, False),
    ("review-balance-cache-defect", "candidate_review"): (1, 1, 1, True, False),
    ("review-amount-grouping-clean", "review"): (0, 0, 0, True, True),
    ("review-amount-grouping-clean", "ce_review"): (0, 0, 0, True, True),
    ("review-amount-grouping-clean", "candidate_review"): (0, 1, 0, False, False),
    ("review-negative-amounts-clean", "review"): (0, 0, 0, True, True),
    ("review-negative-amounts-clean", "ce_review"): (0, 1, 0, False, False),
    ("review-negative-amounts-clean", "candidate_review"): (0, 0, 0, True, True),
}


def _git_env(home: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=_git_env(repo)
    ).stdout


# ── fixtures ───────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def specs() -> dict[str, TaskSpec]:
    return {spec.task_id: spec for spec in load_task_file(TASK_FILE)}


@pytest.fixture(scope="module")
def bindings(specs: dict[str, TaskSpec], tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskBinding]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKFLOW_BENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        return {b.spec.task_id: b for b in bind_tasks(tuple(specs.values()))}


@pytest.fixture(scope="module")
def labels(bindings: dict[str, TaskBinding]) -> dict[str, tuple[Label, ...]]:
    # Through the captured oracle snapshot, exactly as a cell will read them.
    return {case: labels_from_oracle(b.oracle.files) for case, b in bindings.items()}


@pytest.fixture(scope="module")
def snapshot(bindings: dict[str, TaskBinding], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-commit repository holding the pinned tree and nothing else, like a sanitized clone."""
    (sha,) = {b.resolved_sha for b in bindings.values()}
    repo = next(iter(bindings.values())).repo_path
    archive = subprocess.run(
        ["git", "--git-dir", str(repo), "archive", "--format=tar", sha], check=True, capture_output=True
    ).stdout
    dest = tmp_path_factory.mktemp("snapshot") / "repo"
    dest.mkdir()
    # GNU tar, not tarfile: extractall(filter=) is missing from Debian 12's Python 3.11.2.
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "--no-verify", "-m", "task snapshot")
    return dest


@pytest.fixture(scope="module")
def patched(
    specs: dict[str, TaskSpec], snapshot: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """Each case's workspace after its setup ran, as the agent will find it."""
    out = {}
    for case, spec in specs.items():
        workspace = tmp_path_factory.mktemp(case) / "workspace"
        subprocess.run(["cp", "-a", str(snapshot), str(workspace)], check=True)
        assert spec.setup is not None
        result = subprocess.run(
            ["/bin/sh", "-c", spec.setup],
            cwd=workspace,
            env=_git_env(workspace.parent),
            capture_output=True,
            text=True,
            timeout=SETUP_TIMEOUT_S,
        )
        assert result.returncode == 0, f"{case}: setup failed: {result.stderr}"
        out[case] = workspace
    return out


@pytest.fixture(scope="module")
def script() -> dict[str, Any]:
    return yaml.safe_load(SCRIPT_FILE.read_text())


# ── helpers ────────────────────────────────────────────────────────────────


def cell_session(script: dict[str, Any], case: str, arm: str) -> dict[str, Any]:
    for cell in script["cells"]:
        match = cell.get("match") or {}
        tasks, arms = match.get("task", "*"), match.get("arm", "*")
        tasks = [tasks] if isinstance(tasks, str) else tasks
        arms = [arms] if isinstance(arms, str) else arms
        if any(fnmatch.fnmatchcase(case, g) for g in tasks) and any(
            fnmatch.fnmatchcase(arm, g) for g in arms
        ):
            (session,) = cell["sessions"]
            return session
    raise AssertionError(f"review-demo.yaml has no cell for {case} × {arm}")


def tool_calls(session: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for turn in session["turns"]:
        for call in turn.get("tool_calls") or []:
            yield call["name"], call.get("input") or {}


def scripted_artifact(script: dict[str, Any], case: str, arm: str) -> bytes:
    writes = [args for name, args in tool_calls(cell_session(script, case, arm)) if name == "Write"]
    assert len(writes) == 1 and writes[0]["file_path"] == REVIEW_OUTPUT_PATH
    return writes[0]["content"].encode()


def added_lines(workspace: Path) -> dict[str, tuple[set[int], list[range]]]:
    """Per changed file: (lines the diff added, new-side line ranges of its hunks)."""
    out: dict[str, tuple[set[int], list[range]]] = {}
    current: tuple[set[int], list[range]] | None = None
    line_no = 0
    for line in git(workspace, "diff", "HEAD", "--no-color", "-U3").splitlines():
        if line.startswith("+++ "):
            current = out.setdefault(line.removeprefix("+++ b/"), (set(), []))
        elif match := re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", line):
            assert current is not None
            start, count = int(match.group(1)), int(match.group(2) or 1)
            current[1].append(range(start, start + count))
            line_no = start
        elif current is not None and line.startswith("+"):
            current[0].add(line_no)
            line_no += 1
        elif current is not None and line.startswith(" "):
            line_no += 1
    return out


def outcome(score: ReviewScore) -> tuple[int, int, int, bool, bool]:
    return (
        score.true_positives,
        score.false_positives,
        score.false_negatives,
        score.verdict_correct,
        review_oracle_passed(score),
    )


# ── the task file ──────────────────────────────────────────────────────────


def test_task_file_declares_the_review_cases(
    specs: dict[str, TaskSpec], bindings: dict[str, TaskBinding]
) -> None:
    assert tuple(specs) == tuple(CASES)
    assert {case: spec.task_class for case, spec in specs.items()} == {c: v[0] for c, v in CASES.items()}
    classes = [spec.task_class for spec in specs.values()]
    assert len(classes) >= 4 and classes.count("review-clean") >= 1
    (scenario_repo,) = {s.repo for s in load_task_file(SCENARIO_FILE)}
    (scenario_ref,) = {s.ref for s in load_task_file(SCENARIO_FILE)}
    check = f'test -s "${REVIEW_OUTPUT_ENV_VAR}"'
    for spec in specs.values():
        assert (spec.repo, spec.ref) == (scenario_repo, scenario_ref)  # the same bundle and pinned SHA
        assert bindings[spec.task_id].resolved_sha == spec.ref
        # verify proves its two tests with an outcome report (test_review_check.py); the oracle is the labels
        assert spec.verify == 'python3 -I -B "$WORKFLOW_BENCH_REVIEW_CHECK"' and spec.verify_min_tests == 2
        assert spec.oracle.command == check
        assert [f.target for f in spec.oracle.files] == [REVIEW_LABELS_TARGET]
        assert (
            spec.oracle.files[0].source == f"workflow_bench/corpus/review/labels/{spec.task_id}.labels.json"
        )
        assert spec.sandbox_copy == () and spec.sandbox_dependencies == () and not spec.expensive


def test_every_label_file_belongs_to_a_case() -> None:
    assert sorted(p.name for p in LABEL_DIR.iterdir()) == sorted(f"{case}.labels.json" for case in CASES)


# ── setup and labels ───────────────────────────────────────────────────────


@pytest.mark.parametrize("case", CASES)
def test_setup_leaves_the_pull_request_uncommitted(
    case: str, snapshot: Path, patched: dict[str, Path]
) -> None:
    workspace = patched[case]
    assert git(workspace, "rev-parse", "HEAD") == git(snapshot, "rev-parse", "HEAD")
    assert git(workspace, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(workspace, "diff", "--cached", "--name-only") == ""  # nothing staged, only intent-to-add
    assert set(git(workspace, "diff", "HEAD", "--name-only").split()) == CASES[case][1]
    status = git(workspace, "status", "--porcelain").splitlines()
    assert status and all(line[1] in "MA" for line in status), status  # worktree changes, no untracked


@pytest.mark.usefixtures("system_python")  # not a skipif: a skip must fail under CI
@pytest.mark.parametrize("case", CASES)
def test_each_pull_request_keeps_its_own_tests_green(case: str, patched: dict[str, Path]) -> None:
    # The defects are found by reading the diff: running the project's suite does not reveal them.
    result = subprocess.run(
        [str(SYSTEM_PYTHON), "-B", "-m", "unittest", "discover", "-s", "tests", "-q"],
        cwd=patched[case],
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("case", CASES)
def test_labels_sit_on_lines_the_patch_added(
    case: str, labels: dict[str, tuple[Label, ...]], patched: dict[str, Path]
) -> None:
    case_labels = labels[case]
    assert bool(case_labels) == (CASES[case][0] == "review-defect")  # clean controls have no labels
    changes = added_lines(patched[case])
    for lb in case_labels:
        assert lb.path in changes, f"{lb.label_id}: {lb.path} is not changed by the patch"
        text = (patched[case] / lb.path).read_text().splitlines()
        assert lb.line_end <= len(text), f"{lb.label_id}: {lb.path} has only {len(text)} lines"
        span = range(lb.line_start, lb.line_end + 1)
        added, hunks = changes[lb.path]
        assert any(span.start in h and span.stop - 1 in h for h in hunks), (
            f"{lb.label_id}: outside every hunk"
        )
        assert added & set(span), f"{lb.label_id}: no added line in {lb.line_start}-{lb.line_end}"
        assert all(text[n - 1].strip() for n in span), f"{lb.label_id}: points at a blank line"


def test_hidden_labels_are_not_recoverable_from_what_the_agent_sees(
    specs: dict[str, TaskSpec], labels: dict[str, tuple[Label, ...]], patched: dict[str, Path], snapshot: Path
) -> None:
    tell_tales = {"labels.json", "labels/", REVIEW_LABELS_TARGET, "corpus/review", "line_start", "line_end"}
    for case, spec in specs.items():
        visible = "\n".join(
            [
                spec.prompt,
                spec.setup or "",
                spec.verify,
                *spec.sandbox_copy,
                *(d.source for d in spec.sandbox_dependencies),
            ]
        )
        secrets = {*tell_tales, f"{case}.labels", *(lb.label_id for lb in labels[case])}
        for path in (*patched.values(), snapshot):
            for file in path.rglob("*"):
                if file.is_file() and ".git" not in file.relative_to(path).parts:
                    visible += "\n" + file.read_text(errors="replace")
        for secret in secrets:
            assert secret not in visible, f"{case}: {secret!r} is visible to the agent"


# ── the scripted model ─────────────────────────────────────────────────────


@pytest.mark.parametrize(("case", "arm"), list(EXPECTED))
def test_scripted_artifact_scores_as_the_table_says(
    case: str, arm: str, script: dict[str, Any], labels: dict[str, tuple[Label, ...]]
) -> None:
    artifact = parse_review_artifact(scripted_artifact(script, case, arm))
    score = score_review(artifact, labels[case])
    assert outcome(score) == EXPECTED[(case, arm)]
    assert score.score_finite
    assert score.clean_control == (CASES[case][0] == "review-clean")


def test_expected_table_matches_the_script_header() -> None:
    rows = {}
    cell = r"(\d+)/(\d+)/(\d+) V([+-]) O([+-])"
    for line in SCRIPT_FILE.read_text().splitlines():
        if match := re.fullmatch(rf"#\s+(\S+)\s+{cell}\s+{cell}\s+{cell}", line):
            rows[match.group(1)] = match.groups()[1:]
    assert tuple(rows) == tuple(CASES)
    for case, groups in rows.items():
        for i, arm in enumerate(ARMS):
            tp, fp, fn, verdict, oracle = groups[5 * i : 5 * i + 5]
            assert (int(tp), int(fp), int(fn), verdict == "+", oracle == "+") == EXPECTED[(case, arm)], (
                case,
                arm,
            )


def test_the_demo_shows_differences_and_the_negative_controls() -> None:
    by_arm = {arm: tuple(EXPECTED[(case, arm)] for case in CASES) for arm in ARMS}
    assert len(set(by_arm.values())) == len(ARMS)
    assert all(row[4] for row in by_arm["review"])
    assert not all(row[4] for row in by_arm["ce_review"]) and not all(
        row[4] for row in by_arm["candidate_review"]
    )
    clean = [case for case, (cls, _) in CASES.items() if cls == "review-clean"]
    assert any(
        EXPECTED[(case, a)][4] and not EXPECTED[(case, b)][4] for case in clean for a in ARMS for b in ARMS
    )  # one arm approves a clean control correctly, another raises a spurious finding
    defects = [case for case in CASES if case not in clean]
    assert any(
        EXPECTED[(case, arm)][:3] == (0, 0, 2) for case in defects for arm in ARMS
    )  # approves a defect
    assert any(EXPECTED[(case, arm)][:3] == (1, 1, 1) for case in defects for arm in ARMS)  # wrong place


def test_approving_the_defective_export_has_precision_none(
    script: dict[str, Any], labels: dict[str, tuple[Label, ...]]
) -> None:
    case = "review-csv-export-defect"
    score = score_review(
        parse_review_artifact(scripted_artifact(script, case, "candidate_review")), labels[case]
    )
    assert score.precision is None and score.recall == 0.0 and score.f1 == 0.0


@pytest.mark.parametrize(("case", "arm"), list(EXPECTED))
def test_script_follows_the_review_protocol(
    case: str, arm: str, script: dict[str, Any], patched: dict[str, Path]
) -> None:
    session = cell_session(script, case, arm)
    turns = session["turns"]
    assert all(turn.get("tool_calls") for turn in turns[:-1])
    assert not turns[-1].get("tool_calls") and turns[-1].get("text")
    for turn in turns:
        assert set(turn["usage"]) == {
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        }
    calls = list(tool_calls(session))
    assert calls[0] == ("Skill", {"skill": ARM_SKILLS[arm]})
    assert {name for name, _ in calls} == {"Skill", "Bash", "Read", "Write"}  # never Edit
    assert any(name == "Bash" and "git diff" in args["command"] for name, args in calls)
    reads = {args["file_path"].removeprefix("{cwd}/") for name, args in calls if name == "Read"}
    assert reads == CASES[case][1]
    for path in reads:
        assert (patched[case] / path).is_file()
    writes = [args["file_path"] for name, args in calls if name == "Write"]
    assert writes == [REVIEW_OUTPUT_PATH]  # outside the workspace; the workspace stays untouched
    # The artifact's JSON is what the model wrote, and its verdict is one of the contract's.
    assert json.loads(scripted_artifact(script, case, arm))["verdict"] in VERDICTS


def test_script_loads_with_the_provider() -> None:
    from workflow_bench.providers.scripted import load_script

    loaded = load_script(SCRIPT_FILE)
    for case, arm in EXPECTED:
        assert loaded.cell_for(task=case, arm=arm) is not None


@pytest.mark.parametrize("arm", ["review", "ce_review"])
def test_verify_passes_only_once_an_artifact_was_written(
    arm: str, specs: dict[str, TaskSpec], script: dict[str, Any], tmp_path: Path, bwrap_bin: str
) -> None:
    """The task's own verify, judged like a cell judges it: in bwrap, on its outcome report."""
    import threading

    from workflow_bench.judging.judge import run_verify, verify_expectation
    from workflow_bench.review.contract import REVIEW_OUTPUT_DIR, REVIEW_OUTPUT_PATH
    from workflow_bench.sandbox import Mount, SandboxKind, create_sandbox

    spec = specs["review-report-prefix-defect"]
    (tmp_path / "ws").mkdir()
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / REVIEW_OUTPUT_PATH.rsplit("/", 1)[1]
    sandbox = create_sandbox(
        SandboxKind.BWRAP, workspace=tmp_path / "ws", claude_bin=None, bwrap_bin=bwrap_bin
    )

    def verify() -> bool:
        return run_verify(
            sandbox,
            spec.verify,
            scratch=tmp_path,
            expectation=verify_expectation(spec, None),
            timeout_s=60,
            cancel=threading.Event(),
            mounts=(Mount(source=tmp_path / "out", target=REVIEW_OUTPUT_DIR),),
            env_extra={REVIEW_OUTPUT_ENV_VAR: REVIEW_OUTPUT_PATH},
        ).passed

    assert not verify()  # never written
    target.write_bytes(b"")
    assert not verify()  # empty
    target.write_bytes(scripted_artifact(script, spec.task_id, arm))
    assert verify()


def test_the_review_skill_names_the_contract_verdicts() -> None:
    text = REVIEW_SKILL.read_text()
    assert all(f"`{verdict}`" in text for verdict in VERDICTS)
    assert "request-changes" not in text
