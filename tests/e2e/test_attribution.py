"""A session timeout is charged to whoever the host saw use the time: the agent or the endpoint.

Through runner.main(): the real CLI in real bwrap, the real relay, the scripted model. The agent's
own hanging tool (no model request in flight) is `session-timeout`, counted against its arm; an
endpoint that stalls mid-request is `session-error`, excluded and systemic. Same timeout, same
harness; only the relay's host-side record tells them apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import results
from workflow_bench import runner
from workflow_bench.judging.outcomes import is_excluded, is_systemic_failure

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).parent / "scripts" / "attribution.yaml"


def test_session_timeout_is_attributed_from_the_relay(task_file_for, tmp_path, bwrap_bin, claude_bin):
    tasks = task_file_for("trivial-amount-grouping")
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--provider", "scripted", "--script", str(SCRIPT)]
    argv += ["--arms", "baseline", "workflow_direct", "--timeout", "25", "--workers", "2"]
    runner.main([*argv, "--max-retries", "0", "--out", str(out)])
    rows = {r.arm: r for r in results(out)}

    agent = rows["baseline"]
    assert agent.error_kind == "session-timeout", agent.error_detail
    assert not is_excluded(agent) and not is_systemic_failure(agent)
    assert isinstance(agent.error_detail, dict)
    assert "no model request was in flight" in agent.error_detail["attribution"]

    endpoint = rows["workflow_direct"]
    assert endpoint.error_kind == "session-error", endpoint.error_detail
    assert is_excluded(endpoint) and is_systemic_failure(endpoint)
    assert isinstance(endpoint.error_detail, dict)
    assert "stalled" in endpoint.error_detail["attribution"]

    report = (out / "report.md").read_text()
    assert "`workflow_direct`: 1 × `session-error`, excluded because" in report
