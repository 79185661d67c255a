"""The pure parts of ``tasks import``: how a SWE-bench id names a pytest test, reading instances,
finding clones, and the Harbor refusals made before anything runs.

Negative controls throughout: an id that names another test, a different parameter, another
class, a near-miss bare name; a line that is not an instance; a Harbor task naming /app.
"""

from __future__ import annotations

import json

import pytest

from workflow_bench.tasks.harbor import HarborError, draft_harbor
from workflow_bench.tasks.kit.wfbench_select import dotted, matches
from workflow_bench.tasks.swebench import (
    MAX_LINE_BYTES,
    MAX_TEST_IDS,
    Instance,
    InstanceError,
    find_clone,
    read_instances,
    size_problem,
)

pytestmark = pytest.mark.unit
NODE = "tests/test_x.py::Case::test_y[a b]"


@pytest.mark.parametrize(
    ("expected", "nodeid"),
    [
        (NODE, NODE),
        ("tests/test_x.py::Case::test_y[a", NODE),  # SWE-bench's log parser cut it at the space
        ("test_y (tests.test_x.Case)", "tests/test_x.py::Case::test_y"),
        ("test_y (tests.test_x.Case.test_y)", "tests/test_x.py::Case::test_y"),
        ("test_y (test_x.Case)", "tests/test_x.py::Case::test_y"),  # dotted from a package root
        ("test_y", "tests/test_x.py::test_y[1]"),
    ],
)
def test_a_swebench_id_names_the_test(expected, nodeid):
    assert matches(expected, nodeid)


@pytest.mark.parametrize(
    ("expected", "nodeid"),
    [
        ("tests/test_x.py::test_y", "tests/test_x.py::test_y_more"),
        ("tests/test_x.py::test_y[1]", "tests/test_x.py::test_y[2]"),
        ("test_y (tests.test_x.Other)", "tests/test_x.py::Case::test_y"),
        ("test_y (tests.test_x.Case)", "tests/test_x.py::Case::test_yy"),
        ("test_y", "tests/test_x.py::test_y_more"),
        ("test_x.py::test_y", "tests/test_x.py::test_y"),  # a path must be the whole path
    ],
)
def test_a_swebench_id_does_not_name_another_test(expected, nodeid):
    assert not matches(expected, nodeid)


def test_dotted_form():
    assert dotted("tests/test_x.py::Case::test_y") == "tests.test_x.Case.test_y"


def _instance(**changes: object) -> dict:
    return {
        "repo": "o/n", "instance_id": "o__n-1", "base_commit": "abc", "patch": "p", "test_patch": "t",
        "problem_statement": "s", "FAIL_TO_PASS": '["a", "a", "b"]', "PASS_TO_PASS": [], "extra": 1,
        **changes,
    }  # fmt: skip


