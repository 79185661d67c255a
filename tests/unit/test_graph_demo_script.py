"""``scripts/graph-demo.yaml`` is what ``workflow_bench.corpus.graph_demo`` derives from demo.yaml."""

from __future__ import annotations

import pytest
import yaml

from workflow_bench.corpus.graph_demo import DEMO, GRAPH_DEMO, graph_demo_script, main, render

pytestmark = pytest.mark.unit


def test_committed_graph_demo_is_up_to_date():
    assert GRAPH_DEMO.read_text(encoding="utf-8") == render(), (
        "run python -m workflow_bench.corpus.graph_demo"
    )
    assert main(["--check"]) == 0


def test_workflow_arms_call_the_graph_and_keep_every_demo_edit():
    demo = yaml.safe_load(DEMO.read_text())
    graph = graph_demo_script(demo)
    for cell in graph["cells"]:
        arms = cell["match"]["arm"]
        calls = [c for s in cell["sessions"] for t in s["turns"] for c in t.get("tool_calls", ())]
        names = [c["name"] for c in calls]
        original = next(c for c in demo["cells"] if c["match"] == cell["match"])
        before = [c for s in original["sessions"] for t in s["turns"] for c in t.get("tool_calls", ())]
        edits = [c for c in calls if c["name"] in ("Write", "Edit", "Bash")]
        assert edits == [c for c in before if c["name"] in ("Write", "Edit", "Bash")]
        if "workflow" in arms or "workflow_direct" in arms:
            assert [n for n in names if n.startswith("mcp__")] == [
                "mcp__gitnexus__impact", "mcp__gitnexus__context", "mcp__gitnexus__detect_changes",
            ]  # fmt: skip
            skills = [c["input"]["skill"] for c in calls if c["name"] == "Skill"]
            assert skills and all(s.startswith("gitnexus-") for s in skills), skills
        else:
            assert not any(n.startswith("mcp__") for n in names) and cell == original
    assert not any("ce_" in str(c["match"]["arm"]) for c in graph["cells"])
