"""The shipped real-world corpus, built from its recipe, swept by the sanity agents; ``tasks new``
on one of its two-commit release repositories.

- ``tasks build-corpus`` (the shipped recipe: parse 1.22.3->1.22.4 with pytest, zod
  4.6.5->4.6.6 with vitest + tsc and ``node_modules`` from a lockfile, process-warning
  5.0.0->5.1.0 with ``node --test`` on node 22) writes every task, self-checked; the releases,
  the wheels, the ``node_modules`` tree and node 22 are fetched once into the cache (later runs
  are offline).
  Each task is written with the framework, mounts and runtime the recipe promises, and locked.
- The oracle agent resolves every (task, default arm) cell, the no-op agent none; no cell of
  either is skill-not-invoked.
- ``tasks new`` from the parse repository's two commits (base release, fix release), through the
  CLI with no option beyond where to write: it writes a task that ``tasks check`` passes, and
  its entry is the corpus's parse task (the one the sweeps resolve) but for the prompt.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.builders import agent_sweep
from tests.conftest import short_dir
from workflow_bench.arms import DEFAULT_ARMS
from workflow_bench.tasks.__main__ import main as tasks_main

pytestmark = pytest.mark.e2e
TASK_IDS = ("parse-datetime-fields", "zod-size-bound-first", "process-warning-spy")


@pytest.fixture(scope="module")
def realworld(tmp_path_factory, bwrap_bin) -> Iterator[Path]:
    """The corpus built into a fresh directory (the downloads come from the shared cache)."""
    out = tmp_path_factory.mktemp("realworld") / "corpus"
    with short_dir() as tmpdir, pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmpdir))
        code = tasks_main(["build-corpus", "--out", str(out), "--repeats", "1"])
        assert code == 0
        yield out


def test_the_corpus_is_written_with_its_frameworks_mounts_and_runtime(realworld):
    tasks = yaml.safe_load((realworld / "tasks.yaml").read_text())["tasks"]
    assert [t["id"] for t in tasks] == list(TASK_IDS)
    by_id = {t["id"]: t for t in tasks}
    # The frameworks the recipe promises, and the mounts and runtime the tasks need.
    assert "$WORKFLOW_BENCH_PYTEST" in by_id["parse-datetime-fields"]["oracle"]["command"]
    zod = by_id["zod-size-bound-first"]
    assert "vitest" in zod["oracle"]["command"] and "tsc" in zod["verify"]
    assert {"source": ".wfbench-node/node_modules", "target": "node_modules"} in zod["sandbox_dependencies"]
    spy = by_id["process-warning-spy"]
    assert "--test" in spy["oracle"]["command"] and spy["runtimes"] == {"node": "22.23.5"}
    # build-corpus self-checked each task as it wrote it: its lock holds every task's expected tests.
    assert set(json.loads((realworld / "tasks.lock.json").read_text())["tasks"]) == set(TASK_IDS)


def _sweep(agent: str, tasks: Path, tmp_path: Path, capsys) -> list[dict]:
    code, rows = agent_sweep(tasks, agent, tmp_path, "--include-expensive", "--workers", "2")
    assert code == 0, capsys.readouterr().err  # no arm UNUSABLE, no cell skill-not-invoked
    return rows


def test_oracle_agent_resolves_every_default_arm_cell_and_noop_agent_none(
    realworld, tmp_path, capsys, claude_bin, private_tmpdir
):
    tasks = realworld / "tasks.yaml"
    cells = sorted((task, arm) for task in TASK_IDS for arm in DEFAULT_ARMS)
    solved = _sweep("oracle", tasks, tmp_path, capsys)
    assert sorted((r["task"], r["arm"]) for r in solved) == cells
    for row in solved:
        assert row["resolved"] is True, (row["task"], row["arm"], row["error_kind"], row["error_detail"])
        assert row["skill_invoked"] is (None if row["arm"] == "baseline" else True), row["arm"]
    runtimes = {r["task"]: r["task_runtimes"] for r in solved}
    assert runtimes["process-warning-spy"] and "22.23.5" in str(runtimes["process-warning-spy"])
    untouched = _sweep("noop", tasks, tmp_path, capsys)
    assert sorted((r["task"], r["arm"]) for r in untouched) == cells
    for row in untouched:
        assert row["resolved"] is False and row["oracle_passed"] is False, (row["task"], row["arm"])
        assert row["error_kind"] in ("verify-failed", "oracle-failed"), (row["task"], row["error_detail"])
        assert row["skill_invoked"] is (None if row["arm"] == "baseline" else True), row["arm"]


def test_tasks_new_from_a_two_commit_release_repository(realworld, tmp_path, capsys, private_tmpdir):
    repo = realworld / "repos" / "parse-datetime-fields"
    tasks = tmp_path / "mine" / "tasks.yaml"
    tasks.parent.mkdir()
    argv = ["new", "--repo", str(repo), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)]
    prompt = ["--prompt", "Parsing a datetime field loses its value.\n"]  # the placeholder is refused
    code = tasks_main([*argv, *prompt, "--id", "parse-fix", "--class", "investigation-bug", "--repeats", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    # It says what it decided and why (framework, oracle files, verify, dependencies).
    assert "[new] " in out and "pytest" in out and f"[new] wrote task 'parse-fix' to {tasks}" in out
    code = tasks_main(["check", "--tasks", str(tasks), "--frozen", "--repeats", "1"])
    checked = capsys.readouterr().out
    assert code == 0, checked
    assert "parse-fix " in checked and "discriminates" in checked
    (mine,) = yaml.safe_load(tasks.read_text())["tasks"]
    corpus = {t["id"]: t for t in yaml.safe_load((realworld / "tasks.yaml").read_text())["tasks"]}
    theirs = corpus["parse-datetime-fields"]
    # The same task as the one the sweeps resolve: same start, same judges, same oracle bytes and
    # reference patch; only where its files live, its id and its prompt (from the template) differ.
    assert mine["ref"] == theirs["ref"] and mine["verify"] == theirs["verify"]
    assert mine["oracle"]["command"] == theirs["oracle"]["command"]
    assert mine["sandbox_dependencies"] == theirs["sandbox_dependencies"]
    assert [f["target"] for f in mine["oracle"]["files"]] == [f["target"] for f in theirs["oracle"]["files"]]
    for a, b in zip(mine["oracle"]["files"], theirs["oracle"]["files"], strict=True):
        assert (tasks.parent / a["source"]).read_bytes() == (realworld / b["source"]).read_bytes()
    assert (tasks.parent / mine["reference_patch"]).read_bytes() == (
        realworld / theirs["reference_patch"]
    ).read_bytes()
    assert mine["prompt"] != theirs["prompt"] and "1.22.4" not in mine["prompt"]
    # A second run refuses the id it took (exit 2), and nothing changes.
    before = {p: p.read_bytes() for p in tasks.parent.rglob("*") if p.is_file()}
    assert tasks_main([*argv, *prompt, "--id", "parse-fix", "--repeats", "1"]) == 2
    assert "exists already" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in tasks.parent.rglob("*") if p.is_file()} == before
