"""Binding with real git: repositories and bundles resolve to immutable SHAs, the bundle cache
is content-addressed and atomic, oracles are captured into the binding, digests are stable, and
sandbox sources resolve inside a repository's working tree with a manifest digest."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
import yaml

from tests.builders import git_in
from workflow_bench.taskspec import spec as tasks
from workflow_bench.taskspec.repos import WorktreeError, tree_manifest
from workflow_bench.taskspec.spec import TaskFileError, bind_tasks, cache_root, load_task_file

pytestmark = pytest.mark.component

ORACLE_SOURCE = "oracles/t.oracle_test.py"


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
    git_in(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-q", "-m", "one")
    first = git_in(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("two\n")
    git_in(repo, "commit", "-q", "-am", "two")
    second = git_in(repo, "rev-parse", "HEAD")
    git_in(repo, "bundle", "create", "-q", str(root / "demo.bundle"), "--all")
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
    assert git_in(binding.repo_path, "rev-parse", "--is-bare-repository") == "true"
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
    (corpus["repo"] / "x").mkdir()  # sandbox sources need a working tree, so not the bundle
    path = write_tasks(
        root, repo="repo", sandbox_copy=["a.txt"], sandbox_dependencies=[{"source": "x", "target": "y"}]
    )
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
        "verify_min_tests",
        "oracle_min_tests",
        "expensive",
        "sandbox_copy",
        "sandbox_dependencies",
        "dependency_manifest_digest",
        "oracle_digest",
        "oracle_command_digest",
        "oracle_manifest_digest",
        "oracle_files",
        "resolved_sha",
        "expected_tests_digest",
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


# ── sandbox_copy / sandbox_dependencies ────────────────────────────────────


@pytest.fixture
def worktree_assets(corpus: dict) -> Path:
    """Untracked files in ``corpus/repo``'s working tree: ``data.txt`` and a ``deps/`` tree."""
    repo: Path = corpus["repo"]
    (repo / "data.txt").write_text("data\n")
    deps = repo / "deps" / "pkg"
    deps.mkdir(parents=True)
    (deps / "index.js").write_text("module.exports = 1;\n")
    (repo / "deps" / ".bin").mkdir()
    (repo / "deps" / ".bin" / "tool").symlink_to("../pkg/index.js")
    return repo


def bind_errors(path: Path) -> list[tuple[str | None, str, str]]:
    with pytest.raises(TaskFileError) as caught:
        bind_tasks(load_task_file(path))
    return [(e.task_id, e.key, e.message) for e in caught.value.errors]


def test_working_tree_sources_bind_to_absolute_paths(corpus: dict, worktree_assets: Path) -> None:
    path = write_tasks(
        corpus["root"],
        repo="repo",
        sandbox_copy=["data.txt", "deps/pkg"],
        sandbox_dependencies=[{"source": "deps", "target": "node_modules"}],
    )
    (binding,) = bind_tasks(load_task_file(path))
    repo = worktree_assets.resolve()
    assert binding.copy_paths == ((repo / "data.txt", "data.txt"), (repo / "deps" / "pkg", "deps/pkg"))
    assert binding.dependency_mounts == ((repo / "deps", "node_modules"),)
    assert all(source.is_absolute() for source, _ in binding.copy_paths + binding.dependency_mounts)
    digest = binding.dependency_manifest_digest
    assert digest is not None and len(digest) == 64
    assert binding.to_json()["dependency_manifest_digest"] == digest
    assert not {"copy_paths", "dependency_mounts"} & set(binding.to_json())  # host paths stay out


def test_no_sandbox_sources_means_no_manifest(corpus: dict) -> None:
    (binding,) = bind_tasks(load_task_file(write_tasks(corpus["root"], repo="repo")))
    assert (binding.copy_paths, binding.dependency_mounts, binding.dependency_manifest_digest) == (
        (),
        (),
        None,
    )
    assert binding.to_json()["dependency_manifest_digest"] is None


@pytest.mark.parametrize("key", ["sandbox_copy", "sandbox_dependencies"])
def test_a_bundle_has_no_working_tree(corpus: dict, key: str) -> None:
    value = ["a.txt"] if key == "sandbox_copy" else [{"source": "deps", "target": "deps"}]
    path = write_tasks(corpus["root"], **{key: value})  # repo: demo.bundle
    ((task_id, err_key, message),) = bind_errors(path)
    assert (task_id, err_key) == ("t", key)
    assert "needs a repository with a working tree; bundles have none" in message


def test_a_bare_repository_has_no_working_tree(corpus: dict) -> None:
    git_in(corpus["root"], "clone", "-q", "--bare", str(corpus["repo"]), str(corpus["root"] / "bare.git"))
    path = write_tasks(corpus["root"], repo="bare.git", sandbox_copy=["a.txt"])
    ((_, key, message),) = bind_errors(path)
    assert key == "sandbox_copy" and "bare repositories have none" in message


