"""The oracle and no-op agent scripts: every implementation arm's sessions, each skill invoked first.

The scripted provider serves a cell the first entry whose match accepts it, so these tests read
the generated script the way the provider does (``Script.cell_for``) after validating it with
the provider's own loader. Negative controls: a skill arm whose session does not call Skill first
would be ``skill-not-invoked`` in a sweep; a plan session that applied the patch would be
``plan-evidence-invalid`` (it may only write its plan document); the no-op agent must never run
a command.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import task_entry, write_tasks
from workflow_bench.arms import ARMS, DEFAULT_ARMS
from workflow_bench.providers.scripted import load_script
from workflow_bench.tasks.agents import AgentScriptError, agent_script, scripted_arms
from workflow_bench.taskspec.spec import bind_tasks, load_task_file
from workflow_bench.toolkit.manifest import load_toolkit

pytestmark = pytest.mark.unit
PATCH = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-demo\n+fixed\n"


def _bindings(corpus: Path, **overrides: object):
    (corpus / "fix.patch").write_text(PATCH)
    entry = task_entry(reference_patch="fix.patch", **overrides)
    return bind_tasks(load_task_file(write_tasks(corpus, entry)))


def _served(script: dict, tmp_path: Path):
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False))
    return load_script(path)


def _calls(session) -> list[tuple[str, dict]]:
    return [(c.name, dict(c.input)) for t in session.turns for c in t.tool_calls]


@pytest.mark.parametrize("agent", ["oracle", "noop"])
def test_every_skill_session_invokes_its_skill_first_on_every_arm(corpus, tmp_path, agent) -> None:
    toolkit = load_toolkit("demo")
    script = _served(
        agent_script(_bindings(corpus), agent=agent, toolkit=toolkit, comparator="compound-demo"), tmp_path
    )
    arms = scripted_arms(comparator="compound-demo")
    assert set(DEFAULT_ARMS) <= {a.name for a in arms}
    assert {a.name for a in arms} == {a.name for a in ARMS.values() if a.implementation}
    for arm in arms:
        cell = script.cell_for(task="t1", arm=arm.name)
        assert cell is not None and len(cell.sessions) == len(arm.sessions), arm.name
        for spec, session in zip(arm.sessions, cell.sessions, strict=True):
            calls = _calls(session)
            if spec.skill_role is None:
                assert not any(name == "Skill" for name, _ in calls), arm.name
                continue
            expected = (
                f"compound-demo:ce-{'code-review' if spec.skill_role == 'review' else spec.skill_role}"
                if arm.family == "comparator"
                else toolkit.skill_for(spec.skill_role)
            )
            assert calls[0] == ("Skill", {"skill": expected}), (arm.name, calls)
            # The skill's result comes back before the model does anything else.
            assert len(session.turns[0].tool_calls) == 1


def test_the_oracle_applies_the_patch_once_per_cell_and_plans_write_only_the_plan(corpus, tmp_path) -> None:
    script = _served(agent_script(_bindings(corpus), agent="oracle", toolkit=load_toolkit("demo")), tmp_path)
    for arm in scripted_arms(comparator=None):
        cell = script.cell_for(task="t1", arm=arm.name)
        assert cell is not None
        applies = 0
        for spec, session in zip(arm.sessions, cell.sessions, strict=True):
            calls = [c for c in _calls(session) if c[0] != "Skill"]
            if spec.phase == "plan":
                assert [(n, i["file_path"]) for n, i in calls] == [("Write", "{cwd}/docs/plans/t1.md")]
            else:
                assert [n for n, _ in calls] == ["Bash"]
                assert PATCH in calls[0][1]["command"] and "git apply" in calls[0][1]["command"]
                applies += 1
        assert applies == 1, arm.name


def test_the_noop_agent_runs_no_command_and_the_ce_arms_need_the_plugin_name(corpus, tmp_path) -> None:
    script = _served(agent_script(_bindings(corpus), agent="noop", toolkit=load_toolkit("demo")), tmp_path)
    for arm in scripted_arms(comparator=None):
        cell = script.cell_for(task="t1", arm=arm.name)
        assert cell is not None
        assert not any(name == "Bash" for s in cell.sessions for name, _ in _calls(s)), arm.name
    # Without the plugin's name the ce_* arms stay unscripted (their skills are <plugin>:ce-*).
    assert script.cell_for(task="t1", arm="ce_workflow") is None
    assert all(a.family != "comparator" for a in scripted_arms(comparator=None))


def test_a_task_without_a_reference_patch_cannot_be_played_by_the_oracle(corpus) -> None:
    bindings = bind_tasks(load_task_file(write_tasks(corpus, task_entry())))
    with pytest.raises(AgentScriptError, match="has no reference_patch"):
        agent_script(bindings, agent="oracle", toolkit=load_toolkit("demo"))
    assert agent_script(bindings, agent="noop", toolkit=load_toolkit("demo"))["cells"]
