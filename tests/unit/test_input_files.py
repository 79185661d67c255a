"""The bounded input reader and YAML loader: caps, non-regular files, duplicate keys, alias bombs."""

from __future__ import annotations

import os
import time

import pytest

from workflow_bench.input_files import MAX_YAML_EXPANDED_WEIGHT, InputFileError, load_yaml, read_bounded

pytestmark = pytest.mark.unit

# 9 levels of 9 aliases: 9^9 ≈ 387 M leaves from ~700 bytes of text.
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def test_anchors_stay_usable():
    data = load_yaml("base: &b {k: [1, 2]}\nuse: *b\nmerged: {<<: *b, extra: 3}\n")
    assert data["use"] == {"k": [1, 2]} and data["merged"] == {"k": [1, 2], "extra": 3}


def test_alias_bomb_is_refused_quickly_and_the_message_does_not_expand_it():
    assert len(BOMB) < 1000
    started = time.monotonic()
    with pytest.raises(InputFileError) as caught:
        load_yaml(BOMB)
    assert time.monotonic() - started < 2
    assert "alias" in str(caught.value) and len(str(caught.value)) < 300
    assert caught.value.line is not None


def test_big_scalar_shared_many_times_is_weighed_by_its_length():
    big = "x" * 100_000
    text = f"a: &a {big}\nb: [{', '.join(['*a'] * 50)}]\n"
    with pytest.raises(InputFileError, match="alias"):
        load_yaml(text)
    load_yaml(f"a: &a {big}\nb: [{', '.join(['*a'] * 5)}]\n")  # 0.6 M: fine


def test_weight_limit_is_the_boundary():
    text = "[" + ", ".join(["x"] * 100) + "]"  # 1 sequence + 100 scalars of 1 char: weight 201
    assert load_yaml(text, limit=201) == ["x"] * 100
    with pytest.raises(InputFileError):
        load_yaml(text, limit=200)
    assert MAX_YAML_EXPANDED_WEIGHT >= 1_000_000


def test_recursive_alias_is_refused():
    with pytest.raises(InputFileError, match="recursive"):
        load_yaml("a: &a [1, *a]\n")


@pytest.mark.parametrize(
    "text", ["a: 1\na: 2\n", "tasks:\n  - {id: x, id: y}\n", "m: {1: a, 1: b}\n"], ids=["top", "flow", "int"]
)
def test_duplicate_keys_are_refused_with_a_line(text):
    with pytest.raises(InputFileError, match="duplicate key") as caught:
        load_yaml(text)
    assert caught.value.line is not None


def test_syntax_error_has_line_and_column():
    with pytest.raises(InputFileError, match=r"line \d+, column \d+: YAML"):
        load_yaml("a: 1\nb: [unclosed\n")


def test_read_bounded_refuses_devices_fifos_dirs_and_oversize(tmp_path):
    with pytest.raises(InputFileError, match="not a regular file"):
        read_bounded("/dev/zero", max_bytes=10)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InputFileError, match="not a regular file"):
        read_bounded(fifo, max_bytes=10)
    assert time.monotonic() - started < 2
    with pytest.raises(InputFileError, match="not a regular file"):
        read_bounded(tmp_path, max_bytes=10)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 11)
    with pytest.raises(InputFileError, match="11 bytes; the limit is 10"):
        read_bounded(big, max_bytes=10)
    assert read_bounded(big, max_bytes=11) == b"x" * 11
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", max_bytes=10)


@pytest.mark.parametrize("char", ["\x00", "\x08", "\x7f", "\ud800"])
def test_a_character_yaml_refuses_is_an_input_error_with_its_position(char):
    with pytest.raises(
        InputFileError, match=r"line 2, column 4: YAML: character 0x[0-9a-f]{4} is not allowed"
    ):
        load_yaml("a: 1\nb: " + char + "\n")