def test_dotdot_escape_is_rejected_at_load(corpus: dict) -> None:
    path = write_tasks(corpus["root"], repo="repo", sandbox_dependencies=[{"source": "../x", "target": "x"}])
    with pytest.raises(TaskFileError) as caught:
        load_task_file(path)
    assert [e.key for e in caught.value.errors] == ["sandbox_dependencies[0].source"]


def test_symlink_escapes_are_rejected_at_bind(corpus: dict, worktree_assets: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s\n")
    (worktree_assets / "escape").symlink_to(outside)
    (worktree_assets / "meta").symlink_to(".git")
    path = write_tasks(
        corpus["root"],
        repo="repo",
        sandbox_copy=["data.txt", "escape/secret.txt", "meta/config"],
        sandbox_dependencies=[{"source": "deps", "target": "d"}, {"source": "escape", "target": "e"}],
    )
    errors = bind_errors(path)
    assert [key for _, key, _ in errors] == [
        "sandbox_copy[1]",
        "sandbox_copy[2]",
        "sandbox_dependencies[1].source",
    ]
    assert "outside the working tree" in errors[0][2] and "outside the working tree" in errors[2][2]
    assert "repository metadata" in errors[1][2]
    assert "s\n" not in str(errors)


def test_missing_and_mistyped_sources_are_rejected(corpus: dict, worktree_assets: Path) -> None:
    (worktree_assets / "dangling").symlink_to("nowhere")
    path = write_tasks(
        corpus["root"],
        repo="repo",
        sandbox_copy=["nope.txt", "dangling"],
        sandbox_dependencies=[{"source": "data.txt", "target": "d"}, {"source": "gone", "target": "g"}],
    )
    errors = bind_errors(path)
    assert [(key, message.split(" ", 1)[1]) for _, key, message in errors] == [
        ("sandbox_copy[0]", f"does not exist in the working tree {worktree_assets.resolve()}"),
        (
            "sandbox_copy[1]",
            f"does not exist in the working tree {worktree_assets.resolve()} (a dangling symlink)",
        ),
        ("sandbox_dependencies[0].source", "is not a directory"),
        ("sandbox_dependencies[1].source", f"does not exist in the working tree {worktree_assets.resolve()}"),
    ]


def test_manifest_digest_tracks_dependency_contents(corpus: dict, worktree_assets: Path) -> None:
    path = write_tasks(corpus["root"], repo="repo", sandbox_dependencies=[{"source": "deps", "target": "nm"}])
    (before,) = bind_tasks(load_task_file(path))
    (same,) = bind_tasks(load_task_file(path))
    assert same.dependency_manifest_digest == before.dependency_manifest_digest
    assert same.binding_digest == before.binding_digest
    (worktree_assets / "deps" / "pkg" / "index.js").write_text("module.exports = 2;\n")  # same size
    (changed,) = bind_tasks(load_task_file(path))
    assert changed.dependency_manifest_digest != before.dependency_manifest_digest
    assert changed.binding_digest != before.binding_digest
    link = worktree_assets / "deps" / ".bin" / "tool"
    link.unlink()
    link.symlink_to("../pkg/other.js")  # a symlink is recorded by its target, never followed
    (relinked,) = bind_tasks(load_task_file(path))
    assert relinked.dependency_manifest_digest != changed.dependency_manifest_digest


def test_dependency_limits_fail_the_binding(
    corpus: dict, worktree_assets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_tasks(corpus["root"], repo="repo", sandbox_dependencies=[{"source": "deps", "target": "nm"}])
    bind_tasks(load_task_file(path))  # within the real limits
    monkeypatch.setattr(tasks, "MAX_DEPENDENCY_ENTRIES", 3)  # deps/ walks 4: pkg, index.js, .bin, tool
    ((_, key, message),) = bind_errors(path)
    assert key == "sandbox_dependencies" and "4 entries" in message and "limits are 3 entries" in message
    with pytest.raises(WorktreeError, match="more than 3 entries"):
        tree_manifest(worktree_assets / "deps", max_entries=3)
    with pytest.raises(WorktreeError, match="more than 10 bytes"):
        tree_manifest(worktree_assets / "deps", max_bytes=10)


def test_special_files_in_a_dependency_tree_are_rejected(corpus: dict, worktree_assets: Path) -> None:
    os.mkfifo(worktree_assets / "deps" / "pipe")
    path = write_tasks(corpus["root"], repo="repo", sandbox_dependencies=[{"source": "deps", "target": "nm"}])
    ((_, key, message),) = bind_errors(path)
    assert key == "sandbox_dependencies[0].source" and "'pipe' is not a file, directory or symlink" in message