def test_instances_are_read_with_their_tests_and_others_refused_by_line(tmp_path):
    path = tmp_path / "i.jsonl"
    lines = [
        json.dumps(_instance()),
        "",
        "[1, 2",
        json.dumps(_instance(FAIL_TO_PASS="not json")),
        json.dumps(_instance(PASS_TO_PASS=[""])),
        json.dumps({k: v for k, v in _instance().items() if k != "patch"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    found = list(read_instances(path))
    assert [n for n, _ in found] == [1, 3, 4, 5, 6]
    first = found[0][1]
    assert isinstance(first, Instance) and first.fail_to_pass == ("a", "b") and first.pass_to_pass == ()
    reasons = [r for _, r in found[1:]]
    assert all(isinstance(r, str) for r in reasons)
    assert reasons[0].startswith("not JSON")
    assert "FAIL_TO_PASS" in reasons[1] and "PASS_TO_PASS" in reasons[2] and "patch" in reasons[3]


def test_a_missing_instances_file_is_refused(tmp_path):
    with pytest.raises(InstanceError, match=r"gone\.jsonl"):
        list(read_instances(tmp_path / "gone.jsonl"))


def test_clones_are_found_by_each_layout_and_a_missing_one_named(tmp_path):
    (tmp_path / "o__n").mkdir()
    (tmp_path / "p" / "q").mkdir(parents=True)
    (tmp_path / "r").mkdir()
    assert find_clone(tmp_path, "o/n") == tmp_path / "o__n"
    assert find_clone(tmp_path, "p/q") == tmp_path / "p" / "q"
    assert find_clone(tmp_path, "x/r") == tmp_path / "r"
    with pytest.raises(InstanceError, match="no clone of a/b in"):
        find_clone(tmp_path, "a/b")


@pytest.mark.parametrize(
    "repo", ["../outside-repo", "/abs/path", "o/../outside-repo", "a/b/c", ".", "..", "o/.", "", "o/", "-x/y"]
)
def test_a_repo_that_is_not_a_plain_name_is_refused_before_any_lookup(tmp_path, repo):
    clones = tmp_path / "clones"
    clones.mkdir()
    (tmp_path / "outside-repo").mkdir()  # beside --clones: what "../outside-repo" would reach
    (clones / "o").mkdir()
    with pytest.raises(InstanceError, match="is not owner/name or name"):
        find_clone(clones, repo)


def test_a_clone_whose_symlink_leads_outside_the_clones_is_refused(tmp_path):
    clones = tmp_path / "clones"
    clones.mkdir()
    (tmp_path / "outside-repo").mkdir()
    (clones / "o__escape").symlink_to(tmp_path / "outside-repo")
    (clones / "inside").mkdir()
    (clones / "o__alias").symlink_to(clones / "inside")  # resolved, still beneath: allowed
    (clones / "o__self").symlink_to(clones)
    with pytest.raises(InstanceError, match="leads outside --clones"):
        find_clone(clones, "o/escape")
    with pytest.raises(InstanceError, match="leads outside --clones"):
        find_clone(clones, "o/self")
    assert find_clone(clones, "o/alias") == clones / "o__alias"


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"FAIL_TO_PASS": [f"t::x{i}" for i in range(200_000)]}, f"name 200000 tests, over {MAX_TEST_IDS}"),
        ({"PASS_TO_PASS": ["t::" + "y" * 5000]}, "a test id is 5003 characters"),
        ({"FAIL_TO_PASS": [f"t::{'z' * 900}{i}" for i in range(800)]}, "over an oracle file's"),
        ({"patch": "p" * (2 * 1024 * 1024)}, "patch is 2097152 bytes"),
        ({"test_patch": "t" * (5 * 1024 * 1024)}, "test_patch is 5242880 bytes"),
        ({"problem_statement": "s" * (300 * 1024)}, "problem_statement is 307200 bytes"),
        ({"base_commit": "a" * 300}, "base_commit is 300 characters"),
    ],
)
def test_an_instance_over_a_bound_is_named_and_one_within_is_not(changes, named):
    assert size_problem(Instance.model_validate(_instance(), by_alias=True)) is None  # the control
    problem = size_problem(Instance.model_validate(_instance(**changes), by_alias=True))
    assert problem is not None and named in problem


def test_an_oversized_line_is_refused_by_line_and_the_next_one_still_read(tmp_path):
    path = tmp_path / "i.jsonl"
    huge = json.dumps(_instance(instance_id="huge", patch="p" * (MAX_LINE_BYTES + 10)))
    path.write_text(huge + "\n" + json.dumps(_instance(instance_id="small")) + "\n")
    (first, why), (second, found) = list(read_instances(path))
    assert (first, second) == (1, 2) and why == f"over {MAX_LINE_BYTES} bytes"
    assert isinstance(found, Instance) and found.instance_id == "small"


def _harbor(tmp_path, name="t1", **files: str):
    task = tmp_path / name
    defaults = {
        "instruction.md": "Do it.",
        "solution/solve.sh": "echo done > out.txt\n",
        "tests/test_outputs.py": "def test_out():\n    assert open('out.txt').read() == 'done\\n'\n",
        "environment/Dockerfile": "FROM scratch\n",
        "environment/README": "start\n",
    }
    for rel, text in {**defaults, **files}.items():
        if text is None:
            continue
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return task


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"instruction.md": "Write /app/out.txt"}, "instruction.md names /app"),
        ({"tests/test_outputs.py": "def test_a():\n    assert open('/app/x')\n"}, "names /app"),
        ({"tests/test_outputs.py": None, "tests/helper.py": "x = 1\n"}, "no pytest test file"),
        ({"instruction.md": None}, "no instruction.md"),
        ({"solution/solve.sh": None}, "no solve.sh"),
        ({"task.toml": "[metadata\n"}, "task.toml"),
        ({"instruction.md": None, "task.yaml": "category: x\n"}, "task.yaml has no 'instruction' text"),
        ({"instruction.md": None, "task.yaml": "instruction: [\n"}, "task.yaml"),
        ({"instruction.md": None, "task.yaml": "instruction: Do it.\n"}, "no solution.sh"),
    ],
)
def test_harbor_refusals_before_anything_runs(tmp_path, files, reason):
    task = _harbor(tmp_path, **files)
    with pytest.raises(HarborError, match=reason):
        draft_harbor(task, tasks_dir=tmp_path / "corpus", repo=None, bwrap_bin="bwrap")
    assert not (tmp_path / "corpus").exists()


