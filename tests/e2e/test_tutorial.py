"""docs/tutorial.md, run: every ``sh`` block, in order, as a new user would type it.

Each block runs in bash (``set -euo pipefail``) in one scratch directory, with the checkout's
``workflow-bench`` console script first on PATH and a private HOME; nothing of the harness is
stubbed (real ``tasks new``, real CLI, real bubblewrap; the scripted agents are the tutorial's
own). Two blocks cannot run as typed: the viewer, which serves until stopped (started, asked
for its page, stopped), and the real-model sweep, which has no key here (run with ``--dry-run``,
as the page says). The sweeps' rows are then checked: the oracle agent resolves every cell, the
no-op agent none.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from workflow_bench.claude_cli import default_cache_dir

pytestmark = pytest.mark.e2e

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)
_SERVING = re.compile(r"(http://127\.0\.0\.1:\d+/)")


def tutorial_blocks() -> list[str]:
    return _BLOCK.findall(TUTORIAL.read_text(encoding="utf-8"))


def _environment(work: Path, tmpdir: Path) -> dict[str, str]:
    home = work / "home"
    home.mkdir(exist_ok=True)
    identity = {
        f"GIT_{who}_{what}": value
        for who in ("AUTHOR", "COMMITTER")
        for what, value in (("NAME", "you"), ("EMAIL", "you@example.invalid"))
    }
    return {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(home),
        "TMPDIR": str(tmpdir),
        "WORKFLOW_BENCH_CACHE": str(default_cache_dir()),  # the CLI and test frameworks ./dev installed
        "LANG": "C.UTF-8",
        **identity,
    }


def _run(block: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{block}"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, (
        f"tutorial block failed ({done.returncode}):\n{block}\n{done.stdout}\n{done.stderr}"
    )
    return done


def _serve_once(block: str, work: Path, env: dict[str, str]) -> str:
    server = subprocess.Popen(
        ["bash", "-c", f"exec {block.strip()}"], cwd=work, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = _SERVING.search(line)
        assert match, f"the viewer printed no address: {line!r}"
        with urllib.request.urlopen(match.group(1), timeout=30) as page:
            assert page.status == 200
            return page.read().decode("utf-8", "replace")
    finally:
        server.terminate()
        server.wait(timeout=30)


def _rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


def test_the_tutorial_runs_as_written(tmp_path, short_tmpdir):
    blocks = tutorial_blocks()
    assert len(blocks) >= 6, "the tutorial lost its commands"
    work = tmp_path / "scratch"
    work.mkdir()
    env = _environment(work, short_tmpdir)
    for block in blocks:
        if block.lstrip().startswith("workflow-bench view "):
            assert "<title>workflow-bench cells</title>" in _serve_once(block, work, env)
        elif "WORKFLOW_BENCH_ANTHROPIC_API_KEY" in block:
            dry = re.sub(r"^(workflow-bench run .*)$", r"\1 --dry-run", block, flags=re.M)
            assert dry != block
            assert "9 cells: 1 tasks × 3 runs × 3 arms" in _run(dry, work, env).stdout
            assert not (work / "results" / "sonnet").exists()  # a dry run writes nothing
        else:
            _run(block, work, env)
    oracle, noop = _rows(work / "results" / "oracle"), _rows(work / "results" / "noop")
    assert {row["arm"] for row in oracle} == {"workflow", "workflow_direct", "baseline"}
    assert all(row["resolved"] is True for row in oracle), [row["error_kind"] for row in oracle]
    assert noop and not any(row["resolved"] for row in noop)
    assert (work / "results" / "noop" / "report.md").is_file()
