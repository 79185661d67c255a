"""The promotion gate end to end: demo scenarios reach each decision on purpose (real CLI, real
bwrap, scripted model), promotion.json verifies, tampering fails, apply writes the overlay into a
copy of the demo toolkit, and a re-render is byte-identical.

CI runs three scenarios (one sweep each, 20-70 s on a loaded 2-core machine) and reuses the
promote sweep for every downstream check. `WORKFLOW_BENCH_ALL_PROMOTION_SCENARIOS=1 ./dev test
tests/e2e/test_promotion_scenarios.py` runs the other five too, the review arms' included (a
command to run, not a CI test: CI must stay under ~20 minutes).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.builders import result_dicts
from workflow_bench import runner
from workflow_bench.corpus.promotion_scenarios import SCENARIOS
from workflow_bench.promotion.apply import ApplyError, apply_promotion
from workflow_bench.promotion.verify import VerifyError, verify_promotion
from workflow_bench.report.cli import main as rerender_main
from workflow_bench.reports.promotion_model import document_json

from .conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
CI_SCENARIOS = ("promote-cheaper", "insufficient-skill-not-invoked", "insufficient-aborted")
ALL = os.environ.get("WORKFLOW_BENCH_ALL_PROMOTION_SCENARIOS") == "1"
REPORTS = ("report.md", "report.html", "stats.json", "promotion.json")


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory, bwrap_bin, claude_bin):
    done: dict[str, tuple[int, Path, str]] = {}

    def run(name: str) -> tuple[int, Path, str]:
        if name not in done:
            out = tmp_path_factory.mktemp(name) / "out"
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                code = runner.main(SCENARIOS[name].argv(out=out))
            done[name] = (code, out, printed.getvalue())
        return done[name]

    return run


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_reaches_its_decision(name: str, sweeps) -> None:
    if name not in CI_SCENARIOS and not ALL:
        pytest.skip("outside the CI subset; set WORKFLOW_BENCH_ALL_PROMOTION_SCENARIOS=1")
    scenario = SCENARIOS[name]
    code, out, printed = sweeps(name)
    doc = document_json(verify_promotion(out, now=datetime.now(UTC)))  # recomputed from results.jsonl alone
    decisions = {d["candidate_arm"]: d for d in doc["decisions"]}
    decision = decisions[scenario.candidate_arm]
    assert decision["decision"] == scenario.expected, decision["reasons"]
    rows = result_dicts(out)
    arms = {r["arm"] for r in rows}
    for arm in doc["arms"]:
        assert f"[measurement-health] {arm}: " in printed  # every arm, after the reports
    unusable = f"[measurement-health] {scenario.candidate_arm}: UNUSABLE"
    if name == "insufficient-aborted":
        assert code == 1 and doc["run_status"] == "aborted"
        assert unusable in printed and "sweep aborted" in decision["reasons"][0]
    elif "skill-not-invoked" in name:
        # skill-not-invoked is an evidence failure: a candidate that never invoked its skill has
        # no admissible row, so it is also UNUSABLE and the sweep exits 1 (after every report).
        assert code == 1 and doc["run_status"] == "complete" and unusable in printed
        kinds = [r["error_kind"] for r in rows if r["arm"] == scenario.candidate_arm]
        assert kinds == ["skill-not-invoked"] * 3
        assert any("unequal scored runs" in r and "skill-not-invoked" in r for r in decision["reasons"])
    else:
        assert code == 0 and doc["run_status"] == "complete"
        assert len(rows) == 3 * len(arms) and unusable not in printed


def _copy(out: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    return copy


def test_promote_sweep_rerenders_byte_identically(sweeps, tmp_path: Path) -> None:
    _, out, _ = sweeps("promote-cheaper")
    copy = _copy(out, tmp_path)
    for name in REPORTS:
        (copy / name).unlink()
    with contextlib.redirect_stdout(io.StringIO()):
        assert rerender_main([str(copy)]) == 0
    for name in REPORTS:
        assert (copy / name).read_bytes() == (out / name).read_bytes(), name


@pytest.mark.parametrize("tamper", ["edit", "delete", "duplicate", "promotion"])
def test_promote_sweep_tampering_fails_verify(tamper: str, sweeps, tmp_path: Path) -> None:
    _, out, _ = sweeps("promote-cheaper")
    copy = _copy(out, tmp_path)
    lines = (copy / "results.jsonl").read_text().splitlines()
    if tamper == "edit":
        row = json.loads(lines[1])
        row["cost_usd"] = row["cost_usd"] / 2
        lines[1] = json.dumps(row, sort_keys=True, ensure_ascii=False)
    elif tamper == "delete":
        del lines[4]
    elif tamper == "duplicate":
        lines.append(lines[0])
    if tamper == "promotion":
        doc = json.loads((copy / "promotion.json").read_text())
        doc["decisions"][0]["tasks"][0]["candidate_metric"] *= 0.5
        (copy / "promotion.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        (copy / "results.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(VerifyError):
        verify_promotion(copy, now=datetime.now(UTC))


def test_promote_sweep_applies_to_a_copy_of_the_demo_toolkit(sweeps, tmp_path: Path) -> None:
    _, out, _ = sweeps("promote-cheaper")
    toolkit = tmp_path / "toolkit"
    shutil.copytree(REPO_ROOT / "workflow_bench" / "corpus" / "toolkit", toolkit)
    stale = tmp_path / "stale"
    shutil.copytree(toolkit, stale)
    (stale / "skills" / "plan" / "SKILL.md").write_text("# edited after the sweep\n")
    with pytest.raises(ApplyError, match="changed since the sweep"):
        apply_promotion(out, target=stale, now=datetime.now(UTC))
    assert (stale / "skills" / "plan" / "SKILL.md").read_text() == "# edited after the sweep\n"
    written = apply_promotion(out, target=toolkit, now=datetime.now(UTC))
    overlay = (
        REPO_ROOT
        / "workflow_bench"
        / "corpus"
        / "overlays"
        / "plan-candidate"
        / "skills"
        / "plan"
        / "SKILL.md"
    )
    assert written == [toolkit / "skills" / "plan" / "SKILL.md"]
    assert written[0].read_bytes() == overlay.read_bytes()
