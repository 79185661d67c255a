"""Bad input through runner.main(): exit 2, a message naming file, task and key, nothing run.

"Nothing run" is checked three ways: the output directory is never created,
no cell clone directory appears, and no session ever reaches a provider
(argument checks happen before the scripted provider starts).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from workflow_bench import runner

from .conftest import REPO_ROOT, recorded_tempdirs

pytestmark = pytest.mark.e2e
BUNDLE = REPO_ROOT / "workflow_bench" / "corpus" / "demo-target.bundle"
ORACLE = REPO_ROOT / "workflow_bench" / "corpus" / "oracles" / "trivial-amount-grouping.oracle_test.py"


def _task(**overrides):
    task = {
        "id": "t1",
        "class": "trivial",
        "repo": str(BUNDLE),
        "ref": "HEAD",
        "prompt": "do it",
        "verify": "true",
        "oracle": {"command": "true", "files": [{"source": "oracle.py", "target": "oracle.py"}]},
    }
    task.update(overrides)
    return {k: v for k, v in task.items() if v is not None}


def _drop(key):
    return {key: None}


CASES = {
    "missing-key": ([_task(**_drop("verify"))], "t1", "verify"),
    "wrong-type": ([_task(expensive="yes")], "t1", "expensive"),
    "unknown-key": ([_task(timeout=5)], "t1", "timeout"),
    "duplicate-id": ([_task(), _task()], "t1", "id"),
    "bad-id": ([_task(id="-bad id")], "-bad id", "id"),
    "oracle-missing": (
        [_task(oracle={"command": "true", "files": [{"source": "nope.py", "target": "o.py"}]})],
        "t1",
        "oracle.files[0].source",
    ),
    "oracle-symlink": (
        [_task(oracle={"command": "true", "files": [{"source": "link.py", "target": "o.py"}]})],
        "t1",
        "oracle.files[0].source",
    ),
    "oracle-outside": (
        [_task(oracle={"command": "true", "files": [{"source": "../outside.py", "target": "o.py"}]})],
        "t1",
        "oracle.files[0].source",
    ),
    "dotdot-target": (
        [_task(oracle={"command": "true", "files": [{"source": "oracle.py", "target": "../o.py"}]})],
        "t1",
        "oracle.files[0].target",
    ),
    "unknown-ref": ([_task(ref="no-such-branch")], "t1", "ref"),
    "not-a-repo": ([_task(repo="not-a-repo")], "t1", "repo"),
    "empty-prompt": ([_task(prompt="   ")], "t1", "prompt"),
}


def _write_corpus(tmp_path: Path, tasks) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "oracle.py").write_text(ORACLE.read_text())
    (tmp_path / "outside.py").write_text("x = 1\n")
    (folder / "link.py").symlink_to(folder / "oracle.py")
    (folder / "not-a-repo").mkdir()
    path = folder / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    return path


@pytest.fixture(autouse=True)
def _private_tmp(private_tmpdir):
    return private_tmpdir


def _run(argv, capsys):
    with recorded_tempdirs() as made:
        code = runner.main(argv)
    created = [p for p in made if p.exists()]  # anything the runner made and left behind
    return code, capsys.readouterr().err, created


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_task_file_exits_2_and_runs_nothing(case, tmp_path, capsys):
    tasks, task_id, key = CASES[case]
    path = _write_corpus(tmp_path, tasks)
    out = tmp_path / "out"
    code, err, created = _run(["--tasks", str(path), "--provider", "scripted", "--out", str(out)], capsys)
    assert code == 2, err
    assert str(path) in err and f"'{task_id}'" in err and f"{key}:" in err, err
    assert not out.exists() and not created


def test_a_probe_file_with_an_ordinary_task_exits_2_and_runs_nothing(tmp_path, capsys):
    path = _write_corpus(tmp_path, [_task()])
    probes = path.with_name("probes.yaml")
    probes.write_text(yaml.safe_dump({"tasks": [_task(id="p1"), _task(impossible=True)]}))
    out = tmp_path / "out"
    argv = ["--tasks", str(path), "--probes", str(probes), "--provider", "scripted", "--out", str(out)]
    code, err, created = _run(argv, capsys)
    assert code == 2, err
    assert f"{probes}: task 'p1': impossible:" in err and f"{probes}: task 't1': id:" in err, err
    assert not out.exists() and not created


def test_yaml_syntax_error(tmp_path, capsys):
    path = tmp_path / "tasks.yaml"
    path.write_text("tasks:\n  - id: [unclosed\n")
    code, err, _ = _run(
        ["--tasks", str(path), "--provider", "scripted", "--out", str(tmp_path / "out")], capsys
    )
    assert code == 2 and str(path) in err and "yaml" in err.lower()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("byte", [b"\x00", b"\x01", b"\x7f"], ids=["nul", "soh", "del"])
def test_a_control_byte_inside_the_yaml_exits_2_naming_the_file_and_position(byte, tmp_path, capsys):
    # PyYAML's reader refused these with a ReaderError traceback and exit 1 before the fix.
    path = tmp_path / "tasks.yaml"
    path.write_bytes(b"tasks:\n  - id: a" + byte + b"b\n")
    code, err, _ = _run(
        ["--tasks", str(path), "--provider", "scripted", "--out", str(tmp_path / "out")], capsys
    )
    assert code == 2, err
    assert f"{path}: <top level>: (yaml): line 2, column 10:" in err and "is not allowed" in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_every_defect_is_reported_at_once(tmp_path, capsys):
    path = _write_corpus(tmp_path, [_task(expensive="yes", timeout=5)])
    code, err, _ = _run(
        ["--tasks", str(path), "--provider", "scripted", "--out", str(tmp_path / "o")], capsys
    )
    assert code == 2 and "expensive:" in err and "timeout:" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--arms", "nope"],
        ["--workers", "9"],
        ["--runs", "0"],
        ["--arms", "baseline", "baseline"],
        ["--base-url", "http://127.0.0.1:1"],
        ["--candidate-origin", "model-proposer"],
    ],
    ids=[
        "unknown-arm",
        "too-many-workers",
        "zero-runs",
        "duplicate-arm",
        "scripted-with-base-url",
        "origin-without-overlay",
    ],
)
def test_bad_arguments_exit_2(argv, tmp_path, capsys):
    path = _write_corpus(tmp_path, [_task()])
    out = tmp_path / "out"
    try:
        code = runner.main(["--tasks", str(path), "--provider", "scripted", "--out", str(out), *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    assert not out.exists()


def test_existing_output_dir_is_refused(tmp_path, capsys, bwrap_bin, claude_bin):
    path = _write_corpus(tmp_path, [_task()])
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text("{}\n")
    code, err, created = _run(["--tasks", str(path), "--provider", "scripted", "--out", str(out)], capsys)
    assert code == 2 and "already exists" in err and not created
    assert (out / "results.jsonl").read_text() == "{}\n"


@pytest.mark.parametrize("where", ["under-a-file", "under-proc"])
def test_out_that_cannot_be_created_exits_2(where, tmp_path, capsys, bwrap_bin, claude_bin):
    path = _write_corpus(tmp_path, [_task()])
    out = path / "out" if where == "under-a-file" else Path("/proc/wfbench-out")
    code, err, created = _run(["--tasks", str(path), "--provider", "scripted", "--out", str(out)], capsys)
    assert code == 2 and f"--out {out}" in err and "Traceback" not in err, err
    assert not created and not out.exists()


def test_fake_cli_printing_the_pinned_version_is_refused(tmp_path, capsys, bwrap_bin):
    from workflow_bench.claude_cli import PINNED_CLAUDE_CODE_VERSION

    fake = tmp_path / "claude"
    fake.write_text(f"#!/bin/sh\necho '{PINNED_CLAUDE_CODE_VERSION} (Claude Code)'\n")
    fake.chmod(0o755)
    path = _write_corpus(tmp_path, [_task()])
    out = tmp_path / "out"
    code, err, created = _run(
        ["--tasks", str(path), "--provider", "scripted", "--claude-bin", str(fake), "--out", str(out)], capsys
    )
    assert code == 2 and "not the pinned Claude Code" in err and "sha256" in err, err
    assert not out.exists() and not created


def test_anthropic_provider_without_credentials(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WORKFLOW_BENCH_ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("WORKFLOW_BENCH_AUTH_TOKEN", raising=False)
    path = _write_corpus(tmp_path, [_task()])
    code, err, _ = _run(["--tasks", str(path), "--model", "m", "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and "--anthropic-api-key" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--scheduler", "waves", "--window", "4"],
        ["--workers", "3", "--window", "2"],
        ["--scheduler", "waves", "--order", "longest-first"],
        ["--max-cost-usd", "0"],
        ["--max-runtime", "-5"],
        ["--max-cost-usd", "nan"],
        ["--executor", "ray", "--ray-address", "ray://127.0.0.1:10001"],
    ],
    ids=["window-with-waves", "window-below-workers", "longest-first-with-waves", "zero-cost",
         "negative-runtime", "nan-cost", "ray-address-not-host-port"],
)  # fmt: skip
def test_bad_schedule_arguments_exit_2(argv, tmp_path, capsys):
    path = _write_corpus(tmp_path, [_task()])
    out = tmp_path / "out"
    try:
        code = runner.main(["--tasks", str(path), "--provider", "scripted", "--out", str(out), *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    assert not out.exists()


def test_ray_address_where_nothing_answers_exits_2_within_seconds(
    tmp_path, capsys, bwrap_bin, claude_bin, ray_bin
):
    """Without the check, ray.init kept retrying a closed port for minutes (measured: > 200 s)."""
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = _write_corpus(tmp_path, [_task()])
    out = tmp_path / "out"
    started = time.monotonic()
    code, err, created = _run(
        ["--tasks", str(path), "--provider", "scripted", "--out", str(out), "--executor", "ray",
         "--ray-address", f"127.0.0.1:{port}"],
        capsys,
    )  # fmt: skip
    assert code == 2 and f"--ray-address 127.0.0.1:{port}" in err and "nothing was run" in err, err
    assert time.monotonic() - started < 30
    assert not out.exists() and not created
