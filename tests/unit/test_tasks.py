"""Task-file loading and validation, spec digests, selection, and the oracle snapshot lifecycle.

Loading validates the repository and ref with read-only git queries, so the fixtures build a
real (tiny) git repository in a temp dir; nothing here clones, binds or runs a task.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from tests.builders import ORACLE_BYTES, ORACLE_SOURCE, make_spec, task_entry, write_tasks
from workflow_bench.taskspec import oracles
from workflow_bench.taskspec.oracle_staging import stage_oracle, verify_staged
from workflow_bench.taskspec.oracles import (
    MAX_ORACLE_FILE_BYTES,
    STAGED_OWNER_UID,
    OracleCaptureError,
    OracleSnapshot,
    OracleStageError,
    OracleTamperError,
    capture_oracle,
)
from workflow_bench.taskspec.spec import (
    TASK_KEYS,
    DependencySpec,
    OracleFileSpec,
    OracleSpec,
    TaskFileError,
    TaskSpec,
    TaskSpecError,
    canonical_digest,
    load_task_file,
    select_tasks,
)

pytestmark = pytest.mark.unit


def defects(path: Path) -> tuple[TaskSpecError, ...]:
    with pytest.raises(TaskFileError) as caught:
        load_task_file(path)
    return caught.value.errors


def assert_one_defect(path: Path, *, where: str, key: str, contains: str = "") -> TaskSpecError:
    errors = defects(path)
    matching = [e for e in errors if e.key == key]
    assert matching, f"no defect for key {key!r} in: {[str(e) for e in errors]}"
    text = str(matching[0])
    assert text.startswith(f"{path}: {where}: {key}: "), text
    assert contains.lower() in text.lower(), text
    return matching[0]


# ── a valid file ───────────────────────────────────────────────────────────


def test_valid_file_loads_with_defaults(corpus: Path) -> None:
    path = write_tasks(corpus, task_entry(), task_entry(id="t2", expensive=True, setup="true", ref="main"))
    first, second = load_task_file(path)
    assert (first.task_id, first.task_class, first.ref, first.setup, first.expensive) == (
        "t1",
        "trivial",
        "HEAD",
        None,
        False,
    )
    assert first.source_file == path and first.repo_location == corpus / "repo"
    assert first.oracle == OracleSpec(
        command='python3 "$WORKFLOW_BENCH_ORACLE_ROOT/t1_oracle_test.py"',
        files=(OracleFileSpec(source=ORACLE_SOURCE, target="t1_oracle_test.py"),),
    )
    assert (second.expensive, second.setup, second.ref) == (True, "true", "main")
    assert isinstance(first.sandbox_copy, tuple) and isinstance(first.sandbox_dependencies, tuple)


def test_sandbox_paths_load_as_tuples(corpus: Path) -> None:
    path = write_tasks(
        corpus,
        task_entry(
            sandbox_copy=["fixtures/data.json"],
            sandbox_dependencies=[{"source": "vendor", "target": "vendor"}],
        ),
    )
    (spec,) = load_task_file(path)
    assert spec.sandbox_copy == ("fixtures/data.json",)
    assert spec.sandbox_dependencies == (DependencySpec(source="vendor", target="vendor"),)


def test_yaml_anchors_are_allowed(corpus: Path) -> None:
    path = corpus / "tasks.yaml"
    path.write_text(
        "tasks:\n"
        "  - &base\n"
        "    id: a\n    class: c\n    repo: repo\n    prompt: p\n    verify: v\n"
        f"    oracle: {{command: c, files: [{{source: {ORACLE_SOURCE}, target: a.py}}]}}\n"
        "  - <<: *base\n    id: b\n"
    )
    assert [s.task_id for s in load_task_file(path)] == ["a", "b"]


# ── malformed files: each defect names the file, the task and the key ──────


def test_missing_required_key(corpus: Path) -> None:
    assert_one_defect(
        write_tasks(corpus, task_entry(prompt=None)), where="task 't1'", key="prompt", contains="missing"
    )


def test_wrong_type(corpus: Path) -> None:
    assert_one_defect(
        write_tasks(corpus, task_entry(verify=42)), where="task 't1'", key="verify", contains="string"
    )


def test_blank_string(corpus: Path) -> None:
    assert_one_defect(
        write_tasks(corpus, task_entry(prompt="   ")), where="task 't1'", key="prompt", contains="blank"
    )


def test_unknown_key(corpus: Path) -> None:
    assert_one_defect(
        write_tasks(corpus, task_entry(timeout=5)), where="task 't1'", key="timeout", contains="unknown"
    )


def test_duplicate_id(corpus: Path) -> None:
    assert_one_defect(
        write_tasks(corpus, task_entry(), task_entry()), where="task 't1'", key="id", contains="duplicate"
    )


@pytest.mark.parametrize("bad_id", ["-starts-with-dash", "has space", "x" * 129, "", "ünïcode"])
def test_bad_id_pattern(corpus: Path, bad_id: str) -> None:
    assert_one_defect(
        write_tasks(corpus, task_entry(id=bad_id)), where="tasks[0]", key="id", contains="match"
    )


def test_oracle_file_missing(corpus: Path) -> None:
    oracle = {"command": "c", "files": [{"source": "oracles/nope.py", "target": "t.py"}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.files[0].source", contains="does not exist")


def test_oracle_source_is_a_symlink(corpus: Path) -> None:
    (corpus / "oracles" / "link.py").symlink_to(corpus / ORACLE_SOURCE)
    oracle = {"command": "c", "files": [{"source": "oracles/link.py", "target": "t.py"}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.files[0].source", contains="symlink")


def test_oracle_source_under_a_symlinked_directory(corpus: Path) -> None:
    (corpus / "linked").symlink_to(corpus / "oracles", target_is_directory=True)
    oracle = {"command": "c", "files": [{"source": "linked/t1.oracle_test.py", "target": "t.py"}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.files[0].source", contains="symlink")


def test_oracle_source_outside_the_task_file_directory(corpus: Path) -> None:
    (corpus.parent / "outside.py").write_text("x = 1\n")
    oracle = {"command": "c", "files": [{"source": "oracles/../../outside.py", "target": "t.py"}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.files[0].source", contains="outside")


def test_oracle_source_absolute(corpus: Path) -> None:
    oracle = {"command": "c", "files": [{"source": str(corpus / ORACLE_SOURCE), "target": "t.py"}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.files[0].source", contains="relative")


def test_oracle_file_too_large(corpus: Path) -> None:
    (corpus / "oracles" / "big.py").write_bytes(b"#" * (MAX_ORACLE_FILE_BYTES + 1))
    oracle = {"command": "c", "files": [{"source": "oracles/big.py", "target": "t.py"}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.files[0].source", contains="limit")


def test_oracle_files_too_large_in_total(corpus: Path) -> None:
    files = []
    for i in range(5):  # 5 x 500 KiB: each under the per-file cap, together over 2 MiB
        (corpus / "oracles" / f"part{i}.py").write_bytes(b"#" * (500 * 1024))
        files.append({"source": f"oracles/part{i}.py", "target": f"part{i}.py"})
    path = write_tasks(corpus, task_entry(oracle={"command": "c", "files": files}))
    assert_one_defect(path, where="task 't1'", key="oracle.files", contains="total")


def test_oracle_source_not_a_regular_file(corpus: Path) -> None:
    os.mkfifo(corpus / "oracles" / "fifo.py")
    oracle = {"command": "c", "files": [{"source": "oracles/fifo.py", "target": "t.py"}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.files[0].source", contains="regular file")


@pytest.mark.parametrize(
    ("target", "contains"),
    [
        ("../escape.py", ".."),
        ("sub/../x.py", ".."),
        ("/abs.py", "relative"),
        (".git/hooks/pre-commit", ".git"),
        ("has space.py", "portable"),
        ("x" * 241, "240 bytes"),
    ],
)
def test_bad_oracle_target(corpus: Path, target: str, contains: str) -> None:
    oracle = {"command": "c", "files": [{"source": ORACLE_SOURCE, "target": target}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.files[0].target", contains=contains)


def test_duplicate_oracle_target(corpus: Path) -> None:
    entry = {"source": ORACLE_SOURCE, "target": "t.py"}
    path = write_tasks(corpus, task_entry(oracle={"command": "c", "files": [entry, entry]}))
    assert_one_defect(path, where="task 't1'", key="oracle.files", contains="duplicate")


def test_oracle_files_empty_list(corpus: Path) -> None:
    path = write_tasks(corpus, task_entry(oracle={"command": "c", "files": []}))
    assert_one_defect(path, where="task 't1'", key="oracle.files", contains="1 to 8")


def test_oracle_too_many_files(corpus: Path) -> None:
    files = [{"source": ORACLE_SOURCE, "target": f"t{i}.py"} for i in range(9)]
    path = write_tasks(corpus, task_entry(oracle={"command": "c", "files": files}))
    assert_one_defect(path, where="task 't1'", key="oracle.files", contains="1 to 8")


def test_oracle_unknown_key(corpus: Path) -> None:
    oracle = {"command": "c", "files": [{"source": ORACLE_SOURCE, "target": "t.py"}], "timeout": 3}
    assert_one_defect(
        write_tasks(corpus, task_entry(oracle=oracle)),
        where="task 't1'",
        key="oracle.timeout",
        contains="unknown key; known keys: command, files",
    )


def test_oracle_file_entry_unknown_key(corpus: Path) -> None:
    oracle = {"command": "c", "files": [{"source": ORACLE_SOURCE, "target": "t.py", "mode": 1}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(
        path, where="task 't1'", key="oracle.files[0].mode", contains="known keys: source, target"
    )


def test_oracle_command_too_long(corpus: Path) -> None:
    oracle = {"command": "x" * (8 * 1024 + 1), "files": [{"source": ORACLE_SOURCE, "target": "t.py"}]}
    path = write_tasks(corpus, task_entry(oracle=oracle))
    assert_one_defect(path, where="task 't1'", key="oracle.command", contains="8192")


def test_yaml_syntax_error(corpus: Path) -> None:
    path = corpus / "tasks.yaml"
    path.write_text("tasks:\n  - id: t1\n    prompt: [unclosed\n")
    assert_one_defect(path, where="<top level>", key="(yaml)", contains="line")


def test_duplicate_yaml_key(corpus: Path) -> None:
    path = corpus / "tasks.yaml"
    path.write_text("tasks:\n  - id: t1\n    id: t2\n")
    assert_one_defect(path, where="<top level>", key="(yaml)", contains="duplicate key 'id'")


def test_non_bool_expensive(corpus: Path) -> None:
    path = write_tasks(corpus, task_entry(expensive="yes"))
    assert_one_defect(path, where="task 't1'", key="expensive", contains="true or false")


def test_integer_is_not_a_bool(corpus: Path) -> None:
    assert_one_defect(write_tasks(corpus, task_entry(expensive=1)), where="task 't1'", key="expensive")


def test_unknown_ref(corpus: Path) -> None:
    path = write_tasks(corpus, task_entry(ref="no-such-branch"))
    assert_one_defect(path, where="task 't1'", key="ref", contains="does not name a commit")


def test_ref_that_looks_like_an_option(corpus: Path) -> None:
    assert_one_defect(
        write_tasks(corpus, task_entry(ref="--output=x")), where="task 't1'", key="ref", contains="'-'"
    )


def test_repo_not_a_git_repository(corpus: Path) -> None:
    (corpus / "plain").mkdir()
    path = write_tasks(corpus, task_entry(repo="plain"))
    assert_one_defect(path, where="task 't1'", key="repo", contains="not a git repository")


def test_repo_inside_a_repository_but_not_its_top_level(corpus: Path) -> None:
    (corpus / "repo" / "sub").mkdir()
    path = write_tasks(corpus, task_entry(repo="repo/sub"))
    assert_one_defect(path, where="task 't1'", key="repo", contains="top level")


def test_repo_missing(corpus: Path) -> None:
    assert_one_defect(
        write_tasks(corpus, task_entry(repo="gone")), where="task 't1'", key="repo", contains="does not exist"
    )


def test_repo_file_that_is_not_a_bundle(corpus: Path) -> None:
    (corpus / "fake.bundle").write_text("not a bundle\n")
    path = write_tasks(corpus, task_entry(repo="fake.bundle"))
    assert_one_defect(path, where="task 't1'", key="repo", contains="not a git bundle")


@pytest.mark.parametrize(
    ("key", "value"),
    [("sandbox_copy", [".git/config"]), ("sandbox_copy", ["../up"]), ("sandbox_copy", ["/etc/passwd"])],
)
def test_bad_sandbox_copy(corpus: Path, key: str, value: list[str]) -> None:
    assert_one_defect(write_tasks(corpus, task_entry(**{key: value})), where="task 't1'", key=f"{key}[0]")


def test_sandbox_dependency_must_be_exactly_source_and_target(corpus: Path) -> None:
    path = write_tasks(
        corpus, task_entry(sandbox_dependencies=[{"source": "a", "target": "b", "mode": "rw"}])
    )
    assert_one_defect(
        path, where="task 't1'", key="sandbox_dependencies[0].mode", contains="known keys: source, target"
    )


def test_sandbox_dependency_target_under_git(corpus: Path) -> None:
    path = write_tasks(corpus, task_entry(sandbox_dependencies=[{"source": "a", "target": "sub/.git/x"}]))
    assert_one_defect(path, where="task 't1'", key="sandbox_dependencies[0].target", contains=".git")


def test_top_level_not_a_mapping(corpus: Path) -> None:
    path = corpus / "tasks.yaml"
    path.write_text("- id: t1\n")
    assert_one_defect(path, where="<top level>", key="(document)", contains="mapping")


def test_unknown_top_level_key(corpus: Path) -> None:
    path = corpus / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": [task_entry()], "version": 2}))
    assert_one_defect(path, where="<top level>", key="version", contains="unknown")


def test_empty_task_list(corpus: Path) -> None:
    path = corpus / "tasks.yaml"
    path.write_text("tasks: []\n")
    assert_one_defect(path, where="<top level>", key="tasks", contains="empty")


def test_task_not_a_mapping(corpus: Path) -> None:
    path = corpus / "tasks.yaml"
    path.write_text("tasks:\n  - just a string\n")
    assert_one_defect(path, where="tasks[0]", key="(task)", contains="mapping")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    assert_one_defect(path, where="<top level>", key="(file)", contains="no such file")


@pytest.mark.parametrize("key", ["task_id", "task_class", "source_file"])
def test_attribute_names_are_not_keys_of_the_file(corpus: Path, key: str) -> None:
    # The model's attribute names (and the file it was declared in) are not what a file says.
    path = write_tasks(corpus, task_entry(**{key: "x"}))
    assert_one_defect(path, where="task 't1'", key=key, contains="unknown key; known keys: id, class")


def test_task_keys_are_read_off_the_one_declaration() -> None:
    # Adding a task key is one field of TaskSpec: the keys, the required ones and the known-keys
    # message all follow it.
    assert (
        tuple(info.alias or name for name, info in TaskSpec.model_fields.items() if name != "source_file")
        == TASK_KEYS
    )
    assert TASK_KEYS[:5] == ("id", "class", "repo", "prompt", "verify")
    assert all(TaskSpec.model_fields[name].description for name in TaskSpec.model_fields)


def test_every_defect_is_reported_at_once(corpus: Path) -> None:
    path = write_tasks(
        corpus,
        task_entry(id="a", prompt=None),
        task_entry(id="b", expensive="no", ref="nope"),
        task_entry(id="c", oracle={"command": "c", "files": []}, extra=True),
    )
    errors = defects(path)
    found = {(e.task_id, e.key) for e in errors}
    assert {("a", "prompt"), ("b", "expensive"), ("c", "oracle.files"), ("c", "extra")} <= found
    # The file-level error lists one defect per line, each naming the file.
    with pytest.raises(TaskFileError) as caught:
        load_task_file(path)
    lines = str(caught.value).splitlines()
    assert len(lines) == len(errors) and all(line.startswith(f"{path}: task '") for line in lines)


# ── errors, specs and digests ──────────────────────────────────────────────


def test_error_text_and_attributes() -> None:
    err = TaskSpecError(Path("/x/tasks.yaml"), "t1", "ref", "unknown")
    assert str(err) == "/x/tasks.yaml: task 't1': ref: unknown"
    assert (err.path, err.task_id, err.key, err.message) == (Path("/x/tasks.yaml"), "t1", "ref", "unknown")
    assert str(TaskSpecError("/x/t.yaml", None, "id", "bad", 3)) == "/x/t.yaml: tasks[3]: id: bad"
    assert str(TaskSpecError("/x/t.yaml", None, "tasks", "empty")) == "/x/t.yaml: <top level>: tasks: empty"


def test_spec_constructor_validates() -> None:
    with pytest.raises(TaskSpecError, match=r"/corpus/tasks.yaml: task 't1': expensive: "):
        make_spec(expensive="yes")
    with pytest.raises(TaskSpecError, match=r"tasks.yaml: <top level>: id: "):
        make_spec(task_id="bad id")
    with pytest.raises(TaskSpecError, match=r"oracle.files: want 1 to 8"):
        make_spec(oracle={"command": "c", "files": ()})
    with pytest.raises(TaskSpecError, match=r"source_file: must be an absolute Path"):
        make_spec(source_file=Path("relative.yaml"))


def test_specs_are_frozen() -> None:
    spec = make_spec()
    with pytest.raises(ValidationError, match="frozen"):
        spec.prompt = "changed"  # type: ignore[misc]


def test_digests_are_stable_and_follow_the_prompt() -> None:
    spec = make_spec()
    assert spec.prompt_digest == make_spec().prompt_digest == canonical_digest("Fix it.")
    assert len(spec.prompt_digest) == 64
    assert make_spec(prompt="Fix it!").prompt_digest != spec.prompt_digest
    assert make_spec(prompt="Fix it!").verify_digest == spec.verify_digest
    assert spec.setup_digest == canonical_digest(None) != make_spec(setup="make").setup_digest
    assert make_spec(verify="false").verify_digest != spec.verify_digest


def test_canonical_digest_ignores_key_order() -> None:
    assert canonical_digest({"a": 1, "b": [1, 2]}) == canonical_digest({"b": [1, 2], "a": 1})
    assert canonical_digest({"a": 1}) != canonical_digest({"a": "1"})


def test_loaded_digests_change_with_the_prompt_only(corpus: Path) -> None:
    (one,) = load_task_file(write_tasks(corpus, task_entry(), name="one.yaml"))
    (same,) = load_task_file(write_tasks(corpus, task_entry(), name="same.yaml"))
    (other,) = load_task_file(
        write_tasks(corpus, task_entry(prompt="Fix the other thing."), name="other.yaml")
    )
    assert one.prompt_digest == same.prompt_digest != other.prompt_digest
    assert one.verify_digest == other.verify_digest


def test_select_tasks_skips_expensive_unless_asked() -> None:
    cheap, costly = make_spec(task_id="cheap"), make_spec(task_id="costly", expensive=True)
    assert select_tasks([cheap, costly], include_expensive=False) == ((cheap,), ("costly",))
    assert select_tasks([cheap, costly], include_expensive=True) == ((cheap, costly), ())


def test_relative_paths_follow_the_task_file(corpus: Path, tmp_path: Path) -> None:
    write_tasks(corpus, task_entry())
    moved = tmp_path / "elsewhere" / "corpus-moved"
    moved.parent.mkdir()
    shutil.move(corpus, moved)
    (spec,) = load_task_file(moved / "tasks.yaml")
    assert spec.repo_location == moved / "repo"
    snapshot = capture_oracle(spec.oracle, task_file_dir=spec.task_dir)
    assert snapshot.files[0].data == ORACLE_BYTES


def test_home_relative_repo_is_expanded(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(corpus))
    (spec,) = load_task_file(write_tasks(corpus, task_entry(repo="~/repo")))
    assert spec.repo_location == corpus / "repo"


# ── oracle snapshot, staging and tamper checks ─────────────────────────────


def snapshot_of(corpus: Path, *targets: str) -> OracleSnapshot:
    files = tuple(OracleFileSpec(source=ORACLE_SOURCE, target=t) for t in targets or ("t1_oracle_test.py",))
    return capture_oracle(OracleSpec(command="python3 run.py", files=files), task_file_dir=corpus)


def test_snapshot_digests(corpus: Path) -> None:
    snap = snapshot_of(corpus, "a.py", "sub/b.py")
    again = snapshot_of(corpus, "a.py", "sub/b.py")
    assert (snap.digest, snap.command_digest, snap.manifest_digest) == (
        again.digest,
        again.command_digest,
        again.manifest_digest,
    )
    assert snap.manifest()[1] == {
        "target": "sub/b.py",
        "sha256": snap.files[1].sha256,
        "size": len(ORACLE_BYTES),
    }
    renamed = snapshot_of(corpus, "a.py", "sub/c.py")
    assert renamed.digest != snap.digest and renamed.manifest_digest != snap.manifest_digest
    assert renamed.command_digest == snap.command_digest
    other_command = OracleSnapshot(command="python3 other.py", files=snap.files)
    assert other_command.digest != snap.digest and other_command.manifest_digest == snap.manifest_digest


def test_snapshot_is_taken_once(corpus: Path) -> None:
    snap = snapshot_of(corpus)
    (corpus / ORACLE_SOURCE).write_bytes(b"changed after capture\n")
    assert snap.files[0].data == ORACLE_BYTES


def test_capture_detects_a_file_changing_during_the_read(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = corpus / ORACLE_SOURCE
    real_read = os.read
    calls = {"n": 0}

    def read_then_grow(fd: int, n: int) -> bytes:
        calls["n"] += 1
        if calls["n"] == 1:
            with source.open("ab") as handle:
                handle.write(b"# appended concurrently\n")
        return real_read(fd, n)

    monkeypatch.setattr(oracles.os, "read", read_then_grow)
    with pytest.raises(OracleCaptureError, match="changed while it was read"):
        snapshot_of(corpus)


def test_stage_and_verify_round_trip(corpus: Path, tmp_path: Path) -> None:
    snap = snapshot_of(corpus, "a_oracle_test.py", "nested/dir/b.py")
    dest = tmp_path / "stage"
    stage_oracle(snap, dest)
    assert (dest / "nested/dir/b.py").read_bytes() == ORACLE_BYTES
    assert stat.S_IMODE((dest / "a_oracle_test.py").stat().st_mode) == 0o444
    # Writable beside the files for the one run (sticky: a run removes only what it created).
    assert stat.S_IMODE((dest / "nested/dir").stat().st_mode) == stat.S_IMODE(dest.stat().st_mode) == 0o1777
    if os.geteuid() == 0:  # given to a uid the sandbox does not map: it cannot chmod or replace them
        owners = {p.stat().st_uid for p in (dest, dest / "nested", dest / "a_oracle_test.py")}
        assert owners == {STAGED_OWNER_UID}
    verify_staged(snap, dest)
    shutil.rmtree(dest)  # the cell's cleanup must work on these modes


def test_files_a_run_adds_beside_the_oracle_are_allowed_and_never_followed(
    corpus: Path, tmp_path: Path
) -> None:
    snap = snapshot_of(corpus, "a_oracle_test.py", "nested/dir/b.py")
    dest = tmp_path / "stage"
    stage_oracle(snap, dest)
    (dest / "vitest.config.mts.timestamp-1-ab.mjs").write_text("export default {}\n")  # vite
    (dest / "nested" / "__pycache__").mkdir()
    (dest / "nested" / "dir" / ".pytest_cache").symlink_to("/etc")  # never followed
    (dest / "nested" / "dir" / "planted").mkdir()
    (dest / "nested" / "dir" / "planted" / "x").write_text("x")
    verify_staged(snap, dest)


def test_stage_refuses_a_populated_destination(corpus: Path, tmp_path: Path) -> None:
    dest = tmp_path / "stage"
    dest.mkdir()
    (dest / "planted.py").write_text("x")
    with pytest.raises(OracleStageError, match="not empty"):
        stage_oracle(snapshot_of(corpus), dest)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "empty", target_is_directory=True)
    with pytest.raises(OracleStageError, match="not a directory"):
        stage_oracle(snapshot_of(corpus), link)


def _modify(dest: Path) -> None:
    target = dest / "t1_oracle_test.py"
    target.chmod(0o600)
    target.write_bytes(b"def test_always_passes(): pass\n")
    target.chmod(0o400)


def _replace_parent(dest: Path) -> None:
    shutil.rmtree(dest / "nested")
    (dest / "nested").symlink_to(dest.parent)


def _remove(dest: Path) -> None:
    (dest / "t1_oracle_test.py").unlink()


def _chmod(dest: Path) -> None:
    (dest / "t1_oracle_test.py").chmod(0o644)


def _swap_for_symlink(dest: Path) -> None:
    target = dest / "t1_oracle_test.py"
    copy = dest.parent / "copy.py"
    copy.write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(copy)


@pytest.mark.parametrize("tamper", [_modify, _replace_parent, _remove, _chmod, _swap_for_symlink])
def test_verify_staged_detects_tampering(corpus: Path, tmp_path: Path, tamper) -> None:
    snap = snapshot_of(corpus, "t1_oracle_test.py", "nested/dir/b.py")
    dest = tmp_path / "stage"
    stage_oracle(snap, dest)
    tamper(dest)
    with pytest.raises(OracleTamperError) as caught:
        verify_staged(snap, dest)
    assert "unittest" not in str(caught.value)  # never quotes oracle bytes


def test_a_probe_file_runs_beside_the_tasks_and_holds_only_distinct_impossible_tasks(corpus: Path) -> None:
    from workflow_bench.taskspec.spec import load_task_files

    tasks = write_tasks(corpus, task_entry())
    probes = write_tasks(corpus, task_entry(id="p1", impossible=True), name="probes.yaml")
    assert [(s.task_id, s.impossible) for s in load_task_files(tasks, probes)] == [
        ("t1", False),
        ("p1", True),
    ]
    assert [s.task_id for s in load_task_files(tasks)] == ["t1"]
    # negative controls: an ordinary task, or one whose id the task file has, is refused, named
    bad = write_tasks(corpus, task_entry(id="p2"), task_entry(impossible=True), name="bad.yaml")
    with pytest.raises(TaskFileError) as caught:
        load_task_files(tasks, bad)
    assert [(e.task_id, e.key) for e in caught.value.errors] == [("p2", "impossible"), ("t1", "id")]
    assert "bad.yaml: task 'p2': impossible: a probe file holds only impossible tasks" in str(caught.value)
