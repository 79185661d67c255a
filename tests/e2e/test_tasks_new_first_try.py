"""``tasks new`` on the first attempt: the friction cases of a new user's JavaScript fixes.

- **jest, files and options**: the detected jest command names the test files before
  ``--reporters=…`` (jest reads words after that array option as more reporters); a jest fix
  becomes a task with ``tasks new`` alone, its commands printed.
- **``--test-command`` keeps what detection found**: the ``node_modules`` mount and the ``tsc``
  type check stay (``--no-typecheck`` drops it); only the command is the user's.
- **A fixture-only fix**: a fix whose test side is a case table the spec file iterates names that
  spec file with ``--oracle-test``; it is staged from the base and run by the oracle.
- **A refusal keeps the draft**: a fix that does not discriminate writes nothing to the task file
  and keeps the draft, commands and all, in ``<stem>.refused/<id>/`` to re-run with ``tasks check``;
  ``--tasks`` in a missing directory creates it.
- **vitest 3.0, JUnit**: on vitest 3.0.5 (which loads no reporter from outside the project) ``tasks
  new`` alone picks vitest's own JUnit XML, and its lock names repository-relative ids that a
  second ``tasks check`` confirms.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from tests.conftest import link_tree, short_dir
from tests.fix_tasks import fix_repo
from workflow_bench.tasks.__main__ import main as tasks_main
from workflow_bench.tasks.new import NewTask, draft_task

pytestmark = pytest.mark.e2e
PROMPT = "clamp returns the lower bound above the range.\n"
CLAMP = "function clamp(v, lo, hi) {\n  if (v < lo) return lo;\n  if (v > hi) return lo;\n  return v;\n}\n"
FIXED = CLAMP.replace("if (v > hi) return lo", "if (v > hi) return hi")


def _repo(root: Path, base: dict[str, str], fix: dict[str, str], node_modules: Path | None) -> Path:
    fix_repo(root, {".gitignore": "node_modules\n", **base}, fix, message="fix")
    if node_modules is not None:
        link_tree(node_modules, root / "node_modules")
    return root


def _new(argv: list[str]) -> int:
    with short_dir() as tmpdir, pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(tmpdir))
        return tasks_main(argv)


JEST_BASE = {
    "package.json": '{"name": "clampy", "private": true, "devDependencies": {"jest": "*"}}\n',
    "src/clamp.js": CLAMP + "module.exports = { clamp };\n",
    "src/clamp.test.js": (
        "const { clamp } = require('./clamp');\ntest('low', () => expect(clamp(-1, 0, 5)).toBe(0));\n"
    ),
}
JEST_FIX = {
    "src/clamp.js": FIXED + "module.exports = { clamp };\n",
    "src/clamp-high.test.js": (
        "const { clamp } = require('./clamp');\ntest('high', () => expect(clamp(9, 0, 5)).toBe(5));\n"
    ),
}


def test_a_jest_fix_becomes_a_task_with_tasks_new_alone_files_before_options(
    tmp_path, js_frameworks, bwrap_bin, capsys
) -> None:
    repo = _repo(tmp_path / "clampy", JEST_BASE, JEST_FIX, js_frameworks)
    tasks = tmp_path / "new-dir" / "tasks.yaml"  # a missing directory: created
    argv = ["new", "--repo", str(repo), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)]
    code = _new([*argv, "--prompt", PROMPT, "--id", "jest-clamp", "--repeats", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    (task,) = yaml.safe_load(tasks.read_text())["tasks"]
    assert task["verify"].startswith("./node_modules/.bin/jest src/clamp.test.js --ci --reporters=default")
    assert task["oracle"]["command"].endswith(
        'jest src/clamp-high.test.js --ci --reporters=default --reporters="$WORKFLOW_BENCH_JEST_REPORTER"'
    )
    # Every generated command is printed.
    assert f"[new] verify command: {task['verify']}" in out and "[new] oracle command: " in out


TS_BASE = {
    "package.json": (
        '{"name": "clampts", "private": true, "type": "module", "devDependencies": {"vitest": "*"}}\n'
    ),
    "tsconfig.json": '{"compilerOptions": {"strict": true, "noEmit": true, "module": "esnext", '
    '"moduleResolution": "bundler", "target": "es2022"}, "include": ["src"]}\n',
    "src/clamp.ts": "export function clamp(v: number, lo: number, hi: number): number {\n"
    "  if (v < lo) return lo;\n  if (v > hi) return lo;\n  return v;\n}\n",
    "src/clamp.test.ts": "import { expect, test } from 'vitest';\nimport { clamp } from './clamp';\n"
    "test('low', () => expect(clamp(-1, 0, 5)).toBe(0));\n",
}
TS_FIX = {
    "src/clamp.ts": TS_BASE["src/clamp.ts"].replace("if (v > hi) return lo", "if (v > hi) return hi"),
    "src/clamp-high.test.ts": "import { expect, test } from 'vitest';\nimport { clamp } from './clamp';\n"
    "test('high', () => expect(clamp(9, 0, 5)).toBe(5));\n",
}
MY_COMMAND = './node_modules/.bin/vitest run --reporter="$WORKFLOW_BENCH_VITEST_REPORTER" {files}'


def test_a_test_command_keeps_the_detected_node_modules_mount_and_type_check(tmp_path, js_frameworks) -> None:
    repo = _repo(tmp_path / "clampts", TS_BASE, TS_FIX, js_frameworks)
    request = NewTask(
        repo=repo, base="HEAD~1", fix="HEAD", tasks_file=tmp_path / "t.yaml", test_command=MY_COMMAND
    )
    entry = draft_task(request).draft.entry
    assert entry["sandbox_dependencies"] == [{"source": "node_modules", "target": "node_modules"}]
    assert entry["verify"] == "./node_modules/.bin/tsc -p . --noEmit && " + MY_COMMAND.replace(
        "{files}", "src/clamp.test.ts"
    )
    # Told otherwise, it does otherwise.
    quiet = draft_task(replace(request, typecheck=False)).draft.entry
    assert "tsc" not in quiet["verify"]


CASES_BASE = {
    "package.json": TS_BASE["package.json"],
    "src/clamp.ts": TS_BASE["src/clamp.ts"],
    "src/clamp.spec.ts": "import { expect, test } from 'vitest';\nimport { clamp } from './clamp';\n"
    "import cases from '../test/fixtures/cases.json';\n"
    "for (const [v, want] of cases) test(`clamp ${v}`, () => expect(clamp(v, 0, 5)).toBe(want));\n",
    "test/fixtures/cases.json": "[[-1, 0]]\n",
}
CASES_FIX = {"src/clamp.ts": TS_FIX["src/clamp.ts"], "test/fixtures/cases.json": "[[-1, 0], [9, 5]]\n"}


def test_a_fixture_only_fix_names_the_spec_file_that_exercises_it(
    tmp_path, js_frameworks, bwrap_bin, capsys
) -> None:
    repo = _repo(tmp_path / "cases", CASES_BASE, CASES_FIX, js_frameworks)
    tasks = tmp_path / "tasks.yaml"
    argv = ["new", "--repo", str(repo), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)]
    argv += ["--prompt", PROMPT, "--id", "cases", "--repeats", "1", "--no-typecheck"]
    assert _new(argv) == 2 and "--oracle-test" in capsys.readouterr().err  # what to do, named
    code = _new([*argv, "--oracle-test", "src/clamp.spec.ts"])
    out = capsys.readouterr().out
    assert code == 0, out
    (task,) = yaml.safe_load(tasks.read_text())["tasks"]
    assert sorted(f["target"] for f in task["oracle"]["files"]) == [
        "src/clamp.spec.ts",
        "test/fixtures/cases.json",
    ]
    assert task["oracle"]["command"].endswith(" src/clamp.spec.ts")


def test_a_refused_draft_is_kept_to_re_run_and_the_task_file_untouched(tmp_path, bwrap_bin, capsys) -> None:
    # The fix's new test passes on the base too: it cannot discriminate.
    base = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "test_calc.py": (
            "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
            "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"
        ),
    }
    fix = {
        "calc.py": base["calc.py"] + "\n# faster\n",
        "test_calc_more.py": base["test_calc.py"].replace("T(", "U("),
    }
    repo = _repo(tmp_path / "calc", base, fix, None)
    tasks = tmp_path / "tasks.yaml"
    argv = ["new", "--repo", str(repo), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)]
    code = _new([*argv, "--prompt", PROMPT, "--id", "calc-noop", "--repeats", "1"])
    out = capsys.readouterr().out
    assert code == 1 and not tasks.exists(), out
    kept = tmp_path / "tasks.refused" / "calc-noop" / "tasks.yaml"
    (task,) = yaml.safe_load(kept.read_text())["tasks"]
    assert f"re-run it with `python -m workflow_bench.tasks check --tasks {kept}`" in out
    assert (kept.parent / task["oracle"]["files"][0]["source"]).is_file()
    assert f"[new] oracle command: {task['oracle']['command']}" in out


def test_the_placeholder_prompt_is_refused_by_tasks_check_and_the_runner(tmp_path, bwrap_bin, capsys) -> None:
    test = (
        "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n"
    )
    base = {
        "calc.py": "def add(a, b):\n    return a - b\n",
        "test_calc.py": test + "        self.assertEqual(add(1, 0), 1)\n",
    }
    fix = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "test_sum.py": test + "        self.assertEqual(add(1, 2), 3)\n",
    }
    repo = _repo(tmp_path / "calc", base, fix, None)
    tasks = tmp_path / "tasks.yaml"
    argv = ["new", "--repo", str(repo), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)]
    assert _new([*argv, "--id", "calc-sum", "--repeats", "1"]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert tasks_main(["check", "--tasks", str(tasks), "--repeats", "1"]) == 2
    refusal = f"{tasks}: task 'calc-sum': prompt: still the placeholder"
    assert refusal in capsys.readouterr().err
    from workflow_bench import runner

    argv = ["--tasks", str(tasks), "--provider", "scripted", "--dry-run", "--out", str(tmp_path / "out")]
    assert runner.main(argv) == 2
    assert refusal in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    # Negative control: the same task with a real prompt passes the same gate.
    tasks.write_text(
        tasks.read_text().replace("TODO: describe the problem", "Adding subtracts. Was: describe")
    )
    assert tasks_main(["check", "--tasks", str(tasks), "--repeats", "1", "--frozen"]) != 2


def test_a_vitest_3_0_fix_becomes_a_task_with_tasks_new_alone_its_lock_naming_stable_ids(
    tmp_path, js_vitest30, bwrap_bin, capsys
) -> None:
    # vitest 3.0-3.1 load no reporter from outside the project: the streaming reporter cannot run,
    # and once its ids carried the oracle copy's random path. Detection picks vitest's own JUnit.
    repo = _repo(tmp_path / "clamp30", TS_BASE, TS_FIX, js_vitest30)
    tasks = tmp_path / "tasks.yaml"
    argv = ["new", "--repo", str(repo), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)]
    code = _new([*argv, "--prompt", PROMPT, "--id", "clamp30", "--repeats", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "[new] framework: vitest-junit (" in out and "vitest 3.0 < 3.2: JUnit XML" in out, out
    (task,) = yaml.safe_load(tasks.read_text())["tasks"]
    assert task["verify"] == (
        "./node_modules/.bin/vitest run --reporter=default --reporter=junit "
        '--outputFile.junit="$WORKFLOW_BENCH_JUNIT" src/clamp.test.ts'
    )
    # The oracle ran in a fresh `mktemp -d` copy: its ids name repository paths, not that copy.
    lock = json.loads((tmp_path / "tasks.lock.json").read_text())["tasks"]["clamp30"]
    assert lock["verify"] == {"passed": ["src/clamp.test.ts::low"], "skipped": []}
    assert lock["oracle"] == {"passed": ["src/clamp-high.test.ts::high"], "skipped": []}
    # Checked again (three more runs, each in new random directories), the same ids: the lock stays.
    before = (tmp_path / "tasks.lock.json").read_text()
    assert _new(["check", "--tasks", str(tasks)]) == 0
    out = capsys.readouterr().out
    assert "3/3         3/3" in out and "tests changed" not in out, out
    assert (tmp_path / "tasks.lock.json").read_text() == before
