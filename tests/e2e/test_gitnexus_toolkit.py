"""The real GitNexus toolkit offline (``--toolkit gitnexus``, installed by ``./dev setup --gitnexus``).

One sweep on the real CLI in bwrap: the index is built once in the sandbox on the sanitized
template (digest in the rows), ``baseline`` calls ``impact``/``context``/``detect_changes`` and the
real ``gitnexus mcp`` answers from that index, ``rename`` is refused by the CLI; ``baseline_nomcp``
has no server and no index digest. A task repository that already holds ``.gitnexus/`` is refused.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from workflow_bench import runner
from workflow_bench.toolkit.manifest import load_toolkit

from .conftest import REPO_ROOT
from .test_mcp_toolkit import REFUSED, init_event, tool_results

pytestmark = pytest.mark.e2e
SCRIPT = REPO_ROOT / "tests" / "e2e" / "scripts" / "gitnexus.yaml"
READ_ONLY = ("mcp__gitnexus__impact", "mcp__gitnexus__context", "mcp__gitnexus__detect_changes")


def test_gitnexus_toolkit_answers_from_its_index(task_file_for, tmp_path, bwrap_bin, claude_bin, capsys):
    toolkit = load_toolkit("gitnexus")  # fails here (not skipped) when ./dev setup --gitnexus was not run
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(SCRIPT), "--toolkit", "gitnexus"]
    code = runner.main([*argv, "--arms", "baseline", "baseline_nomcp", "--out", str(out)])
    console = capsys.readouterr().out
    assert code in (0, 1), console
    assert console.count("index built: .gitnexus") == 1, console
    rows = {r["arm"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    base, nomcp = rows["baseline"], rows["baseline_nomcp"]
    for row in rows.values():
        assert row["error_kind"] != "infra-error", row["error_detail"]
        assert (row["toolkit_name"], row["toolkit_version"], row["toolkit_digest"]) == (
            "gitnexus", "1.6.12", toolkit.digest,
        )  # fmt: skip
    assert base["index_digest"].startswith("sha256:") and nomcp["index_digest"] is None
    assert base["mcp_servers"] == ["gitnexus"] and nomcp["mcp_servers"] == []

    transcript = out / base["transcript_artifacts"][0]["path"]
    servers = [(s.get("name"), s.get("status")) for s in init_event(transcript).get("mcp_servers") or []]
    assert servers == [("gitnexus", "connected")], servers
    results = tool_results(transcript)
    for name in READ_ONLY:
        assert results[name][0] is False, (name, results[name])
    assert "format_amount" in results["mcp__gitnexus__impact"][1], results["mcp__gitnexus__impact"]
    assert results["mcp__gitnexus__rename"] == (True, REFUSED.format("mcp__gitnexus__rename"))
    assert all(base["tool_use_counts"][name] == 1 for name in READ_ONLY), base["tool_use_counts"]

    results = tool_results(out / nomcp["transcript_artifacts"][0]["path"])
    for name, (is_error, text) in results.items():
        assert (is_error, text) == (True, REFUSED.format(name))


def test_task_repo_with_an_index_is_refused(task_file_for, tmp_path, bwrap_bin, claude_bin, capsys):
    repo = tmp_path / "repo"
    subprocess.run(
        ["git", "clone", "-q", str(REPO_ROOT / "workflow_bench/corpus/demo-target.bundle"), str(repo)],
        check=True,
    )
    (repo / ".gitnexus").mkdir()
    (repo / ".gitnexus" / "meta.json").write_text("{}")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "planted index"], check=True)
    tasks = task_file_for("trivial-amount-grouping", repo=str(repo), ref="HEAD")
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(SCRIPT), "--toolkit", "gitnexus"]
    runner.main([*argv, "--arms", "baseline", "--out", str(out)])
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["error_kind"] for r in rows] == ["infra-error"]
    assert "already contains .gitnexus/" in rows[0]["error_detail"]
