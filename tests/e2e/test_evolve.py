"""The evolve driver end to end: real CLI, real bwrap, the runner as a real subprocess; only models scripted.

- the README's exact offline command promotes (plus ``--apply`` onto a copy of the demo toolkit),
  and ``promotion verify`` accepts what it wrote;
- a generation that keeps the incumbent feeds a second one: its bundle holds the first one's rows,
  its proposer read them, and its benchmark paid only candidate cells plus one canary;
- a proposer that writes outside the overlay, writes non-Markdown, or touches a skill no
  benchmarked arm runs fails the generation closed: exit 1, no benchmark, nothing applied;
- ``--max-runtime`` too short stops before a generation with exit 1, earlier evidence intact.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workflow_bench.evolve.bench import BenchError, gate_verdict
from workflow_bench.evolve.cli import main as evolve_main
from workflow_bench.evolve.learnings import append_learning

from .conftest import REPO_ROOT, left_behind, recorded_tempdirs

pytestmark = pytest.mark.e2e
CORPUS = REPO_ROOT / "workflow_bench" / "corpus"
DEMO_SCRIPT = CORPUS / "scripts" / "demo.yaml"
PROPOSER = CORPUS / "scripts" / "proposer-demo.yaml"
SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def evolve_env(private_tmpdir, monkeypatch):
    # The runner subprocess reads TMPDIR for its cells; keep them in this test's private dir.
    monkeypatch.setenv("TMPDIR", str(private_tmpdir))
    monkeypatch.chdir(REPO_ROOT)  # the README command's paths are relative to the checkout
    return private_tmpdir


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def readme_command() -> list[str]:
    text = (REPO_ROOT / "docs" / "evolve.md").read_text()
    match = re.search(r"uv run --locked python -m workflow_bench\.evolve[^\n`]*(?:\\\n[^\n`]*)*", text)
    assert match, "docs/evolve.md must hold the offline evolve command"
    argv = shlex.split(match.group(0).replace("\\\n", " "))
    return argv[argv.index("workflow_bench.evolve") + 1 :]


def test_readme_command_promotes_verifies_and_applies(evolve_env, tmp_path, bwrap_bin, claude_bin, capsys):
    argv = readme_command()
    assert argv == [
        "--tasks", "tasks.scenarios.yaml", "--generations", "1", "--runs", "3", "--provider", "scripted",
        "--script", "workflow_bench/corpus/scripts/demo.yaml",
        "--proposer-script", "workflow_bench/corpus/scripts/proposer-demo.yaml", "--out-root", "DIR",
    ]  # fmt: skip
    out = tmp_path / "evolve"
    target = tmp_path / "toolkit-copy"
    shutil.copytree(CORPUS / "toolkit", target)
    argv[argv.index("DIR")] = str(out)
    assert evolve_main([*argv, "--apply", "--target", str(target)]) == 0
    printed = capsys.readouterr().out
    assert "PROMOTED — gen-0" in printed and "NOT PROMOTED" not in printed

    gen = out / "gen-0"
    assert (
        "row_id" in (gen / "proposal.md").read_text()
        or "Failure pattern" in (gen / "proposal.md").read_text()
    )
    frozen = gen / "overlay" / "skills" / "plan" / "SKILL.md"
    assert frozen.stat().st_mode & 0o777 == 0o444 and (gen / "overlay").stat().st_mode & 0o777 == 0o555
    verify = subprocess.run(
        [sys.executable, "-m", "workflow_bench.promotion", "verify", str(gen / "bench")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stderr
    assert "candidate_workflow=promote" in verify.stdout
    # Applied through `promotion apply`: the target's plan skill holds the frozen bytes, nothing else moved.
    assert (target / "skills" / "plan" / "SKILL.md").read_bytes() == frozen.read_bytes()
    for skill in ("work", "review"):
        assert (target / "skills" / skill / "SKILL.md").read_bytes() == (
            CORPUS / "toolkit" / "skills" / skill / "SKILL.md"
        ).read_bytes()
    session = json.loads((gen / "proposer-session.json").read_text())
    assert session["ok"] and session["tool_use_counts"] == {"Read": 3, "Write": 2}
    record = json.loads((out / "evolve.json").read_text())
    assert record["generations"][0]["status"] == "promoted" and record["generations"][0]["applied"]
    # Negative controls of the driver's own gate reading: another overlay digest, or task bindings
    # other than those pinned before generation 0, make the same verified evidence untrusted.
    digest, pinned = record["generations"][0]["overlay_digest"], record["pinned_tasks"]
    assert gate_verdict(gen / "bench", overlay_digest=digest, pinned_tasks=pinned).promoted
    with pytest.raises(BenchError, match="not the frozen"):
        gate_verdict(gen / "bench", overlay_digest="0" * 64, pinned_tasks=pinned)
    moved = [{**pinned[0], "resolved_sha": "f" * 40}, *pinned[1:]]
    with pytest.raises(BenchError, match="task bindings differ"):
        gate_verdict(gen / "bench", overlay_digest=digest, pinned_tasks=moved)


def test_kept_generation_feeds_the_next_one_which_pays_only_candidates_and_a_canary(
    evolve_env, task_file_for, tmp_path, bwrap_bin, claude_bin, capsys
):
    tasks = task_file_for("trivial-amount-grouping", "bug-negative-amounts")
    out = tmp_path / "evolve"
    learnings = tmp_path / "learnings.jsonl"
    for skill in ("plan", "review"):
        note = {"skill": skill, "date": "2026-11-30", "task": "trivial-amount-grouping",
                "friction": f"{skill} friction", "suggestion": f"{skill} hint"}  # fmt: skip
        append_learning(learnings, note)
    argv = ["--tasks", str(tasks), "--generations", "2", "--runs", "1", "--provider", "scripted",
            "--script", str(DEMO_SCRIPT), "--proposer-script", str(PROPOSER),
            "--learnings", str(learnings), "--out-root", str(out)]  # fmt: skip
    with recorded_tempdirs() as made:
        assert evolve_main(argv) == 0  # runs 1 < min_runs 3: insufficient evidence, never promoted
    assert left_behind(made, "wfb-") == []  # the proposers' sandboxes are gone
    printed = capsys.readouterr().out
    # The proposer may change only the plan skill: it sees the plan note, never the review one.
    for n in (0, 1):
        notes = json.loads((out / f"gen-{n}" / "evidence" / "learnings.json").read_text())
        assert [note["suggestion"] for note in notes] == ["plan hint"]
    assert printed.count("NOT PROMOTED — gen-") == 2 and "No candidate cleared the gate" in printed

    first = _lines(out / "gen-0" / "bench" / "results.jsonl")
    first_ids = {f"{r['task']}/{r['arm']}/run{r['run']}" for r in first}
    bundle = out / "gen-1" / "evidence"
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["source"] == str(out / "gen-0" / "bench")
    selected = json.loads((bundle / "selected-rows.json").read_text())
    assert {r["row_id"] for r in selected} == first_ids
    assert (bundle / "prior-proposal.md").read_text() == (out / "gen-0" / "proposal.md").read_text()
    assert json.loads((bundle / "gate-summary.json").read_text())[0].startswith(
        "candidate_workflow: insufficient"
    )
    assert any(name.startswith("transcript-") for name in manifest["files"])
    # Gen 0's bundle was empty (no seed); gen 1's proposer really read gen 0's rows in its sandbox.
    assert json.loads((out / "gen-0" / "evidence" / "selected-rows.json").read_text()) == []
    transcript = (out / "gen-1" / "proposer-transcript.jsonl").read_text()
    assert all(row_id in transcript for row_id in first_ids)
    assert not any(
        row_id in (out / "gen-0" / "proposer-transcript.jsonl").read_text() for row_id in first_ids
    )

    argv1 = json.loads((out / "gen-1" / "runner-argv.json").read_text())
    assert argv1[argv1.index("--reuse-results") + 1] == str(out / "gen-0" / "bench")
    rows = _lines(out / "gen-1" / "bench" / "results.jsonl")
    reused = {(r["task"], r["arm"]) for r in rows if r["reused"]}
    assert len(reused) == 1 and {a for _, a in reused} == {"workflow"}  # the other workflow cell: canary
    paid = {(e["task"], e["arm"]) for e in _lines(out / "gen-1" / "bench" / "provider-ledger.jsonl")}
    all_cells = {(r["task"], r["arm"]) for r in rows}
    assert paid == all_cells - reused
    assert {a for _, a in paid} == {"workflow", "candidate_workflow"}
    assert sum(a == "workflow" for _, a in paid) == 1


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("proposer-outside-overlay.yaml", "wrote outside overlay/ and proposal.md: notes.txt"),
        ("proposer-non-markdown.yaml", "helper.py is not Markdown under skills/<skill>/"),
        ("proposer-unexercised-skill.yaml", "overlay touches skill(s) review"),
        ("proposer-deep-tree.yaml", "nested deeper than 8 levels"),
        ("proposer-control-name.yaml", "skills/plan/\\x1b[2Jnotes.md: a name with a control"),
    ],
    ids=["outside-overlay", "non-markdown", "unexercised-skill", "deep-tree", "control-name"],
)
def test_a_proposer_breaking_the_rules_fails_the_generation_closed(
    script, reason, evolve_env, task_file_for, tmp_path, bwrap_bin, claude_bin, capsys
):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "evolve"
    target = tmp_path / "toolkit-copy"
    shutil.copytree(CORPUS / "toolkit", target)
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    argv = ["--tasks", str(tasks), "--runs", "3", "--provider", "scripted", "--script", str(DEMO_SCRIPT),
            "--proposer-script", str(SCRIPTS / script), "--out-root", str(out),
            "--apply", "--target", str(target)]  # fmt: skip
    assert evolve_main(argv) == 1
    printed = capsys.readouterr().out
    assert "NOT PROMOTED — gen-0 failed closed" in printed and reason in printed
    assert "\x1b" not in printed  # names are model output: escaped, never printed raw
    gen = out / "gen-0"
    assert (
        json.loads((gen / "proposer-session.json").read_text())["ok"] is True
    )  # the session ran; its output was refused
    assert (
        not (gen / "overlay").exists() and not (gen / "bench").exists() and not (gen / "proposal.md").exists()
    )
    assert {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    manifest = json.loads((gen / "evidence" / "manifest.json").read_text())
    bundle_names = sorted(p.name for p in (gen / "evidence").iterdir())
    assert bundle_names == sorted([*manifest["files"], "manifest.json"])
    if script == "proposer-outside-overlay.yaml":  # its writes to /evidence and the clone hit EROFS
        transcript = (gen / "proposer-transcript.jsonl").read_text()
        assert transcript.count("EROFS") >= 2, transcript[-3000:]
    record = json.loads((out / "evolve.json").read_text())
    assert record["generations"][0]["status"] == "failed" and reason in record["generations"][0]["reason"]


def test_runtime_cap_too_short_stops_before_the_generation_and_keeps_the_seed(
    evolve_env, task_file_for, tmp_path, capsys
):
    tasks = task_file_for("trivial-amount-grouping")
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "results.jsonl").write_text("")
    out = tmp_path / "evolve"
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--proposer-script", str(PROPOSER),
            "--seed-results", str(seed), "--out-root", str(out), "--max-runtime", "120",
            "--proposer-timeout", "60", "--bench-timeout", "600"]  # fmt: skip
    assert evolve_main(argv) == 1
    printed = capsys.readouterr().out
    assert "STOPPED before gen-0: runtime cap (--max-runtime)" in printed
    assert not (out / "gen-0").exists()  # no proposer, no benchmark started
    assert (seed / "results.jsonl").read_text() == "" and sorted(p.name for p in seed.iterdir()) == [
        "results.jsonl"
    ]
    record = json.loads((out / "evolve.json").read_text())
    assert record["generations"] == [
        {"generation": 0, "status": "stopped", "reason": record["generations"][0]["reason"]}
    ]


def _processes_naming(text: str) -> list[int]:
    """Live processes whose command line names ``text`` (a path private to this test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_sigterm_mid_benchmark_cancels_the_runner_and_keeps_its_rows(
    evolve_env, task_file_for, tmp_path, bwrap_bin, claude_bin
):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "evolve"
    argv = [sys.executable, "-m", "workflow_bench.evolve", "--tasks", str(tasks), "--runs", "3",
            "--provider", "scripted", "--script", str(SCRIPTS / "slow.yaml"),
            "--proposer-script", str(PROPOSER), "--out-root", str(out)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    results = out / "gen-0" / "bench" / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (results.exists() and results.read_text().strip()):
        time.sleep(0.2)
    assert results.exists(), "no benchmark row before the deadline"
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output.decode()[-2000:]
    rows = _lines(results)
    assert 1 <= len(rows) < 6  # the finished rows stay; the sweep stopped early
    assert _processes_naming(str(out)) == []  # no runner or session outlives the driver
    record = json.loads((out / "evolve.json").read_text())
    assert record["generations"][0]["status"] == "cancelled"
