"""``tasks import``: SWE-bench-style JSONL over local clones, and Harbor task directories.

The SWE-bench instances are built over a real project: the parse repository the shipped recipe
builds (releases 1.22.3 -> 1.22.4 from PyPI, cached), cloned as ``<owner>__<name>``; the gold
patch is the release's library change, the test patch its test change.

- A JSONL of several instances: the sound one is imported (self-checked, its expected tests the
  instance's FAIL_TO_PASS and PASS_TO_PASS exactly), every other one is refused by name with its
  reason and nothing of it is written (exit 1): a FAIL_TO_PASS test that passes on the base (the
  oracle cannot discriminate), a test id that never ran, a gold patch that does not apply, a
  repository with no clone, a line that is not JSON. The imported task then runs: the oracle
  agent resolves it on every default arm, the no-op agent does not (baseline).
- Only refusals: exit 1, no task file, no oracle or reference file, no staging directory.
- Bad input (exit 2, nothing written): a missing JSONL, a task file that is not one, an
  ``--instance`` id the JSONL does not hold, a ``--test-command`` without ``{files}``.
- ``--instance`` imports only the instances named; ``--test-command`` is the runner the oracle
  and verify run (the whole test module is recorded, not only the plugin's selection).
- Harbor: a task directory (instruction, task.toml, environment/ with its Dockerfile, solution,
  tests), and the same task in Terminal-Bench 1's layout, are imported with its environment as the
  repository, its solution's change as the reference patch, its pytest file as the hidden oracle;
  a task that names /app, one whose solution changes nothing and one with no pytest file are
  refused by name, and no repository of theirs is left behind. With ``--repo`` the task starts in
  that working tree (no repository is made); a ``--repo`` that is not one, or a ``--dependency``
  not in it, is exit 2 with nothing written.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.builders import agent_sweep, git_in
from tests.conftest import link_tree
from workflow_bench.arms import DEFAULT_ARMS
from workflow_bench.tasks.__main__ import main as tasks_main
from workflow_bench.tasks.recipes import build_task, load_recipe
from workflow_bench.taskspec.repos import cache_root

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
RECIPE = REPO_ROOT / "workflow_bench" / "corpus" / "realworld" / "recipe.yaml"
FAILING = [
    "tests/test_parse.py::test_flexible_dates_inferred_year_leap_day",
    "tests/test_parse.py::test_flexible_dates_inferred_year_day_of_year",
    "tests/test_parse.py::test_invalid_timezone_minutes[+01:60]",
    "tests/test_parse.py::test_datetime_group_count_with_timezone",
    "tests/test_parse.py::test_datetimes",
]
PASSING = ["tests/test_parse.py::test_datetime_group_count", "tests/test_parse.py::test_mixed_types"]
STATEMENT = (
    "Date and time fields misbehave: a %z field breaks the fields after it, out-of-range timezone "
    "minutes are accepted, lowercase pm and z are misread, and a format without a year ignores "
    "leap years."
)


@pytest.fixture
def clones(tmp_path) -> Path:
    """``<tmp>/clones/r1chardj0n3s__parse``: a clone of the recipe's parse repository (both
    releases), its pytest tree (``.wfbench-deps``) in the working tree."""
    (parse,) = [t for t in load_recipe(RECIPE).tasks if t.task_id == "parse-datetime-fields"]
    built, _ = build_task(parse, RECIPE.parent, tmp_path / "built", cache=cache_root())
    clone = tmp_path / "clones" / "r1chardj0n3s__parse"
    subprocess.run(["git", "clone", "-q", str(built), str(clone)], check=True)
    link_tree(built / ".wfbench-deps", clone / ".wfbench-deps")
    return tmp_path / "clones"


def _instance(clone: Path, instance_id: str, **changes: object) -> dict:
    base = git_in(clone, "rev-parse", "HEAD~1")
    return {
        "repo": "r1chardj0n3s/parse",
        "instance_id": instance_id,
        "base_commit": base,
        "patch": git_in(clone, "diff", "HEAD~1", "HEAD", "--", "parse") + "\n",  # git_in strips
        "test_patch": git_in(clone, "diff", "HEAD~1", "HEAD", "--", "tests") + "\n",
        "problem_statement": STATEMENT,
        # As the published datasets hold them: JSON text.
        "FAIL_TO_PASS": json.dumps(FAILING),
        "PASS_TO_PASS": json.dumps(PASSING),
        "version": "1.22",
        "environment_setup_commit": base,
        **changes,
    }


def _files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} if folder.exists() else {}


def _sweep(agent: str, tasks: Path, tmp_path: Path, capsys, *arms: str) -> list[dict]:
    code, rows = agent_sweep(tasks, agent, tmp_path, "--workers", "2", *(("--arms", *arms) if arms else ()))
    assert code == 0, capsys.readouterr().err
    return rows


def test_swebench_jsonl_imports_the_sound_instance_refuses_the_rest_by_name_and_runs(
    clones, tmp_path, capsys, bwrap_bin, claude_bin, private_tmpdir
):
    clone = clones / "r1chardj0n3s__parse"
    lines = [
        json.dumps(_instance(clone, "parse-dates")),
        # FAIL_TO_PASS holds a test that passes on the base too: it proves nothing.
        json.dumps(_instance(clone, "parse-passes-on-base", FAIL_TO_PASS=[PASSING[1]], PASS_TO_PASS=[])),
        # A test id the instance names that does not exist here: it never ran.
        json.dumps(
            _instance(clone, "parse-ghost-test", PASS_TO_PASS=[*PASSING, "tests/test_parse.py::test_ghost"])
        ),
        json.dumps(_instance(clone, "parse-bad-patch", patch="--- a/parse/nope.py\n+++ b/parse/nope.py\n")),
        json.dumps(_instance(clone, "elsewhere-1", repo="someone/elsewhere")),
        "{not json",
        "",
    ]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("\n".join(lines) + "\n")
    tasks = tmp_path / "corpus" / "tasks.yaml"
    tasks.parent.mkdir()
    argv = ["import", "swebench", "--instances", str(instances), "--clones", str(clones)]
    code = tasks_main([*argv, "--tasks", str(tasks), "--repeats", "1"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "[import] parse-dates: imported" in out
    refusals = {
        "parse-passes-on-base": "does not discriminate: the hidden oracle passes on the untouched base",
        "parse-ghost-test": "REFUSED: PASS_TO_PASS test(s) never ran on the base: "
        "tests/test_parse.py::test_ghost; does not discriminate: verify fails",
        "parse-bad-patch": "patch does not apply to the base",
        "elsewhere-1": "no clone of someone/elsewhere in",
        "line 6": "not an instance: not JSON",
    }
    for name, reason in refusals.items():
        (line,) = [ln for ln in out.splitlines() if ln.startswith(f"[import] {name}: REFUSED: ")]
        assert reason in line, line
    assert "[import] 1 imported into" in out and "5 refused" in out

    (task,) = yaml.safe_load(tasks.read_text())["tasks"]
    assert task["id"] == "parse-dates" and task["prompt"] == STATEMENT and task["class"] == "swe-bench"
    assert task["ref"] == _instance(clone, "x")["base_commit"]
    assert (tasks.parent / task["reference_patch"]).read_text() == _instance(clone, "x")["patch"]
    # Only the refused instances' files are absent; no staging directory is left.
    assert sorted(p.name for p in (tasks.parent / "oracles").iterdir()) == ["parse-dates"]
    assert sorted(p.name for p in (tasks.parent / "reference").iterdir()) == ["parse-dates.patch"]
    assert not [p for p in tasks.parent.iterdir() if p.name.startswith(".wfbench-staging-")]
    # The recorded expected tests are exactly FAIL_TO_PASS and PASS_TO_PASS.
    lock = json.loads((tasks.parent / "tasks.lock.json").read_text())
    recorded = json.dumps(lock)
    for test_id in [*FAILING, *PASSING]:
        assert json.dumps(test_id)[1:-1] in recorded, test_id
    assert "test_ghost" not in recorded and "test_too_many_fields" not in recorded

    # It runs: resolved on every default arm by the oracle agent; the no-op agent does not resolve
    # it (one arm: the self-check already showed the oracle fails on the base).
    cells = sorted(("parse-dates", arm) for arm in DEFAULT_ARMS)
    solved = _sweep("oracle", tasks, tmp_path, capsys)
    assert sorted((r["task"], r["arm"]) for r in solved) == cells
    assert all(r["resolved"] is True for r in solved), [(r["arm"], r["error_detail"]) for r in solved]
    (untouched,) = _sweep("noop", tasks, tmp_path, capsys, "baseline")
    assert untouched["resolved"] is False and untouched["oracle_passed"] is False


def test_only_refusals_write_nothing(clones, tmp_path, capsys, bwrap_bin, private_tmpdir):
    clone = clones / "r1chardj0n3s__parse"
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        json.dumps(_instance(clone, "parse-empty", FAIL_TO_PASS=[]))
        + "\n"
        + json.dumps(_instance(clone, "parse-no-base", base_commit="0" * 40))
        + "\n"
    )
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    code = tasks_main(
        ["import", "swebench", "--instances", str(instances), "--clones", str(clones),
         "--tasks", str(corpus / "tasks.yaml"), "--repeats", "1"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1, out
    assert "[import] parse-empty: REFUSED: FAIL_TO_PASS is empty" in out
    assert "[import] parse-no-base: REFUSED: " in out and "base_commit" in out
    assert not any(corpus.iterdir())
    # A task file in a directory that does not exist: made for the import, removed again (nothing written).
    nested = tmp_path / "nested" / "corpus"
    code = tasks_main(
        ["import", "swebench", "--instances", str(instances), "--clones", str(clones),
         "--tasks", str(nested / "tasks.yaml"), "--repeats", "1"]
    )  # fmt: skip
    assert code == 1, capsys.readouterr().out
    assert not (tmp_path / "nested").exists()


def test_an_escaping_repo_and_an_oversized_instance_are_refused_by_name_the_rest_imported(
    clones, tmp_path, capsys, bwrap_bin, private_tmpdir
):
    """The oversized instance first (it used to abort the import, exit 2, naming a staging path),
    then a ``repo`` reaching beside ``--clones`` (a real clone there: the self-check used to run in
    it), then a sound one: only the sound one is imported, the other two are named."""
    clone = clones / "r1chardj0n3s__parse"
    subprocess.run(["git", "clone", "-q", str(clone), str(tmp_path / "outside-repo")], check=True)
    many = [f"tests/test_parse.py::test_x{i}" for i in range(200_000)]
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        json.dumps(_instance(clone, "parse-huge", FAIL_TO_PASS=many))
        + "\n"
        + json.dumps(_instance(clone, "parse-outside", repo="../outside-repo"))
        + "\n"
        + json.dumps(_instance(clone, "parse-dates"))
        + "\n"
    )
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    code = tasks_main(
        ["import", "swebench", "--instances", str(instances), "--clones", str(clones),
         "--tasks", str(corpus / "tasks.yaml"), "--repeats", "1"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1, out
    assert "[import] parse-huge: REFUSED: FAIL_TO_PASS and PASS_TO_PASS name 200002 tests" in out
    assert "[import] parse-outside: REFUSED: repo '../outside-repo' is not owner/name or name" in out
    assert "[import] parse-dates: imported" in out and "1 imported" in out and "2 refused" in out
    assert [t["id"] for t in yaml.safe_load((corpus / "tasks.yaml").read_text())["tasks"]] == ["parse-dates"]
    assert "outside-repo" not in out.split("parse-outside: REFUSED")[0]  # nothing ran there first


def test_bad_input_exits_2_and_writes_nothing(clones, tmp_path, capsys, private_tmpdir):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    not_tasks = corpus / "tasks.yaml"
    not_tasks.write_text("just: a mapping\n")
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(_instance(clones / "r1chardj0n3s__parse", "parse-dates")) + "\n")
    before = _files(corpus)
    cases = [
        (["--instances", str(tmp_path / "gone.jsonl"), "--tasks", str(corpus / "new.yaml")], "gone.jsonl"),
        (["--instances", str(instances), "--tasks", str(not_tasks)], "to append to"),
        # A typo in --instance is the flag's bad input, not an instance to refuse.
        (["--instances", str(instances), "--tasks", str(corpus / "new.yaml"), "--instance", "parse-dates",
          "--instance", "parse-nope"], "--instance parse-nope: no such instance_id in"),
        (["--instances", str(instances), "--tasks", str(corpus / "new.yaml"), "--test-command", "pytest -q"],
         "--test-command must contain {files}"),
    ]  # fmt: skip
    for extra, named in cases:
        code = tasks_main(["import", "swebench", "--clones", str(clones), *extra])
        err = capsys.readouterr().err
        assert code == 2, err
        assert named in err and "Traceback" not in err
        assert _files(corpus) == before


def test_swebench_instance_imports_only_the_instances_named(
    clones, tmp_path, capsys, bwrap_bin, private_tmpdir
):
    """``--instance``: of two sound instances in the JSONL, only the one named is drafted, checked
    and written (negative control: without the flag both would be imported). The task file's
    directory does not exist: it is created, as ``--tasks`` says (issue 32: "its directory does
    not exist", exit 2)."""
    clone = clones / "r1chardj0n3s__parse"
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        "".join(json.dumps(_instance(clone, name)) + "\n" for name in ("parse-dates", "parse-again"))
    )
    corpus = tmp_path / "new" / "corpus"
    code = tasks_main(
        ["import", "swebench", "--instances", str(instances), "--clones", str(clones),
         "--tasks", str(corpus / "tasks.yaml"), "--repeats", "1", "--instance", "parse-again"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "[import] parse-again: imported" in out and "parse-dates" not in out
    assert [t["id"] for t in yaml.safe_load((corpus / "tasks.yaml").read_text())["tasks"]] == ["parse-again"]
    assert sorted(p.name for p in (corpus / "oracles").iterdir()) == ["parse-again"]
    assert list(json.loads((corpus / "tasks.lock.json").read_text())["tasks"]) == ["parse-again"]


def test_swebench_test_command_is_the_runner_the_task_judges_with(
    clones, tmp_path, capsys, bwrap_bin, private_tmpdir
):
    """``--test-command``: the oracle runs that command over the test patch's files and verify runs
    it over PASS_TO_PASS, in place of the pytest line with the selection plugin. So the whole test
    module runs and is recorded, not only FAIL_TO_PASS and PASS_TO_PASS (negative control: the
    default line records ``test_too_many_fields`` nowhere, as the first test here shows)."""
    clone = clones / "r1chardj0n3s__parse"
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(_instance(clone, "parse-custom")) + "\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    # The repository's addopts enable coverage, which the read-only workspace refuses: --no-cov, as
    # the default line has.
    command = (
        'PYTHONPATH=.wfbench-deps/site-packages python3 -B "$WORKFLOW_BENCH_PYTEST" -q -p no:cacheprovider '
        "--rootdir=. --no-cov {files}"
    )
    code = tasks_main(
        ["import", "swebench", "--instances", str(instances), "--clones", str(clones),
         "--tasks", str(corpus / "tasks.yaml"), "--repeats", "1", "--test-command", command]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    (task,) = yaml.safe_load((corpus / "tasks.yaml").read_text())["tasks"]
    assert task["oracle"]["command"].endswith("&& " + command.replace("{files}", "tests/test_parse.py"))
    assert task["verify"] == command.replace("{files}", " ".join(PASSING))
    recorded = (corpus / "tasks.lock.json").read_text()
    assert "test_too_many_fields" in recorded and all(json.dumps(t)[1:-1] in recorded for t in FAILING)


def _harbor_task(root: Path, name: str, *, solve: str, instruction: str, tests: bool = True) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "instruction.md").write_text(instruction)
    (task / "task.toml").write_text(
        'version = "1.0"\n[metadata]\ncategory = "debugging"\ndifficulty = "easy"\n'
        "[verifier]\ntimeout_sec = 120.0\n[agent]\ntimeout_sec = 600.0\n"
        "[environment]\ncpus = 1\nmemory_mb = 2048\n"
    )
    (task / "environment" / "Dockerfile").write_text(
        "FROM python:3.11-slim\nWORKDIR /workspace\nCOPY calc.py .\n"
    )
    (task / "environment" / "calc.py").write_text(
        "import sys\n\n\ndef total(a, b):\n    return a - b\n\n\n"
        "if __name__ == '__main__':\n    print(total(int(sys.argv[1]), int(sys.argv[2])))\n"
    )
    (task / "solution" / "solve.sh").write_text(f"#!/bin/sh\nset -e\n{solve}\n")
    if tests:
        (task / "tests").mkdir()
        (task / "tests" / "test.sh").write_text("#!/bin/sh\npytest tests/test_outputs.py && echo 1 > r.txt\n")
        (task / "tests" / "test_outputs.py").write_text(
            "import subprocess\nimport sys\n\n\ndef test_the_sum_is_printed():\n"
            "    out = subprocess.run([sys.executable, 'calc.py', '2', '3'], capture_output=True,\n"
            "                         text=True)\n"
            "    assert out.stdout.strip() == '5'\n"
        )
    return task


def test_harbor_task_directories_import_where_they_map(
    tmp_path, capsys, bwrap_bin, sandbox_pytest_deps, private_tmpdir
):
    harbor = tmp_path / "harbor"
    fix = "sed -i 's/a - b/a + b/' calc.py"
    asked = "`calc.py A B` should print the sum of A and B; it prints something else. Fix it."
    good = _harbor_task(harbor, "calc-sum", solve=fix, instruction=asked)
    app = _harbor_task(harbor, "calc-app", solve=f"cd /app && {fix}", instruction=asked)
    idle = _harbor_task(harbor, "calc-idle", solve="true", instruction=asked)
    untested = _harbor_task(harbor, "calc-untested", solve=fix, instruction=asked, tests=False)
    # The same task in Terminal-Bench 1's layout: task.yaml, solution.sh, the directory as context.
    tb1 = _harbor_task(harbor, "calc-tb1", solve=fix, instruction=asked)
    (tb1 / "instruction.md").unlink()
    (tb1 / "task.toml").unlink()
    (tb1 / "task.yaml").write_text(yaml.safe_dump({"instruction": asked, "category": "debugging"}))
    (tb1 / "solution" / "solve.sh").rename(tb1 / "solution.sh")
    (tb1 / "solution").rmdir()
    (tb1 / "tests" / "test.sh").rename(tb1 / "run-tests.sh")
    for name in ("Dockerfile", "calc.py"):
        (tb1 / "environment" / name).rename(tb1 / name)
    (tb1 / "environment").rmdir()
    tasks = tmp_path / "corpus" / "tasks.yaml"
    tasks.parent.mkdir()
    code = tasks_main(
        ["import", "harbor", str(good), str(app), str(idle), str(untested), str(tb1), "--tasks", str(tasks),
         "--dependency", f"{sandbox_pytest_deps.parent}:.wfbench-deps", "--repeats", "1"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1, out
    assert "[import] calc-sum: imported" in out and "[import] calc-tb1: imported" in out
    assert "[import] calc-app: REFUSED: solution/solve.sh names /app" in out
    assert "[import] calc-idle: REFUSED: solution/solve.sh changed nothing" in out
    assert "[import] calc-untested: REFUSED: tests/ holds no pytest test file" in out
    task, tb1_task = yaml.safe_load(tasks.read_text())["tasks"]
    assert task["id"] == "calc-sum" and task["class"] == "harbor-debugging" and task["prompt"] == asked
    assert tb1_task["id"] == "calc-tb1" and tb1_task["class"] == "harbor-debugging"
    assert tb1_task["prompt"] == asked and tb1_task["oracle"]["command"] == task["oracle"]["command"]
    tb1_repo = (tasks.parent / tb1_task["repo"]).resolve()
    assert sorted(git_in(tb1_repo, "ls-files").split()) == ["calc.py"]  # no harness file
    assert [f["target"] for f in task["oracle"]["files"]] == ["tests/test_outputs.py"]
    patch = (tasks.parent / task["reference_patch"]).read_text()
    assert "+    return a + b" in patch and "Dockerfile" not in patch
    repo = (tasks.parent / task["repo"]).resolve()
    assert repo == (tasks.parent / "repos" / "calc-sum").resolve()
    assert sorted(git_in(repo, "ls-files").split()) == ["calc.py"]  # no Dockerfile, no deps tree
    assert (repo / ".wfbench-deps" / "site-packages").is_dir()
    assert sorted(p.name for p in (tasks.parent / "repos").iterdir()) == ["calc-sum", "calc-tb1"]
    # Its lock records the oracle's one test.
    assert "test_the_sum_is_printed" in (tasks.parent / "tasks.lock.json").read_text()


def test_harbor_repo_is_the_repository_the_task_starts_in(
    tmp_path, capsys, bwrap_bin, sandbox_pytest_deps, private_tmpdir
):
    """``--repo``: the task starts in that working tree's HEAD (its own ``calc.py``, not the
    ``environment/`` copy), the solution's patch is taken against it, and no repository is made
    beside the task file (negative control: without the flag, ``repos/calc-sum`` is made from the
    environment). Its bad input: not a git working tree, a ``--dependency`` not in it: exit 2,
    nothing written."""
    fix = "sed -i 's/a - b/a + b/' calc.py"
    task_dir = _harbor_task(tmp_path / "harbor", "calc-sum", solve=fix, instruction="Fix calc.py.")
    mine = tmp_path / "mine"
    mine.mkdir()
    git_in(mine, "init", "-q", "-b", "main")
    (mine / "calc.py").write_text(
        "import sys\n\n\ndef total(a, b):\n    # this repository's own\n    return a - b\n\n\n"
        "if __name__ == '__main__':\n    print(total(int(sys.argv[1]), int(sys.argv[2])))\n"
    )
    git_in(mine, "add", "-A")
    git_in(mine, "commit", "-q", "-m", "start")
    link_tree(sandbox_pytest_deps.parent, mine / ".wfbench-deps")
    head = git_in(mine, "rev-parse", "HEAD")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    argv = ["import", "harbor", str(task_dir), "--tasks", str(corpus / "tasks.yaml"), "--repeats", "1"]
    for extra, named in [
        (["--repo", str(tmp_path / "harbor")], "--repo"),
        (["--repo", str(mine), "--dependency", "no-tree"], "--dependency no-tree"),
    ]:
        code = tasks_main([*argv, *extra])
        captured = capsys.readouterr()
        assert code == 2, (extra, captured.out, captured.err)
        assert named in captured.err and "Traceback" not in captured.err, captured.err
        assert not any(corpus.iterdir()), extra
    code = tasks_main([*argv, "--repo", str(mine), "--dependency", ".wfbench-deps"])
    out = capsys.readouterr().out
    assert code == 0, out
    (task,) = yaml.safe_load((corpus / "tasks.yaml").read_text())["tasks"]
    assert (corpus / task["repo"]).resolve() == mine.resolve() and task["ref"] == head
    assert task["sandbox_dependencies"] == [{"source": ".wfbench-deps", "target": ".wfbench-deps"}]
    patch = (corpus / task["reference_patch"]).read_text()
    assert "     # this repository's own\n-    return a - b\n+    return a + b" in patch
    assert not (corpus / "repos").exists()
    assert (
        git_in(mine, "rev-parse", "HEAD") == head
        and git_in(mine, "status", "--porcelain") == "?? .wfbench-deps/"
    )


def test_harbor_bad_input_exits_2_and_leaves_no_repository(tmp_path, capsys, bwrap_bin, private_tmpdir):
    fix = "sed -i 's/a - b/a + b/' calc.py"
    task = _harbor_task(tmp_path / "harbor", "calc-sum", solve=fix, instruction="Fix calc.py.")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    argv = ["import", "harbor", str(task), "--tasks", str(corpus / "tasks.yaml"), "--repeats", "1"]
    cases = [
        # No sandbox: refused before any repository is made.
        (["--bwrap-bin", str(tmp_path / "no-bwrap")], "no-bwrap"),
        # The self-check cannot start (an unknown toolkit) after the repository was made: it goes.
        (["--toolkit", str(tmp_path / "no-toolkit")], "no-toolkit"),
        (["--dependency", str(tmp_path / "no-tree")], "no-tree"),
    ]
    for extra, named in cases:
        code = tasks_main([*argv, *extra])
        captured = capsys.readouterr()
        assert code in (1, 2), captured
        assert named in captured.err + captured.out and "Traceback" not in captured.err
        assert not any(corpus.iterdir()), (extra, sorted(corpus.rglob("*")))
