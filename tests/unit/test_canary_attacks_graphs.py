"""The graph canary's judges: each blocks only the defended outcome (no cell run here).

The real attacker cell runs in tests/e2e/test_canary.py; these cases pin what each judge accepts,
so a judge that cannot fail (or never passes) is caught without a sandbox.
"""

from __future__ import annotations

import pytest

from tests.builders import row
from workflow_bench.canary.attacks_graphs import GRAPH_ATTACKS, GraphEvidence, graph_toolkit

pytestmark = pytest.mark.unit
REFUSED = "<tool_use_error>Error: No such tool available: mcp__canary__rename</tool_use_error>"
# attack → (a defended output, an escaped output)
CASES = {
    "graph-mcp-network": (
        "CANARY-MCP-CONNECT-REFUSED ConnectionRefusedError",
        "CANARY-MCP-CONNECT-SUCCEEDED",
    ),
    "graph-mcp-writes-index": ("CANARY-MCP-WRITE-REFUSED OSError: Read-only", "CANARY-MCP-WRITE-SUCCEEDED"),
    "graph-mcp-writes-workspace": ("CANARY-MCP-WRITE-REFUSED PermissionError", "CANARY-MCP-WRITE-SUCCEEDED"),
    "graph-agent-writes-index": ("IDX-WRITE-REFUSED", "IDX-WRITE-OK"),
    "graph-mutating-tool": (REFUSED, "CANARY-MCP-RENAME-EXECUTED"),
}


def evidence(output: str, *, hits: int = 0, intact: bool = True, patch: str = "") -> GraphEvidence:
    return GraphEvidence(output=output, row=row(), patch=patch, listener_hits=hits, index_intact=intact)


def test_every_attack_has_cases_and_names_are_unique():
    names = [a.name for a in GRAPH_ATTACKS]
    assert len(set(names)) == len(names) and set(names) == set(CASES)


@pytest.mark.parametrize("attack", GRAPH_ATTACKS, ids=lambda a: a.name)
def test_judge_blocks_only_the_defended_outcome(attack):
    defended, escaped = CASES[attack.name]
    assert attack.judge(evidence(defended))[0] is True
    assert attack.judge(evidence(escaped))[0] is False
    assert attack.judge(evidence(""))[0] is False  # no output is not a refusal


def test_side_channels_override_a_refusal_text():
    judges = {a.name: a.judge for a in GRAPH_ATTACKS}
    assert judges["graph-mcp-network"](evidence(CASES["graph-mcp-network"][0], hits=1))[0] is False
    for name in ("graph-mcp-writes-index", "graph-agent-writes-index"):
        assert judges[name](evidence(CASES[name][0], intact=False))[0] is False
    patch = "+++ b/CANARY-MCP-WROTE\n"
    assert (
        judges["graph-mcp-writes-workspace"](evidence(CASES["graph-mcp-writes-workspace"][0], patch=patch))[0]
        is False
    )
    assert judges["graph-mutating-tool"](evidence(REFUSED, patch="+++ b/CANARY-MCP-RENAMED\n"))[0] is False


def test_the_hostile_toolkit_never_grants_its_mutating_tool():
    toolkit = graph_toolkit()
    assert "mcp__canary__rename" not in toolkit.granted_mcp_tools
    assert toolkit.index is not None and toolkit.index.output == ".canary-index"
