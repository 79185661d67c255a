"""The expected-tests lock (`tasks.expected_tests`) and how binding uses it.

A lock is read strictly (every defect exit-2-worthy, naming the lock, the task and the key); an
entry whose subject no longer matches the task is stale and refused naming what changed (the
self-check instead leaves it out, to record a fresh one); the entry's digest is part of the
binding digest, and a lock rewritten with the same ids is byte-identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import task_entry, write_tasks
from workflow_bench.judging.judge import oracle_expectation, verify_expectation
from workflow_bench.taskspec.expected_tests import (
    LOCK_FORMAT,
    SUBJECT_KEYS,
    ExpectedTests,
    RecordedTests,
    load_lock,
    lock_path,
    write_lock,
)
from workflow_bench.taskspec.spec import TaskFileError, TaskSpecError, bind_tasks, load_task_file

pytestmark = pytest.mark.unit


def _bind(path: Path, **options):
    (binding,) = bind_tasks(load_task_file(path), **options)
    return binding


def _entry(binding, *, oracle=("t1_oracle_test.T.test_ok",), skipped=()) -> ExpectedTests:
    return ExpectedTests(
        subject=binding.lock_subject,
        verify=RecordedTests.of(["tests.test_a.T.test_x"], ["tests.test_a.T.test_platform"]),
        oracle=RecordedTests.of(oracle, skipped),
    )


def test_the_subject_keys_are_the_locks(corpus: Path) -> None:
    binding = _bind(write_tasks(corpus, task_entry()))
    assert tuple(binding.lock_subject) == SUBJECT_KEYS


def test_a_fresh_entry_judges_the_task_and_is_part_of_its_binding(corpus: Path) -> None:
    path = write_tasks(corpus, task_entry())
    plain = _bind(path)
    assert plain.expected_tests is None and plain.to_json()["expected_tests_digest"] is None
    assert lock_path(path) == corpus / "tasks.lock.json"
    write_lock(lock_path(path), {"t1": _entry(plain)})
    locked = _bind(path)
    assert locked.expected_tests == _entry(plain)
    assert locked.binding_digest != plain.binding_digest
    verify = verify_expectation(locked.spec, locked.expected_tests)
    oracle = oracle_expectation(locked.spec, locked.expected_tests)
    assert verify.locked and verify.required == {"tests.test_a.T.test_x"}
    assert verify.may_skip == {"tests.test_a.T.test_platform"}
    assert oracle.locked and oracle.required == {"t1_oracle_test.T.test_ok"} and oracle.min_tests is None
    # Other ids, another digest; the same ids, the same bytes (no timestamps).
    first = lock_path(path).read_bytes()
    write_lock(lock_path(path), {"t1": _entry(plain)})
    assert lock_path(path).read_bytes() == first
    write_lock(lock_path(path), {"t1": _entry(plain, oracle=("other",))})
    assert _bind(path).binding_digest not in (locked.binding_digest, plain.binding_digest)


def test_without_a_lock_the_declared_counts_judge(corpus: Path) -> None:
    binding = _bind(write_tasks(corpus, task_entry(verify_min_tests=3)))
    verify = verify_expectation(binding.spec, binding.expected_tests)
    assert verify.min_tests == 3 and not verify.locked
    assert oracle_expectation(binding.spec, None).min_tests == 1  # the default floor
    plain = _bind(write_tasks(corpus, task_entry()))
    assert not verify_expectation(plain.spec, None).by_report  # no verify_min_tests, no lock: exit status


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"verify": "python3 -m unittest -q tests"}, "verify_digest"),
        ({"setup": "true"}, "setup_digest"),
        (
            {"oracle": {"command": 'python3 "$WORKFLOW_BENCH_ORACLE_ROOT/t1_oracle_test.py" -v',
                        "files": [{"source": "oracles/t1.oracle_test.py", "target": "t1_oracle_test.py"}]}},
            "oracle_digest",
        ),
    ],
)  # fmt: skip
def test_a_stale_entry_is_refused_naming_the_lock_the_task_and_what_changed(
    corpus: Path,
    change,
    named,
) -> None:
    path = write_tasks(corpus, task_entry())
    write_lock(lock_path(path), {"t1": _entry(_bind(path))})
    write_tasks(corpus, task_entry(**change))
    with pytest.raises(TaskFileError) as caught:
        _bind(path)
    (error,) = caught.value.errors
    assert str(error).startswith(f"{lock_path(path)}: task 't1': subject: stale: ")
    assert f"({named} changed)" in str(error)
    assert f"python -m workflow_bench.tasks check --tasks {path}" in str(error)
    # The self-check binds it without the stale entry, to record a fresh one.
    assert _bind(path, stale_locks="ignore").expected_tests is None


def test_a_changed_reference_patch_makes_the_entry_stale(corpus: Path) -> None:
    (corpus / "fix.patch").write_text("--- a/x\n+++ b/x\n")
    path = write_tasks(corpus, task_entry(reference_patch="fix.patch"))
    write_lock(lock_path(path), {"t1": _entry(_bind(path))})
    (corpus / "fix.patch").write_text("--- a/y\n+++ b/y\n")
    with pytest.raises(TaskFileError, match=r"reference_patch_sha256 changed"):
        _bind(path)


def _lock_text(tasks: object, **top: object) -> str:
    return json.dumps({"format": LOCK_FORMAT, "tasks": tasks, **top})


GOOD_RECORD = {"passed": ["a"], "skipped": []}
KEYS = ", ".join(SUBJECT_KEYS)


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (
            "{not json",
            "(json)",
            "not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        ),
        (json.dumps({"format": "v0", "tasks": {}}), "format", f"want {LOCK_FORMAT!r}"),
        (_lock_text({}, extra=1), "tasks", "want exactly {format, tasks} with a tasks mapping"),
        (_lock_text([]), "tasks", "want exactly {format, tasks} with a tasks mapping"),
        (
            _lock_text({"t1": {"subject": {}, "verify": None}}),
            "(entry)",
            "want exactly {subject, verify, oracle, oracle_sealed}",
        ),
        (
            _lock_text(
                {"t1": {"subject": {"x": 1}, "verify": None, "oracle": GOOD_RECORD, "oracle_sealed": []}}
            ),
            "subject",
            f"want the keys {KEYS} (and runtimes)",
        ),
        ("verify-not-sorted", "verify.passed", "ids must be sorted and unique"),
        ("oracle-both", "oracle", "an id is both passed and skipped"),
        ("oracle-not-strings", "oracle.passed", "want a list of test ids of 1 to 1000 characters"),
        ("oracle-empty-id", "oracle.skipped", "want a list of test ids of 1 to 1000 characters"),
        ("oracle-long-id", "oracle.passed", "want a list of test ids of 1 to 1000 characters"),
        ("oracle-a-list", "oracle", "want exactly {passed, skipped}"),
        ("verify-extra-key", "verify", "want exactly {passed, skipped}"),
        ("sealed-not-sorted", "oracle_sealed", "want a sorted list of unique oracle file targets"),
        ("sealed-not-strings", "oracle_sealed", "want a sorted list of unique oracle file targets"),
        ("sealed-a-string", "oracle_sealed", "want a sorted list of unique oracle file targets"),
    ],
)
def test_an_unusable_lock_is_refused_naming_the_key(corpus: Path, text: str, key: str, message: str) -> None:
    path = write_tasks(corpus, task_entry())
    subject = _bind(path).lock_subject
    entry = {
        "subject": subject,
        "verify": None,
        "oracle": GOOD_RECORD,
        "oracle_sealed": ["t1_oracle_test.py"],
    }
    entries = {
        "sealed-not-sorted": {**entry, "oracle_sealed": ["b_test.py", "a_test.py"]},
        "sealed-not-strings": {**entry, "oracle_sealed": [1]},
        "sealed-a-string": {**entry, "oracle_sealed": "a_test.py"},
        "verify-not-sorted": {**entry, "verify": {"passed": ["b", "a"], "skipped": []}},
        "oracle-both": {**entry, "oracle": {"passed": ["a"], "skipped": ["a"]}},
        "oracle-not-strings": {**entry, "oracle": {"passed": [1], "skipped": []}},
        "oracle-empty-id": {**entry, "oracle": {"passed": ["a"], "skipped": [""]}},
        "oracle-long-id": {**entry, "oracle": {"passed": ["x" * 1001], "skipped": []}},
        "oracle-a-list": {**entry, "oracle": ["passed", "skipped"]},
        "verify-extra-key": {**entry, "verify": {**GOOD_RECORD, "failed": []}},
    }
    lock_path(path).write_text(_lock_text({"t1": entries[text]}) if text in entries else text)
    with pytest.raises(TaskSpecError) as caught:
        load_lock(lock_path(path))
    task_id = "t1" if text in entries or key in ("(entry)", "subject") else None
    assert (caught.value.path, caught.value.task_id, caught.value.key) == (lock_path(path), task_id, key)
    rewrite = "delete the lock and run `python -m workflow_bench.tasks check` to write it again"
    assert caught.value.message == (f"{message}; {rewrite}" if key != "(file)" else message)
    with pytest.raises(TaskFileError):  # binding refuses it too: exit 2, nothing run
        _bind(path)


def test_an_id_of_exactly_the_limit_is_kept(corpus: Path) -> None:
    path = write_tasks(corpus, task_entry())
    entry = {
        "subject": _bind(path).lock_subject,
        "verify": None,
        "oracle": {"passed": ["x" * 1000], "skipped": []},
        "oracle_sealed": [],
    }
    lock_path(path).write_text(_lock_text({"t1": entry}))
    assert load_lock(lock_path(path))["t1"].oracle.passed == ("x" * 1000,)


def test_a_lock_that_is_no_regular_file_is_refused_as_a_file(corpus: Path) -> None:
    path = write_tasks(corpus, task_entry())
    lock_path(path).mkdir()
    with pytest.raises(TaskSpecError) as caught:
        load_lock(lock_path(path))
    assert (caught.value.path, caught.value.task_id, caught.value.key) == (lock_path(path), None, "(file)")
    assert "not a regular file" in caught.value.message


def test_no_lock_file_is_no_lock(tmp_path: Path) -> None:
    assert load_lock(tmp_path / "absent.lock.json") is None


def test_a_refreshed_lock_is_a_changed_binding_for_resume(corpus: Path, tmp_path: Path) -> None:
    """sweep.lock.json pins every task's binding digest: a sweep judged by one lock is not resumed
    under another (reuse compares the same digest per row)."""
    from workflow_bench.schedule.resume import ResumeError, check_lock
    from workflow_bench.schedule.resume import write_lock as write_sweep_lock

    path = write_tasks(corpus, task_entry())
    write_lock(lock_path(path), {"t1": _entry(_bind(path))})
    started = _bind(path).binding_digest
    out = tmp_path / "out"
    out.mkdir()
    write_sweep_lock(out, {"task_binding_digests": {"t1": started}})
    check_lock(out, {"task_binding_digests": {"t1": _bind(path).binding_digest}})  # unchanged: resumes
    write_lock(lock_path(path), {"t1": _entry(_bind(path), oracle=("other",))})
    with pytest.raises(ResumeError, match="task_binding_digests"):
        check_lock(out, {"task_binding_digests": {"t1": _bind(path).binding_digest}})


def test_the_lock_file_is_stable_readable_json(tmp_path: Path) -> None:
    """One canonical text: sorted keys, one-space indent, non-ASCII ids as written."""
    entry = ExpectedTests(
        subject=dict.fromkeys(SUBJECT_KEYS),
        verify=None,
        oracle=RecordedTests.of(["b", "é", "a"], ["s", "a"]),
    )
    assert entry.describe() == "verify by exit status; oracle 3 passed, 1 skipped, unsealed"
    assert ExpectedTests(
        entry.subject, RecordedTests.of(["x"], ["y"]), entry.oracle, ("o_test.py",)
    ).describe() == ("verify 1 passed, 1 skipped; oracle 3 passed, 1 skipped, sealed 1 file(s)")
    assert entry.oracle == RecordedTests(("a", "b", "é"), ("s",))  # passed wins over skipped
    path = tmp_path / "t.lock.json"
    small = ExpectedTests({"k": 1}, None, RecordedTests.of(["é"], []), ("é_test.py",))
    write_lock(path, {"z": small, "a": small})
    one = '   "oracle": {\n    "passed": [\n     "é"\n    ],\n    "skipped": []\n   },\n'
    one += '   "oracle_sealed": [\n    "é_test.py"\n   ],\n'
    one += '   "subject": {\n    "k": 1\n   },\n   "verify": null\n'
    assert path.read_bytes().decode("utf-8") == (
        '{\n "format": "workflow-bench expected tests v2",\n "tasks": {\n  "a": {\n'
        + one
        + '  },\n  "z": {\n'
        + one
        + "  }\n }\n}\n"
    )
    assert [p.name for p in path.parent.iterdir()] == ["t.lock.json"]  # no temporary file left
    write_lock(path, {"z": entry, "a": entry})
    assert load_lock(path) == {"a": entry, "z": entry}


def test_a_failed_lock_write_leaves_the_old_lock_and_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "t.lock.json"
    path.write_text("old")

    def refuse(*args):
        raise PermissionError("read-only")

    monkeypatch.setattr("workflow_bench.input_files.os.replace", refuse)  # the lock goes through replace_text
    with pytest.raises(PermissionError, match="read-only"):
        write_lock(path, {})
    assert [p.name for p in tmp_path.iterdir()] == ["t.lock.json"] and path.read_text() == "old"
