"""regrade's input: a sweep directory and a predictions file read, every refusal named (no bwrap).

The sweep here is a directory written by hand through the real row model and sweep record, so
each refusal (a task never run, another base commit, a running sweep, an artifact outside the
directory) is shown without paying for a sweep; the e2e test (tests/e2e/test_regrade.py) runs the
real one.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.builders import row as make_row
from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.regrade.judge import change
from workflow_bench.regrade.source import (
    Job,
    RegradeInputError,
    read_predictions,
    read_sweep,
    rejudgeable,
)
from workflow_bench.regrade.write import changes_document, changes_markdown
from workflow_bench.reports.sweep_record import SweepRecord
from workflow_bench.rows.migrate import stored_line
from workflow_bench.taskspec.spec import bind_tasks, load_task_file

pytestmark = pytest.mark.component
DEMO_TASKS = Path(__file__).resolve().parents[2] / "tasks.scenarios.yaml"
GROUPING = "trivial-amount-grouping"


@pytest.fixture(scope="module")
def bindings():
    return bind_tasks(load_task_file(DEMO_TASKS))


def _sweep(root: Path, bindings, *, rows=(), finished=True, tasks=None) -> Path:
    root.mkdir()
    record = SweepRecord(
        model="m", effort=None, provider="scripted", claude_code_version="x", runs=1, arms=("baseline",),
        tasks=tuple(tasks if tasks is not None else (b.to_json() for b in bindings)),
        skipped_expensive=(), started_at="2026-01-01T00:00:00+00:00", policy=None, overlay=None,
    )  # fmt: skip
    if finished:
        from datetime import UTC, datetime

        record = record.finished(status="complete", detail=None, finished_at=datetime.now(UTC), wall_s=1.0)
    (root / "sweep.json").write_text(record.to_text())
    (root / "results.jsonl").write_text("".join(stored_line(r) for r in rows))
    return root


def test_a_sweep_reads_its_rows_and_patches(tmp_path, bindings):
    row = make_row(task=GROUPING, arm="baseline", patch_artifact=f"{GROUPING}-baseline-run0.patch")
    root = _sweep(tmp_path / "s", bindings, rows=[row])
    (root / row.patch_artifact).write_bytes(b"PATCH")
    source, jobs = read_sweep(root, bindings)
    assert [(j.task_id, j.arm, j.run, j.patch, j.rejudge) for j in jobs] == [
        (GROUPING, "baseline", 0, b"PATCH", True)
    ]
    assert jobs[0].source == f"{root} {GROUPING}/baseline/0"
    assert source.skipped == ()


def test_a_task_never_run_or_on_another_commit_is_refused_by_name(tmp_path, bindings):
    tasks = [b.to_json() for b in bindings if b.spec.task_id != GROUPING]
    moved = {**tasks[0], "resolved_sha": "0" * 40}
    root = _sweep(tmp_path / "s", bindings, tasks=[moved, *tasks[1:]])
    with pytest.raises(RegradeInputError) as caught:
        read_sweep(root, bindings)
    message = str(caught.value)
    assert f"task {GROUPING!r}: the sweep in {root} never ran it" in message
    assert f"task {tasks[0]['id']!r}: resolved_sha" in message


def test_skipped_expensive_tasks_are_left_out(tmp_path, bindings):
    root = _sweep(tmp_path / "s", bindings, tasks=[b.to_json() for b in bindings[:1]])
    record = json.loads((root / "sweep.json").read_text())
    record["skipped_expensive"] = [b.spec.task_id for b in bindings[1:]]
    (root / "sweep.json").write_text(json.dumps(record))
    source, jobs = read_sweep(root, bindings)
    assert source.skipped == tuple(b.spec.task_id for b in bindings[1:]) and jobs == []


def test_not_a_sweep_and_a_running_sweep_are_refused(tmp_path, bindings):
    with pytest.raises(RegradeInputError, match="not a sweep directory"):
        read_sweep(tmp_path, bindings)
    with pytest.raises(RegradeInputError, match="never finished"):
        read_sweep(_sweep(tmp_path / "s", bindings, finished=False), bindings)


def test_an_artifact_outside_the_sweep_or_missing_is_refused(tmp_path, bindings):
    row = make_row(task=GROUPING, arm="baseline", patch_artifact="../elsewhere.patch")
    with pytest.raises(RegradeInputError, match="outside the sweep directory"):
        read_sweep(_sweep(tmp_path / "s", bindings, rows=[row]), bindings)
    row = make_row(task=GROUPING, arm="baseline", patch_artifact="gone.patch")
    with pytest.raises(RegradeInputError, match=r"patch_artifact gone\.patch"):
        read_sweep(_sweep(tmp_path / "t", bindings, rows=[row]), bindings)


def test_only_rows_judged_on_a_patch_are_rejudged():
    assert rejudgeable(make_row(ok=True, patch_artifact="p.patch"))
    assert not rejudgeable(make_row(ok=False, patch_artifact="p.patch"))
    assert not rejudgeable(make_row(ok=True, patch_artifact=None))
    assert not rejudgeable(make_row(ok=True, patch_artifact="p.patch", review_artifact="r.json"))


def _line(**values) -> str:
    return (
        json.dumps({"instance_id": GROUPING, "model_name_or_path": "m", "model_patch": "", **values}) + "\n"
    )


def test_predictions_one_arm_per_model_and_a_run_per_repeat(tmp_path, bindings):
    path = tmp_path / "p.jsonl"
    path.write_text(_line(model_patch="A") + "\n" + _line(model_name_or_path="n") + _line(model_patch="B"))
    jobs = read_predictions(path, bindings)
    assert [(j.arm, j.run, j.patch, j.source) for j in jobs] == [
        ("m", 0, b"A", f"{path}:1"),
        ("n", 0, b"", f"{path}:3"),
        ("m", 1, b"B", f"{path}:4"),
    ]


@pytest.mark.parametrize(
    "text, named",
    [
        ("[1]\n", ":1: want a JSON object"),
        ("{\n", ":1: not JSON"),
        (_line(instance_id="nope"), ":1: instance_id: 'nope' is not a task"),
        (
            _line() + json.dumps({"instance_id": GROUPING, "model_patch": ""}),
            ":2: model_name_or_path: missing",
        ),
        (_line(model_patch=3), ":1: model_patch: missing or not a string"),
        (_line(model_name_or_path="a/b"), ":1: model_name_or_path: 'a/b' cannot name an arm"),
        (_line(model_name_or_path=" "), ":1: model_name_or_path: ' ' cannot name an arm"),
        ("\n\n", ": no predictions"),
    ],
)
def test_a_bad_prediction_is_named_by_line_and_key(tmp_path, bindings, text, named):
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(RegradeInputError) as caught:
        read_predictions(path, bindings)
    assert f"{path}{named}" in str(caught.value)


def test_an_unreadable_predictions_file_is_refused(tmp_path, bindings):
    with pytest.raises(RegradeInputError, match=r"p\.jsonl"):
        read_predictions(tmp_path / "p.jsonl", bindings)
    (tmp_path / "b.jsonl").write_bytes(b"\xff\n")
    with pytest.raises(RegradeInputError, match=r"b\.jsonl"):
        read_predictions(tmp_path / "b.jsonl", bindings)


def test_change_names_what_moved_and_why():
    before = make_row(resolved=True, oracle_passed=True, oracle_digest="a", expected_tests_digest="l")
    assert change(before, before) is None
    after = before.replace(
        resolved=False, oracle_passed=False, error_kind=ErrorKind.ORACLE_FAILED, oracle_digest="b"
    )
    text = change(before, after)
    assert text == (
        "resolved true -> false; oracle_passed true -> false; error_kind null -> oracle-failed "
        "(the oracle changed)"
    )
    relocked = after.replace(expected_tests_digest="m", cleanroom_detail="clean-room oracle failed: x")
    assert change(before, relocked).endswith(
        "(the oracle changed; the expected-tests lock changed; clean-room oracle failed: x)"
    )
    same = before.replace(authored_tests_passed=not before.authored_tests_passed)
    assert change(before, same).endswith("(same task, the clean room judged differently)")


def test_the_changes_document_lists_only_changed_rows_of_a_source(tmp_path):
    before = make_row(task="t", arm="a", resolved=True)
    after = before.replace(resolved=False, regrade_change="resolved true -> false (why | here)")
    same = make_row(task="t", arm="b").replace(regrade_change=None)
    jobs = [
        (Job("t", "a", 0, b"", "/s t/a/0", row=before), after),
        (Job("t", "b", 0, b"", "/s t/b/0", row=same, rejudge=False), same),
        (Job("t", "c", 0, b"", "/p.jsonl:3"), replace_row(after, arm="c")),
    ]
    document = changes_document(jobs)
    assert (document.rows, document.rejudged, document.sources) == (3, 2, ("/s", "/p.jsonl"))
    assert [(c.task, c.arm, c.before["resolved"], c.after["resolved"]) for c in document.changed] == [
        ("t", "a", True, False)
    ]
    markdown = changes_markdown(document)
    assert "3 rows, 2 re-judged in clean rooms, 1 changed verdict(s)" in markdown
    assert "| t | a | 0 | resolved=True" in markdown and "why \\| here" in markdown
    assert json.loads(document.to_text())["changed"][0]["why"] == "resolved true -> false (why | here)"
    empty = changes_markdown(changes_document([]))
    assert "No verdict changed." in empty and "| task |" not in empty


def replace_row(row, **changes):
    return row.replace(**changes)


def test_job_defaults():
    job = Job("t", "a", 0, b"", "s")
    assert (job.row, job.artifacts, job.rejudge) == (None, None, True)
    assert replace(job, rejudge=False).rejudge is False


def test_the_changes_document_text_is_exact():
    """regrade.json and regrade.md byte for byte: sorted keys, two-space indent, non-ASCII kept, a
    sweep directory with a space and a predictions path with a colon named whole, a prediction
    (no source verdict) ahead of a changed row skipped, not ending the list."""
    before = make_row(task="t", arm="a", resolved=True, oracle_passed=True, authored_tests_passed=True)
    after = before.replace(
        resolved=False, oracle_passed=False, error_kind=ErrorKind.ORACLE_FAILED, regrade_change="é → x"
    )
    jobs = [
        (Job("t", "c", 1, b"", "/p:q.jsonl:3"), after.replace(arm="c")),
        (Job("t", "a", 0, b"", "/my sweep t/a/0", row=before), after),
    ]
    document = changes_document(jobs)
    verdict = '"authored_tests_passed": true,\n      "error_kind": %s,\n      "oracle_passed": %s,\n'
    assert document.to_text() == (
        '{\n  "changed": [\n    {\n      "after": {\n        '
        + (verdict % ('"oracle-failed"', "false")).replace("\n      ", "\n        ")
        + '        "resolved": false\n      },\n      "arm": "a",\n      "before": {\n        '
        + (verdict % ("null", "true")).replace("\n      ", "\n        ")
        + '        "resolved": true\n      },\n      "run": 0,\n      "task": "t",\n'
        '      "why": "é → x"\n    }\n  ],\n  "rejudged": 2,\n  "rows": 2,\n'
        '  "schema_version": 1,\n  "sources": [\n    "/p:q.jsonl",\n    "/my sweep"\n  ]\n}\n'
    )
    assert changes_markdown(document) == (
        "# Regrade: changed verdicts\n\n"
        "Source: /p:q.jsonl, /my sweep. 2 rows, 2 re-judged in clean rooms, 1 changed verdict(s).\n\n"
        "| task | arm | run | before | after | why |\n|---|---|---|---|---|---|\n"
        "| t | a | 0 | resolved=True, authored_tests_passed=True, oracle_passed=True, error_kind=None "
        "| resolved=False, authored_tests_passed=True, oracle_passed=False, error_kind=oracle-failed "
        "| é → x |\n"
    )


def test_a_sweep_job_carries_its_row_and_every_artifact_exactly(tmp_path, bindings):
    """The job of a review-arm row: the patch, transcripts, wire records and review.json copied as
    bytes keyed by path, the row itself, not re-judged; a row without a patch judges b""; a row of a
    task outside the task file is read but gets no job; the SourceSweep holds root, record, rows."""
    from workflow_bench.reports.sweep_record import read_sweep_record
    from workflow_bench.rows.model import TranscriptArtifact

    transcript = TranscriptArtifact(path="t/s0.jsonl", sha256="0" * 64, bytes=2, source="stream")
    reviewed = make_row(
        task=GROUPING, arm="review", patch_artifact="p.patch", transcript_artifacts=[transcript],
        wire_artifacts=["w/s0.jsonl", "w/s1.jsonl"], review_artifact="r/review-copy.json",
    )  # fmt: skip
    bare = make_row(task=GROUPING, arm="baseline", run=1, patch_artifact=None)
    other = make_row(task=bindings[1].spec.task_id, arm="baseline")
    root = _sweep(tmp_path / "s", bindings, rows=[reviewed, bare, other])
    for name, data in {
        "p.patch": b"PATCH",
        "t/s0.jsonl": b"T0",
        "w/s0.jsonl": b"W0",
        "w/s1.jsonl": b"W1",
        "r/review-copy.json": b"{}",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    source, jobs = read_sweep(root, bindings[:1])
    assert jobs == [
        Job(
            GROUPING, "review", 0, b"PATCH", f"{root} {GROUPING}/review/0", row=source.rows[0],
            artifacts={"t/s0.jsonl": b"T0", "w/s0.jsonl": b"W0", "w/s1.jsonl": b"W1", "review.json": b"{}"},
            rejudge=False,
        ),
        Job(
            GROUPING, "baseline", 1, b"", f"{root} {GROUPING}/baseline/1", row=source.rows[1],
            artifacts={}, rejudge=False,
        ),
    ]  # fmt: skip
    assert jobs[0].row == reviewed and jobs[1].row == bare and type(jobs[1].patch) is bytes
    assert source.root == root and source.record == read_sweep_record(root)
    assert source.rows == (reviewed, bare, other) and source.skipped == ()
    rejudged = make_row(task=GROUPING, arm="baseline", patch_artifact="p.patch")
    (root / "results.jsonl").write_text(stored_line(rejudged))
    assert read_sweep(root, bindings[:1])[1] == [
        Job(GROUPING, "baseline", 0, b"PATCH", f"{root} {GROUPING}/baseline/0", row=rejudged, artifacts={})
    ]


def test_a_sweep_without_results_has_no_rows(tmp_path, bindings):
    root = _sweep(tmp_path / "s", bindings)
    (root / "results.jsonl").unlink()
    source, jobs = read_sweep(root, bindings)
    assert (source.rows, jobs) == ((), [])


def test_a_bad_results_line_is_named_by_file_and_line(tmp_path, bindings):
    root = _sweep(tmp_path / "s", bindings)
    (root / "results.jsonl").write_text("\n{\n")
    with pytest.raises(RegradeInputError) as caught:
        read_sweep(root, bindings)
    assert str(caught.value).startswith(f"{root}: {root / 'results.jsonl'}: line 2")


@pytest.mark.parametrize(
    "field, value, named",
    [
        ("transcript_artifacts", "transcript", "an artifact of the row"),
        ("wire_artifacts", ["w.jsonl"], "an artifact of the row"),
        ("review_artifact", "r.json", "an artifact of the row"),
        ("patch_artifact", "p.patch", "patch_artifact p.patch"),
    ],
)
def test_a_missing_artifact_is_named_exactly(tmp_path, bindings, field, value, named):
    from workflow_bench.rows.model import TranscriptArtifact

    if value == "transcript":
        value = [TranscriptArtifact(path="t.jsonl", sha256="0" * 64, bytes=0, source="stream")]
    row = make_row(task=GROUPING, arm="baseline", patch_artifact=None).replace(**{field: value})
    root = _sweep(tmp_path / "s", bindings, rows=[row])
    with pytest.raises(RegradeInputError) as caught:
        read_sweep(root, bindings)
    assert str(caught.value) == f"{root} {GROUPING}/baseline/0: {named}: No such file or directory"


def test_every_mismatch_is_named_exactly_one_a_line(tmp_path, bindings):
    tasks = [b.to_json() for b in bindings]
    moved = [{**tasks[0], "resolved_sha": "0" * 40}, {**tasks[1], "repo_identity": "elsewhere"}, *tasks[2:]]
    root = _sweep(tmp_path / "s", bindings, tasks=moved)
    with pytest.raises(RegradeInputError) as caught:
        read_sweep(root, bindings)
    assert str(caught.value) == (
        f"task {tasks[0]['id']!r}: resolved_sha {bindings[0].resolved_sha!r} differs from the sweep's "
        f"{'0' * 40!r}\n"
        f"task {tasks[1]['id']!r}: repo_identity {bindings[1].repo_identity!r} differs from the sweep's "
        "'elsewhere'"
    )


def test_a_prediction_patch_is_utf8_and_a_lone_surrogate_escape_a_byte(tmp_path, bindings):
    path = tmp_path / "p.jsonl"
    raw = json.dumps(
        {"instance_id": GROUPING, "model_name_or_path": "m", "model_patch": "é"}, ensure_ascii=False
    )
    path.write_bytes(raw.encode() + b"\n" + _line(model_patch="\udcff").encode())
    assert "é".encode() in path.read_bytes() and b"\\udcff" in path.read_bytes()
    assert [j.patch for j in read_predictions(path, bindings)] == ["é".encode(), b"\xff"]


def test_a_source_is_named_whole_whatever_its_name_holds():
    """A sweep directory with a colon or a trailing space, a predictions file with a space: each
    named whole (the sweep's '<dir> <task>/<arm>/<run>' split at its last space, a prediction's
    '<file>:<line>' at its last colon); a newline of a why is flattened in the table."""
    row = make_row(task="t", arm="a", resolved=True)
    after = row.replace(resolved=False, regrade_change="one\ntwo")
    jobs = [
        (Job("t", "a", 0, b"", "/my preds.jsonl:3"), row),
        (Job("t", "a", 0, b"", "/a:b t/a/0", row=row), row),
        (Job("t", "a", 1, b"", "/c: d  t/a/1", row=row), after),
    ]
    document = changes_document(jobs)
    assert document.sources == ("/my preds.jsonl", "/a:b", "/c: d ")
    assert changes_markdown(document).endswith("| one two |\n")


def test_an_oversized_input_is_refused_naming_its_limit_unread(tmp_path, bindings):
    """A predictions file over 256 MiB and a results.jsonl over 1 GiB are refused from their size
    (sparse files of 2 GiB: nothing is read), the message naming the limit in bytes."""
    path = tmp_path / "p.jsonl"
    with path.open("wb") as handle:
        handle.truncate(2 << 30)
    with pytest.raises(RegradeInputError) as caught:
        read_predictions(path, bindings)
    assert str(caught.value) == f"{path}: is {2 << 30} bytes; the limit is {256 << 20}"
    root = _sweep(tmp_path / "s", bindings)
    with (root / "results.jsonl").open("wb") as handle:
        handle.truncate(2 << 30)
    with pytest.raises(RegradeInputError) as caught:
        read_sweep(root, bindings)
    assert str(caught.value) == f"{root}: is {2 << 30} bytes; the limit is {1 << 30}"


def test_every_bad_prediction_is_named_one_a_line_and_good_ones_kept(tmp_path, bindings):
    path = tmp_path / "p.jsonl"
    lines = [
        "{",
        "[1]",
        json.dumps({"instance_id": GROUPING}),
        _line(instance_id="nope").strip(),
        _line(model_name_or_path="a\0b").strip(),
        _line(model_name_or_path="a\nb").strip(),
        _line(model_name_or_path="XGBoost", model_patch="P").strip(),
    ]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RegradeInputError) as caught:
        read_predictions(path, bindings)
    assert str(caught.value) == "\n".join(
        [
            f"{path}:1: not JSON (Expecting property name enclosed in double quotes)",
            f"{path}:2: want a JSON object",
            f"{path}:3: model_name_or_path: missing or not a string",
            f"{path}:4: instance_id: 'nope' is not a task of the task file",
            f"{path}:5: model_name_or_path: 'a\\x00b' cannot name an arm (empty, '/' or control)",
            f"{path}:6: model_name_or_path: 'a\\nb' cannot name an arm (empty, '/' or control)",
        ]
    )
    path.write_text(lines[-1] + "\n")
    assert read_predictions(path, bindings) == [Job(GROUPING, "XGBoost", 0, b"P", f"{path}:1")]


def test_a_skipped_task_does_not_hide_a_later_tasks_mismatch(tmp_path, bindings):
    moved = {**bindings[1].to_json(), "resolved_sha": "0" * 40}
    root = _sweep(tmp_path / "s", bindings, tasks=[moved])
    record = json.loads((root / "sweep.json").read_text())
    record["skipped_expensive"] = [bindings[0].spec.task_id]
    (root / "sweep.json").write_text(json.dumps(record))
    with pytest.raises(RegradeInputError) as caught:
        read_sweep(root, bindings[:2])
    assert str(caught.value).startswith(f"task {bindings[1].spec.task_id!r}: resolved_sha ")
