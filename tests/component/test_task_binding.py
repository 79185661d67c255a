"""Binding with real git: repositories and bundles resolve to immutable SHAs, the bundle cache
is content-addressed and atomic, oracles are captured into the binding, digests are stable."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from workflow_bench.tasks import TaskFileError, bind_tasks, cache_root, load_task_file

pytestmark = pytest.mark.component

ORACLE_SOURCE = "oracles/t.oracle_test.py"


def git(repo: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("WORKFLOW_BENCH_CACHE", str(cache))
    return cache


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, object]:
    """``corpus/repo`` with two commits on main, ``corpus/demo.bundle`` of it, and an oracle file."""
    root = tmp_path / "corpus"
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-q", "-am", "two")
    second = git(repo, "rev-parse", "HEAD")
    git(repo, "bundle", "create", "-q", str(root / "demo.bundle"), "--all")
    (root / "oracles").mkdir()
    (root / ORACLE_SOURCE).write_text("import unittest\n")
    return {"root": root, "repo": repo, "first": first, "second": second}


def write_tasks(root: Path, **fields: object) -> Path:
    entry = {
        "id": "t",
        "class": "trivial",
        "repo": "demo.bundle",
        "prompt": "p",
        "verify": "true",
        "oracle": {
            "command": "python3 x.py",
            "files": [{"source": ORACLE_SOURCE, "target": "t_oracle_test.py"}],
        },
    }
    entry.update(fields)
    path = root / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": [entry]}))
    return path


def test_repository_binding(corpus: dict) -> None:
    root: Path = corpus["root"]
    (binding,) = bind_tasks(load_task_file(write_tasks(root, repo="repo", ref="main")))
    assert binding.resolved_sha == corpus["second"]
    assert binding.repo_path == corpus["repo"].resolve()
    assert binding.repo_identity == str(corpus["repo"].resolve())


def test_ancestor_sha_and_expressions_resolve(corpus: dict) -> None:
    root: Path = corpus["root"]
    (by_sha,) = bind_tasks(load_task_file(write_tasks(root, ref=corpus["first"])))
    (by_expr,) = bind_tasks(load_task_file(write_tasks(root, ref="main~1")))
    assert by_sha.resolved_sha == by_expr.resolved_sha == corpus["first"]


def test_bundle_is_cloned_once_into_the_content_addressed_cache(corpus: dict, isolated_cache: Path) -> None:
    root: Path = corpus["root"]
    specs = load_task_file(write_tasks(root))
    (binding,) = bind_tasks(specs)
    digest = hashlib.sha256((root / "demo.bundle").read_bytes()).hexdigest()
    assert binding.repo_path == isolated_cache / "repos" / digest
    assert binding.repo_identity == f"bundle:sha256:{digest}"
    assert binding.resolved_sha == corpus["second"]
    assert git(binding.repo_path, "rev-parse", "--is-bare-repository") == "true"
    assert os.listdir(isolated_cache / "repos") == [digest]  # no temp dirs left behind
    marker = binding.repo_path / "reused-marker"
    marker.write_text("")
    (again,) = bind_tasks(specs)
    assert again.repo_path == binding.repo_path and marker.exists()  # reused, not re-cloned


def test_cache_defaults_to_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WORKFLOW_BENCH_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "workflow-bench"


def test_unknown_branch_in_a_bundle_fails_at_load(corpus: dict) -> None:
    path = write_tasks(corpus["root"], ref="no-such-branch")
    with pytest.raises(TaskFileError) as caught:
        load_task_file(path)
    (err,) = caught.value.errors
    assert (err.task_id, err.key) == ("t", "ref") and "refs/heads/main" in err.message
    assert str(err).startswith(f"{path}: task 't': ref: ")


def test_unknown_sha_in_a_bundle_fails_at_bind(corpus: dict) -> None:
    specs = load_task_file(write_tasks(corpus["root"], ref="0" * 40))  # knowable only after cloning
    with pytest.raises(TaskFileError) as caught:
        bind_tasks(specs)
    (err,) = caught.value.errors
    assert (err.task_id, err.key) == ("t", "ref") and "does not name a commit" in err.message


def test_bind_reports_every_broken_task(corpus: dict) -> None:
    root: Path = corpus["root"]
    (root / "oracles" / "t2.py").write_text("x = 1\n")
    entries = []
    for task_id, ref, source in (("t1", "1" * 40, ORACLE_SOURCE), ("t2", "main", "oracles/t2.py")):
        oracle = {"command": "c", "files": [{"source": source, "target": "o.py"}]}
        entry = {"id": task_id, "class": "c", "repo": "demo.bundle", "prompt": "p", "verify": "v"}
        entries.append({**entry, "ref": ref, "oracle": oracle})
    path = root / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": entries}))
    specs = load_task_file(path)
    (root / "oracles" / "t2.py").unlink()  # vanished between load and bind
    with pytest.raises(TaskFileError) as caught:
        bind_tasks(specs)
    assert [(e.task_id, e.key) for e in caught.value.errors] == [
        ("t1", "ref"),
        ("t2", "oracle.files[0].source"),
    ]


def test_binding_json_and_digest(corpus: dict) -> None:
    root: Path = corpus["root"]
    path = write_tasks(root, sandbox_copy=["a.txt"], sandbox_dependencies=[{"source": "x", "target": "y"}])
    (binding,) = bind_tasks(load_task_file(path))
    data = binding.to_json()
    assert set(data) == {
        "id",
        "class",
        "repo_identity",
        "ref",
        "prompt_digest",
        "setup_digest",
        "verify_digest",
        "expensive",
        "sandbox_copy",
        "sandbox_dependencies",
        "oracle_digest",
        "oracle_command_digest",
        "oracle_manifest_digest",
        "oracle_files",
        "resolved_sha",
    }
    assert data["sandbox_dependencies"] == [{"source": "x", "target": "y"}]
    assert data["oracle_files"] == [
        {
            "target": "t_oracle_test.py",
            "sha256": binding.oracle.files[0].sha256,
            "size": len("import unittest\n"),
        }
    ]
    (again,) = bind_tasks(load_task_file(path))
    assert again.binding_digest == binding.binding_digest
    (root / ORACLE_SOURCE).write_text("import unittest  # changed\n")
    (changed,) = bind_tasks(load_task_file(path))
    assert changed.binding_digest != binding.binding_digest
    assert changed.oracle.digest != binding.oracle.digest
    assert binding.oracle.files[0].data == b"import unittest\n"  # the old snapshot is untouched


def test_moving_the_corpus_keeps_a_bundle_binding_identical(corpus: dict, tmp_path: Path) -> None:
    root: Path = corpus["root"]
    write_tasks(root)
    (before,) = bind_tasks(load_task_file(root / "tasks.yaml"))
    moved = tmp_path / "moved" / "corpus"
    moved.parent.mkdir()
    shutil.move(root, moved)
    (after,) = bind_tasks(load_task_file(moved / "tasks.yaml"))
    assert after.binding_digest == before.binding_digest
    assert after.spec.source_file == moved / "tasks.yaml"
