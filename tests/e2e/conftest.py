"""E2E helpers: task files carved out of the demo corpus, and output-directory scans."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_TASKS = REPO_ROOT / "tasks.scenarios.yaml"


@contextlib.contextmanager
def recorded_tempdirs() -> Iterator[list[Path]]:
    """Every directory made with `tempfile.mkdtemp` while the block runs, in creation order.

    A test asks whether *these* still exist instead of globbing the shared /tmp, where other
    sweeps on this machine create wfbench-* directories at any moment. The paths themselves are
    unchanged (each cell's relay socket lives below them and AF_UNIX paths are short).
    """
    made: list[Path] = []
    real = tempfile.mkdtemp

    def record(*args, **kwargs):
        path = real(*args, **kwargs)
        made.append(Path(path))
        return path

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "mkdtemp", record)
        yield made


def left_behind(made: list[Path], prefix: str = "wfbench-") -> list[Path]:
    return [p for p in made if p.name.startswith(prefix) and p.exists()]


@pytest.fixture
def private_tmpdir(short_tmpdir, monkeypatch) -> Path:
    """A private, empty, short TMPDIR for the runner (never glob the shared /tmp: others run sweeps)."""
    monkeypatch.setattr(tempfile, "tempdir", str(short_tmpdir))
    return short_tmpdir


@pytest.fixture
def task_file_for(tmp_path):
    """Write a task file holding the named demo tasks, with its oracles copied beside it."""

    def make(*task_ids: str, **overrides) -> Path:
        corpus = yaml.safe_load(DEMO_TASKS.read_text())
        folder = tmp_path / "corpus"
        (folder / "oracles").mkdir(parents=True, exist_ok=True)
        tasks = []
        for task in corpus["tasks"]:
            if task["id"] not in task_ids:
                continue
            task = {**task, "repo": str((REPO_ROOT / task["repo"]).resolve()), **overrides}
            if "reference_patch" in task:
                source = REPO_ROOT / task["reference_patch"]
                (folder / "reference").mkdir(exist_ok=True)
                shutil.copy(source, folder / "reference" / source.name)
                task["reference_patch"] = f"reference/{source.name}"
            for entry in task["oracle"]["files"]:
                source = REPO_ROOT / entry["source"]
                shutil.copy(source, folder / "oracles" / source.name)
                entry["source"] = f"oracles/{source.name}"
            tasks.append(task)
        path = folder / "tasks.yaml"
        path.write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
        return path

    return make


def tool_results(transcript: bytes) -> str:
    """Only what tools returned to the agent (not the commands it sent, which quote their own patterns)."""
    outputs = []
    for line in transcript.decode().splitlines():
        event = json.loads(line)
        if event.get("type") != "user":
            continue
        for block in event.get("message", {}).get("content", []):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                outputs.append(json.dumps(block.get("content")))
    return "\n".join(outputs)


def output_bytes(out_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(out_dir.rglob("*")) if p.is_file())
