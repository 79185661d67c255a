"""Bad input to ``tasks new``, ``tasks deps node`` and task runtimes: exit 2, the input named,
nothing written (no task file, no oracle or patch file, no ``node_modules``, no staging left).

- ``tasks new`` with a fix commit that does not exist, a fix patch that does not apply, a fix
  patch that changes nothing, a base that is not a commit, a repository that is not one;
- ``tasks new`` with a runtime the registry does not have, and one this harness does not know;
  and a python runtime that is honoured: the fix's tests assert the interpreter's exact version,
  so the task discriminates with ``--runtime python=X.Y.Z`` and not without it;
- ``tasks new --prompt-template`` (the prompt is that template, filled in) and ``--test-command``
  (the oracle and verify run it: the fix's test passes only under it, so the task discriminates
  with the flag and not without), and each flag's bad input (a missing template, a field it does
  not know, a command without ``{files}``); a staging directory a killed run left beside the task
  file is removed by the next ``tasks new``;
- ``tasks deps node`` with a lockfile that does not install (out of step with package.json),
  and with no lockfile at all.

The positive control, on the same repository: ``tasks new`` from its fix commit, and from the
same fix as a patch, writes the task (exit 0, the same reference patch), so each refusal is the
input's doing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.builders import git_in
from workflow_bench.tasks.__main__ import main as tasks_main
from workflow_bench.tasks.draft import STAGING_PREFIX

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path) -> Path:
    """A two-commit repository: a bug, then its fix with a unittest test."""
    repo = tmp_path / "calc"
    (repo / "tests").mkdir(parents=True)
    git_in(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def total(a, b):\n    return a - b\n")
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_calc.py").write_text(
        "import unittest\n\nimport calc\n\n\nclass Calc(unittest.TestCase):\n"
        "    def test_zero(self):\n        self.assertEqual(calc.total(0, 0), 0)\n"
    )
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-q", "-m", "calc 1.0")
    (repo / "calc.py").write_text("def total(a, b):\n    return a + b\n")
    with (repo / "tests" / "test_calc.py").open("a") as handle:
        handle.write("\n    def test_sum(self):\n        self.assertEqual(calc.total(2, 3), 5)\n")
    git_in(repo, "commit", "-q", "-am", "calc 1.1: total adds")
    return repo


def _new(repo: Path, tasks: Path, *extra: str) -> list[str]:
    return ["new", "--repo", str(repo), "--base", "HEAD~1", "--tasks", str(tasks), "--repeats", "1", *extra]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_tasks_new_refuses_bad_input_and_writes_nothing(repo, tmp_path, capsys, private_tmpdir):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    tasks = corpus / "tasks.yaml"
    bad_patch = tmp_path / "bad.patch"
    bad_patch.write_text(
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def nope():\n-    pass\n+    return 1\n"
    )
    empty_patch = tmp_path / "empty.patch"
    empty_patch.write_text("")
    repo_state = git_in(repo, "status", "--porcelain", "--ignored"), git_in(repo, "rev-parse", "HEAD")
    cases = [
        (_new(repo, tasks, "--fix", "0123456789abcdef0123456789abcdef01234567"), "0123456789ab"),
        (_new(repo, tasks, "--fix", "no-such-branch"), "no-such-branch"),
        (_new(repo, tasks, "--fix-patch", str(bad_patch)), "does not apply"),
        (_new(repo, tasks, "--fix-patch", str(empty_patch)), "empty.patch"),
        (_new(repo, tasks, "--fix-patch", str(tmp_path / "missing.patch")), "missing.patch"),
        (["new", "--repo", str(repo), "--base", "nope", "--fix", "HEAD", "--tasks", str(tasks)], "nope"),
        (["new", "--repo", str(tmp_path), "--base", "HEAD~1", "--fix", "HEAD", "--tasks", str(tasks)],
         str(tmp_path)),
        (_new(repo, tasks, "--fix", "HEAD", "--runtime", "node"), "NAME=VERSION"),
        (_new(repo, tasks, "--fix", "HEAD", "--runtime", "cobol=1.0"), "cobol"),
    ]  # fmt: skip
    for argv, named in cases:
        code = tasks_main(argv)
        captured = capsys.readouterr()
        assert code == 2, (argv, captured.out, captured.err)
        assert named in captured.err and "Traceback" not in captured.err, (argv, captured.err)
        assert not any(corpus.iterdir()), argv
    assert (
        git_in(repo, "status", "--porcelain", "--ignored"),
        git_in(repo, "rev-parse", "HEAD"),
    ) == repo_state


def test_tasks_new_refuses_a_runtime_the_registry_does_not_have(repo, tmp_path, capsys, private_tmpdir):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    code = tasks_main(_new(repo, corpus / "tasks.yaml", "--fix", "HEAD", "--runtime", "node=99.0.1"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "99.0.1" in err and "Traceback" not in err
    assert not any(corpus.iterdir())


def test_tasks_new_positive_control_writes_the_task(repo, tmp_path, capsys, bwrap_bin, private_tmpdir):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    code = tasks_main(_new(repo, corpus / "tasks.yaml", "--fix", "HEAD", "--id", "calc-sum"))
    out = capsys.readouterr().out
    assert code == 0, out
    written = _tree(corpus)
    assert {"tasks.yaml", "tasks.lock.json", "reference/calc-sum.patch"} <= set(written)
    assert b"return a + b" in written["reference/calc-sum.patch"]
    assert b"test_sum" not in written["reference/calc-sum.patch"]  # the test change is the oracle's
    # The same fix given as a patch against the base: the same reference patch.
    fix = tmp_path / "fix.patch"
    fix.write_text(git_in(repo, "diff", "HEAD~1", "HEAD") + "\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    code = tasks_main(_new(repo, mine / "tasks.yaml", "--fix-patch", str(fix), "--id", "calc-sum"))
    assert code == 0, capsys.readouterr().out
    assert (mine / "reference" / "calc-sum.patch").read_bytes() == written["reference/calc-sum.patch"]


def test_tasks_deps_node_refuses_a_lockfile_that_does_not_install(tmp_path, capsys):
    project = tmp_path / "web"
    project.mkdir()
    # The lockfile does not hold what package.json asks for: npm ci refuses it (offline).
    manifest = {"name": "web", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}}
    (project / "package.json").write_text(json.dumps(manifest))
    (project / "package-lock.json").write_text(
        json.dumps(
            {"name": "web", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
             "packages": {"": {"name": "web", "version": "1.0.0"}}}
        )
    )  # fmt: skip
    before = _tree(project)
    code = tasks_main(["deps", "node", "--project", str(project)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "package-lock.json does not install (npm, exit 1): " in err and "Traceback" not in err
    assert "Missing: left-pad@1.3.0 from lock file" in err  # npm's reason, not its usage text
    assert not (project / "node_modules").exists() and _tree(project) == before
    (project / "package-lock.json").unlink()
    code = tasks_main(["deps", "node", "--project", str(project)])
    err = capsys.readouterr().err
    assert code == 2 and "lockfile" in err.lower(), err
    assert not (project / "node_modules").exists()


def _fix_test_refused_by_default(repo: Path, tmp_path: Path, capsys, test: str) -> None:
    """Add ``test`` to the fix's test class (still two commits: base, fix) and show that plain
    ``tasks new`` refuses the task (exit 1, no task file written; the refused draft is kept in
    ``tasks.refused/`` to re-run): it passes only with the flag under test."""
    with (repo / "tests" / "test_calc.py").open("a") as handle:
        handle.write(test)
    git_in(repo, "commit", "-q", "-a", "--amend", "--no-edit")
    without = tmp_path / "without"
    without.mkdir()
    assert tasks_main(_new(repo, without / "tasks.yaml", "--fix", "HEAD")) == 1
    capsys.readouterr()
    assert [p.name for p in without.iterdir()] == ["tasks.refused"]


def test_a_python_runtime_is_the_interpreter_the_task_runs(
    repo, tmp_path, capsys, bwrap_bin, other_python, private_tmpdir
):
    """``--runtime python=X.Y.Z``: the oracle runs under that interpreter, not the host's /usr one.

    The fix's tests assert the exact version, so the task discriminates only if the runtime is
    the one the sandbox runs (negative control: without it, the reference run fails them)."""
    version = other_python
    _fix_test_refused_by_default(
        repo,
        tmp_path,
        capsys,
        "\n    def test_runtime(self):\n        import sys\n"
        f"        self.assertEqual('%d.%d.%d' % sys.version_info[:3], {version!r})\n",
    )
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    code = tasks_main(_new(repo, corpus / "tasks.yaml", "--fix", "HEAD", "--runtime", f"python={version}"))
    assert code == 0, capsys.readouterr().out
    (task,) = yaml.safe_load((corpus / "tasks.yaml").read_text())["tasks"]
    assert task["runtimes"] == {"python": version}


def test_tasks_new_prompt_template_is_the_prompt_written(repo, tmp_path, capsys, bwrap_bin, private_tmpdir):
    """``--prompt-template``: the task's prompt is that template with its fields filled in, not
    the shipped one. On the way, a staging directory a killed run left beside the task file (named
    for a pid that is gone) is removed and said so."""
    template = tmp_path / "mine.txt"
    template.write_text("In {repo_name}, {source_files} ({modules}) misbehaves; {test_framework} says so.\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    left = corpus / f"{STAGING_PREFIX}{int(dead.stdout)}-abcdefgh"
    (left / "reference").mkdir(parents=True)
    (left / "reference" / "x.patch").write_text("left by a killed run\n")
    code = tasks_main(
        _new(
            repo,
            corpus / "tasks.yaml",
            "--fix",
            "HEAD",
            "--id",
            "calc-sum",
            "--prompt-template",
            str(template),
        )
    )
    out = capsys.readouterr().out
    assert code == 0, out
    (task,) = yaml.safe_load((corpus / "tasks.yaml").read_text())["tasks"]
    assert task["prompt"] == "In this repository, `calc.py` (`calc.py`) misbehaves; unittest says so.\n"
    assert "prompt: from mine.txt" in out
    assert not left.exists() and f"[new] removed {left.name}, a staging directory left by a run" in out
    assert not [p for p in corpus.iterdir() if p.name.startswith(STAGING_PREFIX)]


def test_tasks_new_test_command_is_the_runner_the_task_judges_with(
    repo, tmp_path, capsys, bwrap_bin, private_tmpdir
):
    """``--test-command``: the oracle and verify run that command, with the test files where
    ``{files}`` is. The fix's new test passes only under it (it reads a variable the command sets),
    so the task discriminates with the flag and not without it (negative control: the detected
    unittest runs the same test without the variable, and the reference run fails it)."""
    _fix_test_refused_by_default(
        repo,
        tmp_path,
        capsys,
        "\n    def test_runner(self):\n        import os\n"
        "        self.assertEqual(os.environ.get('CALC_RUNNER'), 'custom')\n",
    )
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    command = 'CALC_RUNNER=custom python3 -B "$WORKFLOW_BENCH_UNITTEST" {files}'
    code = tasks_main(_new(repo, corpus / "tasks.yaml", "--fix", "HEAD", "--test-command", command))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "framework: --test-command, as given" in out
    (task,) = yaml.safe_load((corpus / "tasks.yaml").read_text())["tasks"]
    ran = 'CALC_RUNNER=custom python3 -B "$WORKFLOW_BENCH_UNITTEST" tests/test_calc.py'
    assert task["oracle"]["command"].endswith(f"&& {ran}") and task["verify"] == ran
    assert "test_runner" in (corpus / "tasks.lock.json").read_text()


def test_tasks_new_bad_prompt_template_or_test_command_exits_2_naming_the_flag(
    repo, tmp_path, capsys, private_tmpdir
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    tasks = corpus / "tasks.yaml"
    unknown = tmp_path / "unknown.txt"
    unknown.write_text("Fix {repo_name} in {nope}.\n")
    cases = [
        (["--prompt-template", str(tmp_path / "gone.txt")], ["--prompt-template", "gone.txt"]),
        (["--prompt-template", str(unknown)], ["--prompt-template", "unknown.txt", "{nope}"]),
        (["--test-command", "python3 -m unittest"], ["--test-command", "{files}"]),
    ]
    for extra, named in cases:
        code = tasks_main(_new(repo, tasks, "--fix", "HEAD", *extra))
        captured = capsys.readouterr()
        assert code == 2, (extra, captured.out, captured.err)
        assert all(n in captured.err for n in named) and "Traceback" not in captured.err, captured.err
        assert not any(corpus.iterdir()), extra
