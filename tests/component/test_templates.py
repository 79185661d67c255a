"""Templates per (repository, SHA, assets): one build shared by tasks, built on one background thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from workflow_bench.cells.templates import TemplateCache, template_key
from workflow_bench.taskspec.spec import bind_tasks, load_task_file
from workflow_bench.toolkit.manifest import load_toolkit
from workflow_bench.workspace.clone import copy_clone

pytestmark = pytest.mark.component
DEMO_TASKS = Path(__file__).resolve().parents[2] / "tasks.scenarios.yaml"


def test_tasks_sharing_repository_and_commit_share_one_template_built_off_thread(tmp_path):
    bindings = bind_tasks(load_task_file(DEMO_TASKS))
    assert len({template_key(b) for b in bindings}) == 1  # the demo tasks all start at one commit
    lines: list[str] = []
    builders: set[str] = set()
    cache = TemplateCache(
        toolkit=load_toolkit("demo"),
        root=tmp_path / "templates",
        bwrap_bin="bwrap",
        progress=lines.append,
    )
    real_build = cache._build

    def build(binding, dest):
        builders.add(threading.current_thread().name)
        return real_build(binding, dest)

    cache._build = build
    try:
        cache.prefetch(bindings[1])
        contexts = [cache.context(b) for b in bindings]
    finally:
        cache.close()
    assert len(lines) == 1, lines  # built once
    assert {c.template for c in contexts} == {contexts[0].template}
    assert [c.binding for c in contexts] == list(bindings)
    assert all(name.startswith("template") for name in builders)
    clone = tmp_path / "clone"
    copy_clone(contexts[0].template, clone)
    assert (clone / ".git").is_dir() and not (clone / ".git").is_symlink()
    assert {p.relative_to(clone) for p in clone.rglob("*")} == {
        p.relative_to(contexts[0].template) for p in contexts[0].template.rglob("*")
    }