def test_harbor_task_id_must_be_usable(tmp_path):
    task = _harbor(tmp_path, name="bad name")
    with pytest.raises(HarborError, match="not a usable task id"):
        draft_harbor(task, tasks_dir=tmp_path / "corpus", repo=None, bwrap_bin="bwrap")


def test_harbor_environment_with_a_symlink_or_too_many_entries_is_refused(tmp_path, monkeypatch):
    from workflow_bench.tasks import harbor

    task = _harbor(tmp_path)
    (task / "environment" / "link").symlink_to("/etc/passwd")
    with pytest.raises(HarborError, match="is a symlink"):
        draft_harbor(task, tasks_dir=tmp_path / "corpus", repo=None, bwrap_bin="bwrap")
    (task / "environment" / "link").unlink()
    monkeypatch.setattr(harbor, "MAX_TREE_ENTRIES", 1)
    (task / "environment" / "more").write_text("x\n")
    with pytest.raises(HarborError, match="over 1 entries"):
        draft_harbor(task, tasks_dir=tmp_path / "corpus", repo=None, bwrap_bin="bwrap")
    assert not (tmp_path / "corpus").exists()


def _check(base: dict[str, str], passed_with_gold: list[str] | None, skipped: tuple[str, ...] = ()):
    from workflow_bench.judging.outcome_report import JudgeOutcome
    from workflow_bench.judging.verdict import RunEvidence, TestResult
    from workflow_bench.tasks.check import TaskCheck
    from workflow_bench.tasks.check_expected import Probe
    from workflow_bench.taskspec.expected_tests import ExpectedTests, RecordedTests

    tests = tuple(TestResult(t, o) for t, o in base.items())
    oracle = JudgeOutcome(False, "", "", RunEvidence(tests=tests, complete=True))
    expected = (
        None
        if passed_with_gold is None
        else ExpectedTests({}, None, RecordedTests.of(passed_with_gold, skipped))
    )
    return TaskCheck("o__n-1", "implementation", Probe(None, oracle), (), None, (), expected=expected)


def _named(f2p: list[str], p2p: list[str]) -> Instance:
    return Instance.model_validate(_instance(FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p), by_alias=True)


F = "t.py::test_fixed"
P = "t.py::test_kept"


def test_the_recorded_tests_are_the_instances_own():
    from workflow_bench.tasks.swebench import expectation_problems

    sound = _check({F: "failed", P: "passed"}, [F, P])
    assert expectation_problems(_named([F], [P]), sound) == []
    # A FAIL_TO_PASS test may fairly not run on the base (its module imports what the fix adds).
    assert expectation_problems(_named([F], [P]), _check({P: "passed"}, [F, P])) == []


@pytest.mark.parametrize(
    ("check", "f2p", "p2p", "problem"),
    [
        (_check({F: "failed", P: "passed"}, [F, P]), [F], [P, "t.py::test_ghost"],
         "PASS_TO_PASS test(s) never ran on the base: t.py::test_ghost"),
        (_check({F: "failed", P: "passed"}, [P]), [F], [P],
         "FAIL_TO_PASS test(s) never ran and passed with the gold patch: t.py::test_fixed"),
        (_check({F: "failed", P: "passed"}, [P], skipped=(F,)), [F], [P],
         "FAIL_TO_PASS test(s) skipped here with the gold patch: t.py::test_fixed"),
        (_check({F: "passed", P: "passed"}, [F, P]), [F], [P],
         "FAIL_TO_PASS test(s) pass on the base already: t.py::test_fixed"),
        # Not discriminating (nothing recorded): the ghost is still named.
        (_check({F: "failed", P: "passed"}, None), [F], ["t.py::test_ghost"],
         "PASS_TO_PASS test(s) never ran on the base: t.py::test_ghost"),
    ],
    ids=["ghost-pass-to-pass", "fixed-never-passed", "fixed-skipped", "fixed-passes-on-base", "unrecorded"],
)  # fmt: skip
def test_an_instance_whose_tests_are_not_what_ran_is_named(check, f2p, p2p, problem):
    from workflow_bench.tasks.swebench import expectation_problems

    assert problem in expectation_problems(_named(f2p, p2p), check)
