"""A repository larger than the cell's disk quota: harness work (the patch view) is never charged to it.

Issue 26: the patch view used to write a full-tree import stream into the cell's own volume, so
with ``--cell-disk-mib 16`` a cell of a 58 MB repository was ``resource-limit`` (charged to the
arm) before the agent did anything. The volume holds the clone plus the quota; the view lives
beside the cell directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.builders import git_in
from tests.conftest import needs_root
from workflow_bench import runner
from workflow_bench.tasks.__main__ import main as tasks_main

pytestmark = pytest.mark.e2e
QUOTA_MIB = 16
TREE_MIB = 40  # well over the quota: a full-tree stream on the volume overflows it
PASSING_TEST = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n"
ORACLE_COMMAND = 'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" "$WORKFLOW_BENCH_ORACLE_ROOT/big_oracle_test.py"'


@pytest.fixture
def big_corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    repo = corpus / "repo"
    (repo / "data").mkdir(parents=True)
    for index in range(TREE_MIB // 2):  # incompressible: the stream is as big as the tree
        (repo / "data" / f"blob{index:02d}.bin").write_bytes(os.urandom(2 << 20))
    (repo / "test_present.py").write_text(PASSING_TEST)
    git_in(repo, "init", "-q", "-b", "main")
    git_in(repo, "-c", "gc.auto=0", "add", "-A")
    git_in(repo, "-c", "gc.auto=0", "commit", "-q", "-m", "big")
    (corpus / "oracles").mkdir()
    (corpus / "oracles" / "big_oracle_test.py").write_text(PASSING_TEST)
    task = {
        "id": "big-repo",
        "class": "scale",
        "repo": "repo",
        "ref": "HEAD",
        "prompt": "Leave the repository as it is.",
        "verify": 'python3 -I -B "$WORKFLOW_BENCH_UNITTEST" test_present',
        "oracle": {
            "command": ORACLE_COMMAND,
            "files": [{"source": "oracles/big_oracle_test.py", "target": "big_oracle_test.py"}],
        },
    }
    path = corpus / "tasks.yaml"
    path.write_text(json.dumps({"tasks": [task]}))  # JSON is YAML
    return path


def test_a_repository_over_the_disk_quota_is_not_a_resource_limit_before_the_agent_acts(
    big_corpus, tmp_path, bwrap_bin, claude_bin, capsys
) -> None:
    needs_root("the cell's disk quota is its own loop volume")
    script = tmp_path / "noop.yaml"
    assert (
        tasks_main(["agent-script", "--tasks", str(big_corpus), "--agent", "noop", "--out", str(script)]) == 0
    )
    out = tmp_path / "out"
    code = runner.main(
        [
            "--tasks", str(big_corpus), "--provider", "scripted", "--script", str(script),
            "--arms", "baseline", "--runs", "1", "--cell-disk-mib", str(QUOTA_MIB), "--out", str(out),
        ]
    )  # fmt: skip
    capsys.readouterr()
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    # The quota was enforced by the cell's own volume, and the no-op agent was judged as such.
    assert row["resource_limits"]["disk_mib"] == QUOTA_MIB, row["resource_limits"]
    assert row["error_kind"] == "no-work-produced", (row["error_kind"], row["error_detail"])
    assert code in (0, 1)
