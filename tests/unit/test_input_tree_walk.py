"""``input_files.bounded_walk``, the one walker over untrusted trees, and ``name_problem``."""

from __future__ import annotations

import os

import pytest

from workflow_bench.input_files import TreeLimitError, bounded_walk, name_problem

pytestmark = pytest.mark.unit


def test_a_chain_deeper_than_the_recursion_limit_is_a_limit_error_not_a_crash(tmp_path):
    """A 1,100-deep chain once raised RecursionError out of os.walk in the evolve driver."""
    deep = tmp_path / "root"
    chain = [deep]
    deep.mkdir()
    for _ in range(1100):  # os.makedirs recurses too
        chain.append(chain[-1] / "d")
        chain[-1].mkdir()
    try:
        assert len(list(bounded_walk(deep, max_entries=10_000, max_depth=1100))) == 1100  # no RecursionError
        with pytest.raises(TreeLimitError, match="deeper than 8 levels"):
            list(bounded_walk(deep, max_entries=10_000, max_depth=8))
    finally:
        for path in reversed(chain):  # pytest's own cleanup of tmp_path recurses
            path.rmdir()


def test_entries_are_counted_sorted_and_links_never_followed(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z").write_text("z")
    (tmp_path / "a").write_text("a")
    (tmp_path / ".git").mkdir()
    (tmp_path / "b" / "out").symlink_to("/etc")
    walked = [
        rel for rel, _, _ in bounded_walk(tmp_path, max_entries=10, max_depth=4, skip_top=frozenset({".git"}))
    ]
    assert walked == ["a", "b", "b/out", "b/z"]  # /etc was not entered
    with pytest.raises(TreeLimitError, match="over 3 entries"):
        list(bounded_walk(tmp_path, max_entries=3, max_depth=4))


@pytest.mark.parametrize(
    "name",
    [
        "\x1b[2Jnotes.md",
        "a\nb.md",
        "tab\there",
        "\u202eevil.md",
        "x\u2028y",
        os.fsdecode(b"caf\xe9.md"),  # not UTF-8 on disk: decoded with surrogateescape
        "\ud800.md",
        "CON",
        "nul.md",
        "Com1.txt",
        "trailing.",
        "trailing ",
        ".",
        "..",
        "",
        "a:b",
        "a\\b",
        "x" * 256,
    ],
)
def test_refused_names(name):
    assert name_problem(name) is not None


@pytest.mark.parametrize("name", ["SKILL.md", "notes-2.md", "café.md", "con-notes.md", ".hidden", "a b.md"])
def test_ordinary_names_pass(name):
    assert name_problem(name) is None


def test_the_refused_control_set_is_the_one_redaction_escapes():
    from workflow_bench import input_files, redaction

    assert input_files._CONTROL.pattern == redaction._CONTROL.pattern
