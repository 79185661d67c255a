"""Inputs that used to exhaust memory, hang or fail only after the model ran: exit 2, bounded.

Each case runs the real runner in a subprocess under a 1 GiB address-space limit and a 60 s
timeout, with a private TMPDIR: exit 2, the file and key named, no output directory and no
cell directory created.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
BUNDLE = REPO_ROOT / "workflow_bench" / "corpus" / "demo-target.bundle"
ORACLE = REPO_ROOT / "workflow_bench" / "corpus" / "oracles" / "trivial-amount-grouping.oracle_test.py"
MEMORY_LIMIT_BYTES = 1024**3
TIMEOUT_S = 60
BOMB_LINES = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)
]


def _task(**overrides):
    task = {
        "id": "t1",
        "class": "trivial",
        "repo": str(BUNDLE),
        "prompt": "do it",
        "verify": "true",
        "oracle": {"command": "true", "files": [{"source": "oracle.py", "target": "oracle.py"}]},
    }
    task.update(overrides)
    return task


def _tasks_file(tmp_path: Path, tasks) -> Path:
    (tmp_path / "oracle.py").write_text(ORACLE.read_text())
    path = tmp_path / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    return path


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def _run(tmp_path: Path, private_tmp: Path, argv: list[str]) -> tuple[int, str, Path]:
    # private_tmp is the short private_tmpdir fixture: a TMPDIR under tmp_path grows with the test
    # name (and with pytest-xdist's worker directory) past what the cells' AF_UNIX sockets allow.
    out = tmp_path / "out"
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    proc = subprocess.run(
        [sys.executable, "-m", "workflow_bench.runner", "--provider", "scripted", "--out", str(out), *argv],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        preexec_fn=_limits,
    )
    assert not out.exists(), "nothing may be created on bad input"
    assert not any(private_tmp.iterdir()), "no cell directory on bad input"
    return proc.returncode, proc.stderr, out


def _bomb_task_file(tmp_path: Path) -> Path:
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(BOMB_LINES) + "\ntasks: [*i]\n")
    assert path.stat().st_size < 700
    return path


def test_alias_bomb_task_file(tmp_path, private_tmpdir):
    path = _bomb_task_file(tmp_path)
    code, err, _ = _run(tmp_path, private_tmpdir, ["--tasks", str(path)])
    assert code == 2 and str(path) in err and "(yaml)" in err and "alias" in err, err
    assert len(err) < 2000, "the error message must not expand the bomb"


def test_alias_bomb_script(tmp_path, private_tmpdir):
    script = tmp_path / "script.yaml"
    script.write_text("\n".join(BOMB_LINES) + "\nschema_version: 1\nmodel: m\ncells: *i\n")
    code, err, _ = _run(
        tmp_path, private_tmpdir, ["--tasks", str(_tasks_file(tmp_path, [_task()])), "--script", str(script)]
    )
    assert code == 2 and str(script) in err and "alias" in err and len(err) < 2000, err


def test_duplicate_key_in_script(tmp_path, private_tmpdir):
    script = tmp_path / "script.yaml"
    script.write_text("schema_version: 1\nmodel: m\nmodel: n\ncells: []\n")
    code, err, _ = _run(
        tmp_path, private_tmpdir, ["--tasks", str(_tasks_file(tmp_path, [_task()])), "--script", str(script)]
    )
    assert code == 2 and str(script) in err and "duplicate key 'model'" in err, err


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "oversize"])
def test_task_file_that_is_not_a_small_regular_file(kind, tmp_path, private_tmpdir):
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        path = tmp_path / "tasks.fifo"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path
    else:
        path = tmp_path / "big.yaml"
        path.write_text("# " + "x" * (4 * 1024 * 1024) + "\n")
    code, err, _ = _run(tmp_path, private_tmpdir, ["--tasks", str(path)])
    assert code == 2 and str(path) in err and "(file)" in err, err


@pytest.mark.parametrize(
    ("key", "value", "limit"),
    [
        ("verify", "true " + "#" * 200_000, "65536"),
        ("setup", "true " + "#" * 200_000, "65536"),
        ("prompt", "p" * (300 * 1024), "262144"),
    ],
)
def test_commands_and_prompt_over_their_caps(key, value, limit, tmp_path, private_tmpdir):
    path = _tasks_file(tmp_path, [_task(**{key: value})])
    code, err, _ = _run(tmp_path, private_tmpdir, ["--tasks", str(path)])
    assert code == 2 and str(path) in err and "task 't1'" in err and f"{key}:" in err and limit in err, err


@pytest.mark.parametrize(
    "flag",
    [
        ["--runs", "10000000"],
        ["--runs", "101"],
        ["--timeout", "86401"],
        ["--verify-timeout", "999999999"],
        ["--max-retries", "21"],
        ["--outage-streak", "1001"],
        ["--workers", "9"],
    ],
    ids=lambda f: f"{f[0]}={f[1]}",
)
def test_numeric_flags_have_upper_bounds(flag, tmp_path, private_tmpdir):
    code, err, _ = _run(tmp_path, private_tmpdir, ["--tasks", str(_tasks_file(tmp_path, [_task()])), *flag])
    assert code == 2 and flag[0] in err and "must be between" in err, err
