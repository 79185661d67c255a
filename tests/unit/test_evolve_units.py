"""The evolve driver's pure parts: flags, runtime cap, learnings, evidence selection, bundle, freeze."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.builders import row, sweep_record, sweep_runs, write_sweep
from workflow_bench.evolve import bundle as bundle_mod
from workflow_bench.evolve.args import build_parser, candidate_pairs, changeable_roles
from workflow_bench.evolve.bench import runner_environment
from workflow_bench.evolve.cli import main as evolve_main
from workflow_bench.evolve.evidence import (
    Artifact,
    CompactRow,
    Evidence,
    gate_summary,
    row_artifacts,
    select_rows,
)
from workflow_bench.evolve.learnings import LearningsError, append_learning, notes_for, read_learnings
from workflow_bench.evolve.overlay_freeze import (
    OverlayRejected,
    check_output,
    freeze,
    recheck,
    validate_overlay,
)
from workflow_bench.evolve.proposer import sanitized_clone
from workflow_bench.evolve.runtime_cap import RuntimeCapReached, derive_cap
from workflow_bench.toolkit.manifest import load_toolkit

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
DEMO = ["--tasks", str(REPO / "tasks.scenarios.yaml"), "--provider", "scripted"]
PROPOSER = ["--proposer-script", str(REPO / "workflow_bench/corpus/scripts/proposer-demo.yaml")]


# ── flags: bad combinations exit 2 before anything is created ──────────────────────────


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "x"], "--target is where --apply writes"),
        ([*PROPOSER, "--apply", "--promotion-min-runs", "1"], "--apply ships skills only under the default"),
        ([], "--provider scripted needs --proposer-script"),
        ([*PROPOSER, "--arms", "workflow_direct"], "no skill overlay is benchmarked on exactly"),
        ([*PROPOSER, "--arms", "workflow", "workflow"], "lists an arm twice"),
        ([*PROPOSER, "--base-url", "http://x"], "--provider scripted serves the model itself"),
    ],
)
def test_bad_flag_combinations_exit_2_and_create_nothing(tmp_path, capsys, extra, message):
    out = tmp_path / "out"
    assert evolve_main([*DEMO, "--out-root", str(out), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_anthropic_flags_are_checked_too(tmp_path, capsys):
    base = ["--tasks", "t.yaml", "--out-root", str(tmp_path / "o")]
    assert evolve_main([*base, "--provider", "anthropic", "--script", "s.yaml", "--model", "m"]) == 2
    assert "only apply to --provider scripted" in capsys.readouterr().err
    assert evolve_main([*base, "--provider", "anthropic"]) == 2
    assert "--model is required" in capsys.readouterr().err
    assert evolve_main([*base, "--provider", "anthropic", "--model", "latest"]) == 2


@pytest.mark.parametrize("argv", [["--arms", "review"], ["--generations", "0"], ["--runs", "101"]])
def test_malformed_single_flags_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([*DEMO, *argv])
    assert exc.value.code == 2


def test_bad_input_files_exit_2_naming_them(tmp_path, capsys):
    out = tmp_path / "out"
    bad = tmp_path / "learnings.jsonl"
    bad.write_text('{"skill": "plan"}\n')
    assert evolve_main([*DEMO, *PROPOSER, "--out-root", str(out), "--learnings", str(bad)]) == 2
    assert f"{bad}: line 1" in capsys.readouterr().err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("")
    assert evolve_main([*DEMO, *PROPOSER, "--out-root", str(busy)]) == 2
    assert "must be new or empty" in capsys.readouterr().err
    review = REPO / "workflow_bench/corpus/overlays/review-candidate"
    assert evolve_main([*DEMO, "--initial-overlay", str(review), "--out-root", str(out)]) == 2
    assert "touches skill(s) review" in capsys.readouterr().err
    assert not out.exists()


def test_dry_run_prints_each_exact_runner_argv_and_creates_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "results.jsonl").write_text("")
    argv = [
        *DEMO,
        *PROPOSER,
        "--generations",
        "2",
        "--runs",
        "1",
        "--out-root",
        str(out),
        "--seed-results",
        str(seed),
    ]
    assert evolve_main([*argv, "--dry-run"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    assert len(lines) == 2
    for n, line in enumerate(lines):
        overlay = f"--candidate-overlay {out}/gen-{n}/overlay --candidate-origin model-proposer"
        assert f"{overlay} --out {out}/gen-{n}/bench" in line
        assert "--arms workflow candidate_workflow" in line
    assert lines[0].endswith(f"--reuse-results {seed}")
    assert lines[1].endswith(f"--reuse-results {out}/gen-0/bench")
    assert not out.exists()


def test_arm_pairs_decide_which_skills_may_change():
    assert candidate_pairs(("workflow",)) == ("workflow", "candidate_workflow")
    assert changeable_roles(("workflow",)) == {"plan"}
    assert changeable_roles(("workflow", "workflow_direct")) == {"plan", "work"}
    assert changeable_roles(("workflow_direct",)) == frozenset()


def test_runner_environment_is_an_allowlist_plus_harness_variables():
    env = {
        "PATH": "/bin",
        "HOME": "/h",
        "AWS_SECRET_ACCESS_KEY": "x",
        "WORKFLOW_BENCH_ANTHROPIC_API_KEY": "k",
    }
    out = runner_environment(env)
    assert "AWS_SECRET_ACCESS_KEY" not in out and out["WORKFLOW_BENCH_ANTHROPIC_API_KEY"] == "k"
    assert out["PATH"] == "/bin" and out["PYTHONUNBUFFERED"] == "1"


# ── runtime cap ─────────────────────────────────────────────────────────────────────────


def test_runtime_cap_refuses_a_phase_without_its_envelope_and_clamps_the_rest():
    now = [100.0]
    cap = derive_cap(max_runtime_s=1000, env={}, clock=lambda: now[0])
    assert cap.require(600, what="gen-0") == 600
    now[0] += 500  # 500 s left
    assert cap.require(400, what="bench") == 400
    with pytest.raises(RuntimeCapReached, match="500 s left, gen-1 needs its envelope of 600 s"):
        cap.require(600, what="gen-1")
    assert derive_cap(max_runtime_s=None, env={}).require(10**6, what="x") == 10**6  # uncapped


def test_instance_window_cap_subtracts_uptime_and_reserve_with_a_floor():
    env = {"WORKFLOW_BENCH_INSTANCE_WINDOW_SECONDS": "86400", "WORKFLOW_BENCH_STOP_RESERVE_SECONDS": "5400"}
    assert derive_cap(max_runtime_s=None, env=env, uptime=lambda: 1000.0).budget_s == 80_000
    assert derive_cap(max_runtime_s=None, env=env, uptime=lambda: 86_000.0).budget_s == 600
    assert derive_cap(max_runtime_s=50, env=env, uptime=lambda: 0.0).budget_s == 50  # the flag wins


# ── learnings ───────────────────────────────────────────────────────────────────────────


def _note(i: int, skill: str = "plan") -> dict[str, str]:
    return {"skill": skill, "date": "2026-11-30", "task": f"t{i}", "friction": "f", "suggestion": "s"}


def test_learning_queue_appends_validates_and_keeps_the_last_40_per_skill(tmp_path):
    path = tmp_path / "learnings.jsonl"
    for i in range(45):
        append_learning(path, _note(i))
    append_learning(path, _note(99, skill="review"))
    notes = read_learnings(path)
    kept = notes_for(notes, {"plan"})
    assert len(kept) == 40 and kept[0].task == "t5" and kept[-1].task == "t44"
    assert notes_for(notes, {"work"}) == []
    with pytest.raises(LearningsError, match="date"):
        append_learning(path, {**_note(1), "date": "yesterday"})
    path.write_text(path.read_text() + "not json\n")
    with pytest.raises(LearningsError, match="line 47"):
        read_learnings(path)


# ── evidence selection and the bundle ───────────────────────────────────────────────────


def test_selection_drops_harness_deaths_then_unresolved_first_then_costliest():
    rows = [
        row(task="b", arm="w", run=0, resolved=True, cost_usd=1.0),
        row(task="a", arm="w", run=1, resolved=False, error_kind="oracle-failed"),
        row(task="a", arm="w", run=0, resolved=False, error_kind="verify-failed"),
        row(task="c", arm="w", run=0, resolved=False, error_kind="infra-error"),
        row(task="d", arm="w", run=0, resolved=True, cost_usd=3.0),
        row(task="e", arm="w", run=0, resolved=True, cost_usd=None),
    ]
    order = [(r.task, r.run) for r in select_rows(rows)]
    assert order == [("a", 0), ("a", 1), ("d", 0), ("b", 0), ("e", 0)]
    many = [row(task=f"t{i:02}", arm="w", run=0, resolved=False) for i in range(20)]
    assert len(select_rows(many)) == 12


def test_a_transcript_that_does_not_match_its_row_is_dropped(tmp_path):
    (tmp_path / "transcripts").mkdir()
    good, bad = b'{"a": 1}\n', b'{"b": 2}\n'
    (tmp_path / "transcripts" / "g.jsonl").write_bytes(good)
    (tmp_path / "transcripts" / "b.jsonl").write_bytes(bad + b"tampered")
    source = "parent-captured-stream-json"
    stored = row(task="t", arm="w", run=0, transcript_artifacts=[
        {"path": "transcripts/g.jsonl", "sha256": hashlib.sha256(good).hexdigest(), "bytes": len(good),
         "source": source},
        {"path": "transcripts/b.jsonl", "sha256": hashlib.sha256(bad).hexdigest(), "bytes": len(bad),
         "source": source},
    ], patch_artifact="../../etc/passwd")  # fmt: skip
    found, dropped = row_artifacts(tmp_path, stored, index=3, budget=24)
    assert [(a.name, a.data) for a in found] == [("transcript-3-0.jsonl", good)]
    assert dropped == ["t/w/run0: transcript 1 does not match its recorded sha256; not passed on"]


def test_gate_summary_reads_the_decisions_of_a_typed_promotion_json_and_names_a_malformed_one(tmp_path):
    rows = sweep_runs(3, "t1", "workflow") + sweep_runs(3, "t1", "candidate_workflow", cost_usd=0.9)
    out = write_sweep(tmp_path / "out", sweep_record(), rows)
    (summary,) = gate_summary(out)
    assert summary.startswith("candidate_workflow: promote (") and "no reasons" not in summary
    doc = json.loads((out / "promotion.json").read_text())
    doc["decisions"][0]["reasons"] = "not a list"  # read as characters before the typed parse
    (out / "promotion.json").write_text(json.dumps(doc))
    assert gate_summary(out) == [
        "promotion.json: unreadable (decisions[0].reasons: want a list, got 'not a list')"
    ]
    (out / "promotion.json").unlink()
    assert gate_summary(out) == []


def test_bundle_trims_in_the_documented_order_and_is_read_only(tmp_path, monkeypatch):
    rows = tuple(CompactRow(row_id=f"t/w/run{i}", data={"row_id": f"t/w/run{i}"}) for i in range(3))
    big = [Artifact(f"transcript-{i}-0.jsonl", b"x" * 200_000, f"t/w/run{i}", True) for i in range(3)]
    evidence = Evidence(
        source="s", rows=rows, artifacts=tuple(big), gate_summary=(), prior_proposal="p" * 50_000
    )
    monkeypatch.setattr(bundle_mod, "MAX_BUNDLE_BYTES", 64 * 1024 + 40_000)
    files, steps = bundle_mod.plan_bundle(evidence, [])
    assert steps[:4] == [
        "per-artifact cap halved to 131072 bytes",
        "per-artifact cap halved to 65536 bytes",
        "per-artifact cap halved to 32768 bytes",
        "per-artifact cap halved to 16384 bytes",
    ]
    assert steps[4:] == ["prior proposal dropped", "row t/w/run2 dropped (lowest priority)"]
    assert "prior-proposal.md" not in files and "transcript-2-0.jsonl" not in files
    assert b"bytes cut by the evidence bundle" in files["transcript-0-0.jsonl"]
    dest = bundle_mod.write_bundle(tmp_path / "b", evidence, [])
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["trim_steps"] == steps and manifest["source"] == "s"
    assert all(not os.access(p, os.W_OK) or os.geteuid() == 0 for p in dest.iterdir())
    assert all(p.stat().st_mode & 0o222 == 0 for p in dest.iterdir()) and dest.stat().st_mode & 0o222 == 0


# ── proposer output, validation and freeze ──────────────────────────────────────────────


@pytest.fixture
def toolkit():
    return load_toolkit("demo")


def _output(tmp_path: Path, files: dict[str, str]) -> Path:
    out = tmp_path / "output"
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    return out


def test_output_must_hold_exactly_the_overlay_and_the_proposal(tmp_path):
    out = _output(tmp_path, {"overlay/skills/plan/SKILL.md": "# p\n", "proposal.md": "x\n", "extra.txt": "y"})
    with pytest.raises(OverlayRejected, match=re.escape("outside overlay/ and proposal.md: extra.txt")):
        check_output(out)
    (out / "extra.txt").unlink()
    (out / "proposal.md").unlink()
    os.symlink("/etc/passwd", out / "proposal.md")
    with pytest.raises(OverlayRejected, match=re.escape("no regular proposal.md")):
        check_output(out)


def test_overlay_rules_and_exercised_skills(tmp_path, toolkit):
    plan = (REPO / "workflow_bench/corpus/overlays/plan-candidate/skills/plan/SKILL.md").read_text()
    out = _output(tmp_path, {"overlay/skills/plan/SKILL.md": plan, "overlay/skills/plan/x.py": "1"})
    with pytest.raises(OverlayRejected, match=re.escape("x.py is not Markdown")):
        validate_overlay(out / "overlay", toolkit=toolkit, incumbents=("workflow",))
    (out / "overlay/skills/plan/x.py").unlink()
    assert validate_overlay(out / "overlay", toolkit=toolkit, incumbents=("workflow",)).roles == {"plan"}
    with pytest.raises(OverlayRejected, match="touches skill\\(s\\) plan, which this run does not benchmark"):
        validate_overlay(out / "overlay", toolkit=toolkit, incumbents=("workflow", "workflow_direct"))


def test_frozen_overlay_is_read_only_and_any_change_is_caught(tmp_path, toolkit):
    source = REPO / "workflow_bench/corpus/overlays/plan-candidate"
    overlay = validate_overlay(source, toolkit=toolkit, incumbents=("workflow",))
    frozen = freeze(overlay, tmp_path / "frozen", toolkit=toolkit, incumbents=("workflow",))
    skill = frozen.path / "skills/plan/SKILL.md"
    assert skill.stat().st_mode & 0o777 == 0o444
    recheck(frozen, toolkit=toolkit, incumbents=("workflow",))
    skill.chmod(0o644)
    with pytest.raises(OverlayRejected, match="became writable"):
        recheck(frozen, toolkit=toolkit, incumbents=("workflow",))
    skill.write_text(skill.read_text() + "\nOne more rule.\n")
    skill.chmod(0o444)
    with pytest.raises(OverlayRejected, match="changed: digest"):
        recheck(frozen, toolkit=toolkit, incumbents=("workflow",))


def test_the_proposer_clone_holds_only_the_role_skills_regular_files(tmp_path):
    kit = tmp_path / "kit"
    shutil.copytree(REPO / "workflow_bench/corpus/toolkit", kit)
    (kit / "tasks.yaml").write_text("tasks: []\n")  # beside the skills: never copied
    (kit / "skills/plan/notes.md").write_text("extra prose\n")
    os.symlink("/etc/passwd", kit / "skills/plan/leak.md")
    clone = tmp_path / "clone"
    sanitized_clone(load_toolkit(kit), clone)
    files = sorted(p.relative_to(clone).as_posix() for p in clone.rglob("*") if not p.is_dir())
    assert files == [
        ".claude/skills/plan/SKILL.md",
        ".claude/skills/plan/notes.md",
        ".claude/skills/review/SKILL.md",
        ".claude/skills/work/SKILL.md",
    ]
