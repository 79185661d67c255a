"""``--unsafe-no-bwrap``: the paired review sweep through the real CLI on the host, and its refusals.

The host backend is not a security boundary; these tests check what it does
promise: the same review outcomes as under bubblewrap, a workspace that is
byte-identical after every review, ``sandbox_backend: host-unsafe`` on every
row, and exit 2 (nothing run) under CI or with any other arm set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow_bench import runner
from workflow_bench.review.contract import REVIEW_OUTPUT_PATH

from .test_review_arms import CORPUS, EXPECTED, PAIRED, REVIEW_TASKS

pytestmark = pytest.mark.e2e
UNSAFE = "--unsafe-no-bwrap"


def _host_script(tmp_path: Path) -> Path:
    """The review demo script with the artifact named relative to ``{cwd}``.

    A scripted model cannot read the (translated) prompt, so its literal
    ``/review-output/...`` would name a host path. ``{cwd}/../review-output``
    is the same directory under bwrap (``/workspace/..``) and on the host (the
    cell dir holds ``workspace/`` and ``review-output/`` side by side).
    """
    text = (CORPUS / "scripts" / "review-demo.yaml").read_text()
    literal = f"file_path: {REVIEW_OUTPUT_PATH}"
    assert literal in text
    script = tmp_path / "review-demo-host.yaml"
    script.write_text(text.replace(literal, 'file_path: "{cwd}/../review-output/review-output.json"'))
    return script


def _rows(out: Path) -> dict[tuple[str, str], dict]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return {(r["task"], r["arm"]): r for r in map(json.loads, lines)}


def test_unsafe_host_review_sweep_matches_bwrap_outcomes(tmp_path, monkeypatch, claude_bin, capsys):
    monkeypatch.delenv("CI", raising=False)  # CI runs with CI=true; the flag refuses it
    out = tmp_path / "out"
    script = _host_script(tmp_path)
    code = runner.main(["--tasks", str(REVIEW_TASKS), "--provider", "scripted", "--script", str(script),
                        *PAIRED, UNSAFE, "--out", str(out)])  # fmt: skip
    assert "NOT a security boundary: no filesystem, network or PID isolation" in capsys.readouterr().err
    assert code == 0
    rows = _rows(out)
    assert len(rows) == 15
    for (task, arm), row in rows.items():
        detail = (task, arm, row["error_kind"], row["error_detail"])
        assert row["sandbox_backend"] == "host-unsafe", detail
        assert row["oracle_passed"] is EXPECTED[task][arm], detail
        # the workspace snapshot after the review equals the one before it, byte for byte
        assert row["review_evidence_valid"] is True and row["diff_files"] == 0, detail
        assert row["skill_invoked"] is True, detail
        assert (out / row["review_artifact"]).is_file()


def test_unsafe_host_is_refused_under_ci(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CI", "1")
    out = tmp_path / "out"
    code = runner.main(["--tasks", str(REVIEW_TASKS), "--provider", "scripted", *PAIRED, UNSAFE,
                        "--out", str(out)])  # fmt: skip
    assert code == runner.EXIT_USAGE
    assert "refused when CI is set" in capsys.readouterr().err
    assert not out.exists()  # nothing ran, nothing was written


def test_unsafe_host_is_refused_for_implementation_arms(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CI", raising=False)
    out = tmp_path / "out"
    arms = ["--arms", "ce_review", "review", "candidate_review", "baseline"]
    code = runner.main(["--tasks", str(REVIEW_TASKS), "--provider", "scripted", *arms,
                        "--candidate-overlay", str(CORPUS / "overlays" / "review-candidate"),
                        "--ce-plugin-dir", str(CORPUS / "comparator-plugin"), "--ce-plugin-version", "0.3.0",
                        UNSAFE, "--out", str(out)])  # fmt: skip
    assert code == runner.EXIT_USAGE
    err = capsys.readouterr().err
    assert "only runs the paired review arms" in err and "NOT a security boundary" not in err
    assert not out.exists()
