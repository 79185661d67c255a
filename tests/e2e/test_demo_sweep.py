"""The README's demo sweep through runner.main(): real CLI, real bwrap, scripted model.

Asserts the outcome the demo corpus is built to show (some cells resolve,
some pass their authored tests but fail the hidden oracle, arms differ in cost
and turns) and the output contract: one fsynced row per cell, artifacts that
match their recorded digests, a report that says the numbers are scripted,
nothing left behind, no credential anywhere.
"""

from __future__ import annotations

import hashlib
import json
import tempfile

import pytest

from tests.builders import result_dicts
from tests.component.test_demo_corpus import EXPECTED as CORPUS_EXPECTED
from tests.conftest import short_dir
from workflow_bench import runner
from workflow_bench.claude_cli import PINNED_CLAUDE_CODE_VERSION
from workflow_bench.rows.model import SCHEMA_VERSION

from .conftest import DEMO_TASKS, output_bytes

pytestmark = pytest.mark.e2e

# (authored verify passed, hidden oracle passed) per task × arm: the corpus test's table (which
# checks the scripted writes offline), minus the expensive task the default sweep skips.
EXPECTED = {key: value for key, value in CORPUS_EXPECTED.items() if key[0] != "cross-module-report-cutoff"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory, bwrap_bin, claude_bin):
    out = tmp_path_factory.mktemp("demo") / "out"
    with short_dir() as private_tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(private_tmp))  # never glob the shared /tmp
        code = runner.main(
            ["--tasks", str(DEMO_TASKS), "--runs", "1", "--provider", "scripted", "--out", str(out)]
        )
        leftovers = set(private_tmp.iterdir())
    rows = result_dicts(out)
    return code, out, rows, leftovers


def test_exit_code_and_one_row_per_cell(demo):
    code, _, rows, leftovers = demo
    assert code == 0
    assert sorted((r["task"], r["arm"], r["run"]) for r in rows) == sorted((t, a, 0) for t, a in EXPECTED)
    assert not leftovers, "cell clones must be removed after the sweep"


def test_outcomes_match_the_corpus_design(demo):
    _, _, rows, _ = demo
    for row in rows:
        authored, oracle = EXPECTED[(row["task"], row["arm"])]
        assert (row["authored_tests_passed"], row["oracle_passed"]) == (authored, oracle), row["task"]
        assert row["ok"] is True, (row["task"], row["arm"], row["error_detail"])
        assert row["resolved"] is (authored and oracle)
        assert row["error_kind"] == (None if oracle else "oracle-failed")
    assert any(r["resolved"] for r in rows)
    assert any(r["authored_tests_passed"] and not r["oracle_passed"] for r in rows)


def test_skill_evidence_per_arm(demo):
    _, _, rows, _ = demo
    for row in rows:
        if row["arm"] == "baseline":
            assert row["skill_invoked"] is None and "Skill" not in row["tool_use_counts"]
        else:
            assert row["skill_invoked"] is True
    workflow = [r for r in rows if r["arm"] == "workflow"]
    assert all(r["plan_doc"].startswith("docs/plans/") and r["sessions"] == 2 for r in workflow)


def test_the_wire_record_and_the_row_agree_on_usage(demo):
    """Every row's usage is the relay's record: main conversation for the four fields, all for usage_wire."""
    _, out, rows, _ = demo
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    for row in rows:
        assert row["wire_artifacts"] and row["relay_refused_requests"] == 0
        lines = [
            [json.loads(line) for line in (out / name).read_text().splitlines()]
            for name in row["wire_artifacts"]
        ]
        main = [
            x for session in lines for x in session if x["thread"] == session[0]["thread"] and x["accepted"]
        ]
        served = [x for session in lines for x in session if x["completed"]]
        assert {k: row[k] for k in fields} == {k: sum(x["usage"][k] for x in main) for k in fields}, row[
            "arm"
        ]
        assert row["usage_wire"] == {k: sum(x["usage"][k] for x in served) for k in fields}
        assert row["usage_wire"] == row["usage_provider"]  # the relay saw exactly what was served
        counts = {}
        for x in main:
            for _, name in x["tool_uses"]:
                counts[name] = counts.get(name, 0) + 1
        assert row["tool_use_counts"] == dict(sorted(counts.items()))


def test_arms_differ_in_cost_and_turns(demo):
    _, _, rows, _ = demo
    by = {(r["task"], r["arm"]): r for r in rows}
    for task in {t for t, _ in EXPECTED}:
        workflow, baseline = by[(task, "workflow")], by[(task, "baseline")]
        assert workflow["num_turns"] > baseline["num_turns"]
        assert workflow["cost_usd"] > baseline["cost_usd"] > 0
        assert workflow["output_tokens"] > baseline["output_tokens"]


def test_rows_carry_provenance_and_known_values(demo):
    _, _, rows, _ = demo
    for row in rows:
        assert row["schema_version"] == SCHEMA_VERSION
        assert row["claude_code_version"] == PINNED_CLAUDE_CODE_VERSION
        assert row["provider"] == "scripted" and row["model"] == "scripted-demo"
        assert len(row["task_base_sha"]) == 40 and row["sanitized_task_sha"] != row["task_base_sha"]
        for key in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        ):
            assert isinstance(row[key], int)
        assert row["diff_files"] >= 1


def test_artifacts_match_their_digests(demo):
    _, out, rows, _ = demo
    for row in rows:
        assert (out / row["patch_artifact"]).read_bytes().startswith(b"diff --git")
        assert row["transcript_artifacts"]
        for artifact in row["transcript_artifacts"]:
            data = (out / artifact["path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == artifact["sha256"] and len(data) == artifact["bytes"]
            assert (out / artifact["path"]).stat().st_mode & 0o077 == 0
    assert (out / "transcripts").stat().st_mode & 0o077 == 0


def test_report_says_scripted_and_lists_skipped_expensive(demo):
    _, out, _, _ = demo
    report = (out / "report.md").read_text()
    assert "SCRIPTED PROVIDER" in report
    assert "- Agent: the agent script `demo.yaml (the shipped demo script)` (sha256 `" in report
    assert "cross-module-report-cutoff" in report.split("Skipped expensive tasks")[1]
    assert "passed their authored tests but failed the hidden oracle" in report


def test_no_credential_or_oracle_bytes_in_output(demo):
    _, out, _, _ = demo
    data = output_bytes(out)
    assert b"sk-scripted-" not in data
    # Every oracle file opens with this docstring; its output and bytes are never persisted.
    for oracle in (DEMO_TASKS.parent / "workflow_bench/corpus/oracles").glob("*.oracle_test.py"):
        assert oracle.read_text().startswith('"""Hidden oracle for task')
    assert b"Hidden oracle for task" not in data


def test_the_demo_on_a_two_node_ray_cluster_gets_the_thread_pool_outcomes(demo, tmp_path, ray_bin):
    """--executor ray (head + worker node via `ray start` on loopback): same outcome per cell."""
    from .ray_demo import check_demo_on_a_two_node_cluster

    check_demo_on_a_two_node_cluster(demo[2], tmp_path)
