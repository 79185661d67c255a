"""The real GitNexus toolkit offline (``--toolkit gitnexus``, installed by ``./dev setup --gitnexus``).

One sweep on the real CLI in bwrap: the index is built once in the sandbox on the sanitized
template (digest in the rows), ``baseline`` calls ``impact``/``context``/``detect_changes`` and the
real ``gitnexus mcp`` answers from that index, ``rename`` is refused by the CLI; ``baseline_nomcp``
has no server and no index digest. A task repository whose commit already holds ``.gitnexus``
(a directory or a symlink) exits 2 at bind time, in the runner and in ``tasks check``.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.builders import REFUSED, init_event, result_dicts, tool_results_by_name
from workflow_bench import runner
from workflow_bench.tasks.__main__ import main as tasks_main
from workflow_bench.taskspec.index_guard import committed_index_problems
from workflow_bench.taskspec.spec import bind_tasks, load_task_file
from workflow_bench.toolkit.manifest import load_toolkit

from .conftest import REPO_ROOT, recorded_tempdirs

pytestmark = pytest.mark.e2e
SCRIPT = REPO_ROOT / "tests" / "e2e" / "scripts" / "gitnexus.yaml"
GRAPH_DEMO = REPO_ROOT / "workflow_bench" / "corpus" / "scripts" / "graph-demo.yaml"
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
    rows = {r["arm"]: r for r in result_dicts(out)}
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
    results = tool_results_by_name(transcript)
    for name in READ_ONLY:
        assert results[name][0] is False, (name, results[name])
    assert "format_amount" in results["mcp__gitnexus__impact"][1], results["mcp__gitnexus__impact"]
    assert results["mcp__gitnexus__rename"] == (True, REFUSED.format("mcp__gitnexus__rename"))
    assert all(base["tool_use_counts"][name] == 1 for name in READ_ONLY), base["tool_use_counts"]

    results = tool_results_by_name(out / nomcp["transcript_artifacts"][0]["path"])
    for name, (is_error, text) in results.items():
        assert (is_error, text) == (True, REFUSED.format(name))


def _repo_with_planted(tmp_path, planted: str):
    """A clone of the demo repo whose HEAD commits ``.gitnexus`` as a directory or as a symlink."""
    repo = tmp_path / "repo"
    subprocess.run(
        ["git", "clone", "-q", str(REPO_ROOT / "workflow_bench/corpus/demo-target.bundle"), str(repo)],
        check=True,
    )
    if planted == "dir":
        (repo / ".gitnexus").mkdir()
        (repo / ".gitnexus" / "meta.json").write_text("{}")
    else:
        (repo / ".gitnexus").symlink_to("/tmp")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "planted index"], check=True)
    return repo


@pytest.mark.parametrize("planted", ["dir", "symlink"])
def test_task_repo_with_an_index_exits_2_before_anything_runs(
    planted, task_file_for, tmp_path, private_tmpdir, capsys
):
    repo = _repo_with_planted(tmp_path, planted)
    tasks = task_file_for("trivial-amount-grouping", repo=str(repo), ref="HEAD")
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(SCRIPT), "--toolkit", "gitnexus"]
    with recorded_tempdirs() as made:
        code = runner.main([*argv, "--arms", "baseline", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{tasks}: task 'trivial-amount-grouping': ref:" in err and "already contains .gitnexus" in err, (
        err
    )
    assert not out.exists() and not [p for p in made if p.exists()]  # no output, no clone, no cell
    assert list(private_tmpdir.iterdir()) == []

    with recorded_tempdirs() as made:
        code = tasks_main(["check", "--tasks", str(tasks), "--toolkit", "gitnexus"])
    err = capsys.readouterr().err
    assert code == 2 and "task 'trivial-amount-grouping': ref:" in err and ".gitnexus" in err, err
    assert not [p for p in made if p.exists()]

    # Control: the same repository one commit earlier (no index) binds under the same toolkit.
    assert committed_index_problems(bind_tasks(load_task_file(tasks)), load_toolkit("gitnexus"))
    clean = task_file_for("trivial-amount-grouping", repo=str(repo), ref="HEAD~1")
    assert committed_index_problems(bind_tasks(load_task_file(clean)), load_toolkit("gitnexus")) == []
    assert committed_index_problems(bind_tasks(load_task_file(tasks)), load_toolkit("demo")) == []


def test_graph_demo_script_drives_the_real_graph_and_still_resolves(
    task_file_for, tmp_path, bwrap_bin, claude_bin, capsys
):
    """``./dev demo --toolkit gitnexus --script .../graph-demo.yaml``, kept short: one task, two arms."""
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    argv = [
        "--tasks",
        str(tasks),
        "--provider",
        "scripted",
        "--script",
        str(GRAPH_DEMO),
        "--toolkit",
        "gitnexus",
    ]
    code = runner.main([*argv, "--arms", "workflow", "baseline_nomcp", "--runs", "1", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 0, console
    rows = {r["arm"]: r for r in result_dicts(out)}
    flow, nomcp = rows["workflow"], rows["baseline_nomcp"]
    assert flow["resolved"] is True and nomcp["resolved"] is True, (
        flow["error_detail"],
        nomcp["error_detail"],
    )
    assert flow["toolkit_name"] == "gitnexus" and flow["toolkit_version"] == "1.6.12"
    assert flow["index_digest"].startswith("sha256:") and flow["mcp_servers"] == ["gitnexus"]
    assert {k: v for k, v in flow["tool_use_counts"].items() if k.startswith("mcp__")} == dict.fromkeys(
        READ_ONLY, 1
    )
    results: dict[str, tuple[bool, str]] = {}
    for artifact in flow["transcript_artifacts"]:  # plan session, then work session
        transcript = out / artifact["path"]
        servers = [(s.get("name"), s.get("status")) for s in init_event(transcript).get("mcp_servers") or []]
        assert servers == [("gitnexus", "connected")], servers
        results.update(tool_results_by_name(transcript))
    for name in READ_ONLY:
        assert results[name][0] is False, (name, results[name])
    assert "Function:ledger/money.py:format_amount" in results["mcp__gitnexus__impact"][1]
    assert "Function:ledger/money.py:format_amount" in results["mcp__gitnexus__context"][1]
    assert '"changed_symbols"' in results["mcp__gitnexus__detect_changes"][1]  # it saw the session's edit
    for name in READ_ONLY:  # live progress shows each MCP result
        assert f"[trivial-amount-grouping][workflow][run 0] plan: {name} ok:" in console or (
            f"[trivial-amount-grouping][workflow][run 0] work: {name} ok:" in console
        ), name

    assert nomcp["mcp_servers"] == [] and nomcp["index_digest"] is None
    assert not any(k.startswith("mcp__") for k in nomcp["tool_use_counts"])
    assert init_event(out / nomcp["transcript_artifacts"][0]["path"]).get("mcp_servers") == []
