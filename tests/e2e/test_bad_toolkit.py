"""An invalid --toolkit through runner.main(): exit 2 naming the toolkit file and key, nothing run."""

from __future__ import annotations

import shutil

import pytest

from workflow_bench import runner
from workflow_bench.toolkit.manifest import CORPUS_TOOLKIT, MANIFEST

from .conftest import DEMO_TASKS

pytestmark = pytest.mark.e2e
TASKS = DEMO_TASKS


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda text: text + "roles: {plan: plan}\n", "(yaml)"),  # duplicate key
        (lambda text: text.replace("review: review", "review: missing"), "roles.review"),
        (
            lambda text: text + "mcp_servers: [{name: g, command: rel, read_only_tools: [x]}]\n",
            "mcp_servers[0].command",
        ),
    ],
    ids=["duplicate-key", "missing-skill", "relative-server-command"],
)
def test_invalid_toolkit_exits_2_and_runs_nothing(edit, key, tmp_path, capsys):
    toolkit = tmp_path / "toolkit"
    shutil.copytree(CORPUS_TOOLKIT, toolkit)
    (toolkit / MANIFEST).write_text(edit((toolkit / MANIFEST).read_text()))
    out = tmp_path / "out"
    code = runner.main(
        ["--tasks", str(TASKS), "--provider", "scripted", "--toolkit", str(toolkit), "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{toolkit / MANIFEST}: {key}:" in err, err
    assert not out.exists()
