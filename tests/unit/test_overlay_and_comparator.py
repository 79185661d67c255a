"""Candidate overlays and the comparator plugin are rejected loudly before anything runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workflow_bench.toolkit.comparator import ComparatorError, snapshot_comparator
from workflow_bench.toolkit.overlay import OverlayError, load_overlay
from workflow_bench.toolkit.spec import Toolkit

pytestmark = pytest.mark.unit
CORPUS = Path(__file__).resolve().parents[2] / "workflow_bench" / "corpus"
TOOLKIT = Toolkit(root=str(CORPUS / "toolkit"), roles={"plan": "plan", "work": "work", "review": "review"})
PLUGIN = CORPUS / "comparator-plugin"


def _overlay(tmp_path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    return tmp_path


def test_demo_overlays_load_with_their_roles():
    assert load_overlay(CORPUS / "overlays" / "review-candidate", toolkit=TOOLKIT).roles == {"review"}
    work = load_overlay(CORPUS / "overlays" / "work-candidate", toolkit=TOOLKIT)
    assert work.roles == {"work"} and len(work.digest) == 64


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"skills/plan/run.sh": "echo"}, "not Markdown under skills"),
        ({"README.md": "x"}, "not Markdown under skills"),
        ({"skills/other/SKILL.md": "x"}, "not evaluated"),
        ({"skills/plan/SKILL.md": (CORPUS / "toolkit/skills/plan/SKILL.md").read_text()}, "byte-identical"),
    ],
    ids=["non-markdown", "outside-skills", "unknown-skill", "identical"],
)
def test_bad_overlays(tmp_path, files, message):
    with pytest.raises(OverlayError, match=message):
        load_overlay(_overlay(tmp_path, files), toolkit=TOOLKIT)


def test_overlay_symlink_rejected(tmp_path):
    root = _overlay(tmp_path, {"skills/plan/SKILL.md": "new"})
    (root / "skills" / "plan" / "extra.md").symlink_to("/etc/passwd")
    with pytest.raises(OverlayError, match="symlink"):
        load_overlay(root, toolkit=TOOLKIT)


def test_comparator_snapshot_and_digest(tmp_path):
    plugin = snapshot_comparator(
        PLUGIN, version="0.3.0", dest=tmp_path / "snap", roles={"plan", "work", "review"}
    )
    assert plugin.name == "compound-demo" and len(plugin.manifest_digest) == 64
    assert (tmp_path / "snap" / "skills" / "ce-work" / "SKILL.md").read_text().startswith("---")
    again = snapshot_comparator(PLUGIN, version="0.3.0", dest=tmp_path / "snap2", roles={"work"})
    assert again.manifest_digest == plugin.manifest_digest


def test_comparator_version_mismatch(tmp_path):
    with pytest.raises(ComparatorError, match="does not match"):
        snapshot_comparator(PLUGIN, version="9.9.9", dest=tmp_path / "snap", roles={"review"})


def test_comparator_symlink_and_missing_skill(tmp_path):
    copy = tmp_path / "plugin"
    shutil.copytree(PLUGIN, copy)
    (copy / "skills" / "ce-work" / "link.md").symlink_to("/etc/passwd")
    with pytest.raises(ComparatorError, match="symlink"):
        snapshot_comparator(copy, version="0.3.0", dest=tmp_path / "snap", roles={"work"})
    (copy / "skills" / "ce-work" / "link.md").unlink()
    shutil.rmtree(copy / "skills" / "ce-plan")
    with pytest.raises(ComparatorError, match="ce-plan"):
        snapshot_comparator(copy, version="0.3.0", dest=tmp_path / "snap3", roles={"plan"})
    (copy / ".claude-plugin" / "plugin.json").write_text(json.dumps({"version": "0.3.0"}))
    with pytest.raises(ComparatorError, match=r"plugin.json: name: missing required key"):
        snapshot_comparator(copy, version="0.3.0", dest=tmp_path / "snap4", roles=set())
    (copy / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": 3, "version": "0.3.0"}))
    with pytest.raises(ComparatorError, match=r"plugin.json: name: want a string, got int"):
        snapshot_comparator(copy, version="0.3.0", dest=tmp_path / "snap5", roles=set())
    (copy / ".claude-plugin" / "plugin.json").write_text("[]")
    with pytest.raises(ComparatorError, match=r"plugin.json: \(document\): want a mapping, got list"):
        snapshot_comparator(copy, version="0.3.0", dest=tmp_path / "snap6", roles=set())
