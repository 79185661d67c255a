"""A second toolkit with a real stdio MCP server (the official Python ``mcp`` SDK): the format is
not GitNexus-specific, servers run inside the cell's sandbox, and the arms get exactly their grants.

One offline sweep, real CLI + bwrap, the scripted model making the same MCP calls in every arm:
- ``baseline``: the read-only ``lookup`` is answered by the real server from the workspace; the
  mutating ``rename`` is refused by the CLI; the server's own attempts to write the workspace and
  to reach the network fail inside the sandbox (write jail, no network namespace);
- ``baseline_nomcp``: no server is configured, every ``mcp__`` call is refused, the seeded skills
  are masked and slash commands are off.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import mcp
import pytest
import yaml

from tests.builders import REFUSED, init_event, result_dicts, tool_results_by_name
from workflow_bench import runner
from workflow_bench.toolkit.manifest import CORPUS_TOOLKIT

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
MINI = Path(__file__).resolve().parent / "toolkits" / "mini"
SITE_PACKAGES = Path(mcp.__file__).resolve().parents[1]


def mini_toolkit(tmp_path: Path, *, index: bool = False) -> Path:
    """The ``mini`` toolkit: the demo skills plus the SDK server, the venv's packages mounted read-only.

    ``index=True`` adds its index step (``toolkits/mini/index.py``, output ``.mini-index``).
    """
    root = tmp_path / "mini-toolkit"
    shutil.copytree(CORPUS_TOOLKIT / "skills", root / "skills")
    manifest = {
        "name": "mini",
        "version": "0.1",
        "skills_root": "skills",
        "roles": {"plan": "plan", "work": "work", "review": "review"},
        "mcp_servers": [
            {
                "name": "mini",
                "command": "/usr/bin/python3",
                "args": ["/opt/mini/server.py"],
                "env": {"PYTHONPATH": "/opt/mini-site"},
                "read_only_tools": ["lookup", "try_write", "try_connect"],
                "mutating_tools": ["rename"],
            }
        ],
        "runtime_mounts": [
            {"source": str(MINI), "target": "/opt/mini"},
            {"source": str(SITE_PACKAGES), "target": "/opt/mini-site"},
        ],
    }
    if index:
        manifest["index"] = {
            "command": ["/usr/bin/python3", "/opt/mini/index.py"],
            "output": ".mini-index",
            "digest": {
                "volatile": ["built.json"],
                "command": ["/usr/bin/python3", "/opt/mini/index.py", "--dump"],
            },
        }
    (root / "toolkit.yaml").write_text(json.dumps(manifest, indent=2))  # JSON is YAML
    return root


def test_mini_toolkit_server_answers_in_baseline_and_is_absent_in_nomcp(
    task_file_for, tmp_path, bwrap_bin, claude_bin, capsys
):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    toolkit = mini_toolkit(tmp_path)
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(MINI / "script.yaml")]
    argv += ["--toolkit", str(toolkit), "--arms", "baseline", "baseline_nomcp", "--out", str(out)]
    code = runner.main(argv)
    console = capsys.readouterr().out
    assert code in (0, 1), console
    rows = {r["arm"]: r for r in result_dicts(out)}
    for row in rows.values():
        assert row["toolkit_name"] == "mini" and row["toolkit_version"] == "0.1"
        assert row["toolkit_digest"].startswith("sha256:") and row["index_digest"] is None
        assert row["error_kind"] != "infra-error", row["error_detail"]

    base = rows["baseline"]
    assert base["mcp_servers"] == ["mini"]
    transcript = out / base["transcript_artifacts"][0]["path"]
    servers = [(s.get("name"), s.get("status")) for s in init_event(transcript).get("mcp_servers") or []]
    assert servers == [("mini", "connected")], servers
    results = tool_results_by_name(transcript)
    assert results["mcp__mini__lookup"][0] is False, results
    assert "MINI-LOOKUP format_amount: ledger/money.py:18" in results["mcp__mini__lookup"][1], results
    # Refused by the CLI (never granted), not merely failing in the server's write jail.
    assert results["mcp__mini__rename"] == (True, REFUSED.format("mcp__mini__rename")), results
    assert "MINI-WRITE-REFUSED" in results["mcp__mini__try_write"][1], results
    assert "MINI-CONNECT-REFUSED" in results["mcp__mini__try_connect"][1], results
    assert results["Read"][0] is False and "# Plan" in results["Read"][1]  # the seeded skill is there
    assert base["tool_use_counts"]["mcp__mini__lookup"] == 1
    assert "MINI-LOOKUP format_amount" in console  # live progress shows MCP results
    patch = (out / base["patch_artifact"]).read_text() if base["patch_artifact"] else ""
    assert "MINI_WROTE" not in patch and "MINI_RENAMED" not in patch

    nomcp = rows["baseline_nomcp"]
    assert nomcp["mcp_servers"] == []
    transcript = out / nomcp["transcript_artifacts"][0]["path"]
    init = init_event(transcript)
    assert init.get("mcp_servers") == [], init
    assert init.get("slash_commands") == [], init.get("slash_commands")  # --disable-slash-commands
    results = tool_results_by_name(transcript)
    skill_read = results.pop("Read")
    assert skill_read[0] is True and "# Plan" not in skill_read[1], skill_read  # masked by an empty dir
    assert set(results) == {
        "mcp__mini__lookup",
        "mcp__mini__rename",
        "mcp__mini__try_write",
        "mcp__mini__try_connect",
    }
    for name, (is_error, text) in results.items():
        assert (is_error, text) == (True, REFUSED.format(name))


def test_index_is_built_once_per_commit_however_many_tasks_and_cells_share_it(
    task_file_for, tmp_path, bwrap_bin, claude_bin, capsys
):
    """The demo corpus's three default tasks start at one commit: one index build for all six cells.

    The third task also copies an untracked working-tree file (``sandbox_copy``), so it gets a
    template of its own: the index is copied into it, not built again.
    """
    repo = tmp_path / "repo"
    subprocess.run(
        ["git", "clone", "-q", str(REPO_ROOT / "workflow_bench/corpus/demo-target.bundle"), str(repo)]
    )
    (repo / "NOTES.txt").write_text("an untracked asset\n")
    tasks = task_file_for(
        "trivial-amount-grouping", "bug-negative-amounts", "feature-report-filter", repo=str(repo)
    )
    corpus = yaml.safe_load(tasks.read_text())
    corpus["tasks"][2]["sandbox_copy"] = ["NOTES.txt"]
    tasks.write_text(yaml.safe_dump(corpus, sort_keys=False))
    out = tmp_path / "out"
    argv = [
        "--tasks",
        str(tasks),
        "--provider",
        "scripted",
        "--toolkit",
        str(mini_toolkit(tmp_path, index=True)),
    ]
    code = runner.main([*argv, "--arms", "baseline", "baseline_nomcp", "--workers", "2", "--out", str(out)])
    console = capsys.readouterr().out
    assert code in (0, 1), console
    assert console.count("sanitized snapshot") == 2, console  # two templates ...
    assert console.count("index built: .mini-index") == 1, console  # ... one index build
    assert console.count("index reused from trivial-amount-grouping") == 1, console
    assert "index build FAILED" not in console
    rows = result_dicts(out)
    assert len(rows) == 6 and {r["task"] for r in rows} == {
        "trivial-amount-grouping", "bug-negative-amounts", "feature-report-filter",
    }  # fmt: skip
    assert all(r["error_kind"] != "infra-error" for r in rows), [r["error_detail"] for r in rows]
    digests = {r["index_digest"] for r in rows if r["arm"] == "baseline"}
    assert len(digests) == 1 and next(iter(digests)).startswith("sha256:"), digests
    assert {r["index_digest"] for r in rows if r["arm"] == "baseline_nomcp"} == {None}
