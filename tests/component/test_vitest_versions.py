"""The vitest versions the docs claim, real, in the real sandbox: each route's test ids are the
same on its oldest and the newest claimed vitest, and carry no temporary path.

- **The JUnit route (vitest 3.0-3.1)**: on 3.0.5 (tools/test-frameworks-vitest30) ``tasks new``'s
  detection picks ``vitest-junit`` (3.0-3.1 load no reporter from outside the project), and the
  ids it reports (verify and oracle, each run from its own random directory) are the newest's
  (4.x, tools/test-frameworks) for the same project.
- **The streaming route (vitest >= 3.2)**: 3.2.0 (tools/test-frameworks-vitest3) reports the
  newest's ids (3.2 has no ``relativeModuleId``: the reporter computes the relative path itself).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.builders import git_in
from tests.conftest import link_tree
from tests.framework_projects import TS_ORACLE, TYPESCRIPT
from tests.framework_runs import TS_IDS, TS_SKIP
from tests.framework_runs import ids as _ids
from tests.framework_runs import lock as _lock
from tests.framework_runs import oracle as _oracle
from tests.framework_runs import oracle_snapshot as _oracle_snapshot
from tests.framework_runs import sandbox as _sandbox
from tests.framework_runs import verify as _verify
from tests.framework_runs import workspace as _workspace
from workflow_bench.tasks.new import NewTask, draft_task

pytestmark = pytest.mark.component
ORACLE_NAMES = ("counts down to just above the end", "skips values on the way down", "still counts up")


def _draft(tmp_path: Path, node_modules: Path):
    """``tasks new``'s draft (detection, commands) of TYPESCRIPT's fix with ``node_modules`` installed."""
    repo = tmp_path / f"repo-{node_modules.parent.name}"
    repo.mkdir()
    git_in(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("node_modules\n")
    for files, message in ((TYPESCRIPT.base, "base"), (TYPESCRIPT.fix, "fix")):
        for name, text in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git_in(repo, "add", "-A")
        git_in(repo, "commit", "-q", "-m", message)
    link_tree(node_modules, repo / "node_modules")
    request = NewTask(
        repo=repo, base="HEAD~1", fix="HEAD", tasks_file=tmp_path / "t.yaml", prompt=TYPESCRIPT.prompt
    )
    return draft_task(request)


def test_tasks_new_picks_junit_on_vitest_3_0_and_its_ids_are_the_newest_s(
    tmp_path, bwrap_bin, js_vitest30, js_frameworks
) -> None:
    old = _draft(tmp_path, js_vitest30)
    assert any(d.startswith("framework: vitest-junit (") and "vitest 3.0 < 3.2" in d for d in old.decisions)
    verify = old.draft.entry["verify"]
    assert "--reporter=junit" in verify and "WORKFLOW_BENCH_VITEST_REPORTER" not in verify, verify
    new = _draft(tmp_path, js_frameworks)
    assert any(d.startswith("framework: vitest (") for d in new.decisions), new.decisions
    # The same route, JUnit, on 3.0.5 and on the newest, each from a fresh random workspace.
    prefix = "test/range.test.ts::range > "
    lock = _lock([prefix + n for n in TS_IDS], [prefix + TS_SKIP])
    oracle_ids = [f"<oracle-root>/{TS_ORACLE}.oracle.test.ts::{name}" for name in ORACLE_NAMES]
    seen: dict[str, list[set[str]]] = {}
    for version, modules in (("3.0.5", js_vitest30), ("newest", js_frameworks), ("3.0.5", js_vitest30)):
        ws = _workspace(tmp_path, TYPESCRIPT, fixed=True)
        sandbox = _sandbox(ws, bwrap_bin, {"node_modules": modules})
        good = _verify(sandbox, verify, lock, tmp_path)
        assert good.passed, good.detail + good.output
        # The reference corpus's oracle line (vitest's own JUnit) staged in a random copy each run.
        oracle = _oracle(sandbox, _oracle_snapshot(TYPESCRIPT), _lock(oracle_ids), tmp_path)
        assert oracle.passed and oracle.sealed is True, oracle.detail
        ids = set(_ids(good)) | set(_ids(oracle))
        assert not [i for i in ids if ws.name in i or str(tmp_path) in i or "/tmp" in i], ids
        seen.setdefault(version, []).append(ids)
    assert seen["3.0.5"][0] == seen["3.0.5"][1] == seen["newest"][0]
    assert seen["newest"][0] == {prefix + n for n in (*TS_IDS, TS_SKIP)} | set(oracle_ids)


@pytest.fixture(params=["oldest", "newest"])
def claimed_vitest(request, tmp_path, bwrap_bin):
    """A sandbox factory with the oldest (3.2.0) or the newest (4.x, tools/test-frameworks) vitest
    the docs claim the streaming reporter supports."""
    modules = request.getfixturevalue("js_vitest3" if request.param == "oldest" else "js_frameworks")

    def make(*, fixed: bool):
        return _sandbox(_workspace(tmp_path, TYPESCRIPT, fixed=fixed), bwrap_bin, {"node_modules": modules})

    return make


def test_the_vitest_reporter_ids_are_the_same_on_the_oldest_and_newest_claimed_vitest(
    claimed_vitest, tmp_path
) -> None:
    # vitest 3.2 has no relativeModuleId: before the reporter computed the relative path itself,
    # its ids carried the absolute (for a reference clone, random) path, so a lock written on one
    # machine or clone named "other tests" on the next.
    command = './node_modules/.bin/vitest run --reporter=default --reporter="$WORKFLOW_BENCH_VITEST_REPORTER"'
    prefix = "test/range.test.ts > range > "
    lock = _lock([prefix + n for n in TS_IDS], [prefix + TS_SKIP])
    good = _verify(claimed_vitest(fixed=True), command, lock, tmp_path)
    assert good.passed, good.detail + good.output
    assert set(_ids(good)) == {prefix + n for n in (*TS_IDS, TS_SKIP)}
    oracle = TYPESCRIPT.oracle_command.replace(
        '--reporter=junit --outputFile="$WORKFLOW_BENCH_JUNIT"',
        '--reporter="$WORKFLOW_BENCH_VITEST_REPORTER"',
    )
    names = ("counts down to just above the end", "skips values on the way down", "still counts up")
    ids = [f"<oracle-root>/{TS_ORACLE}.oracle.test.ts > {name}" for name in names]
    snapshot = replace(_oracle_snapshot(TYPESCRIPT), command=oracle)
    fixed = _oracle(claimed_vitest(fixed=True), snapshot, _lock(ids), tmp_path)
    assert fixed.passed and fixed.sealed is True, fixed.detail
