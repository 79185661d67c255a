"""A module whose first test points ``tempfile`` at a private directory (as the e2e tests'
``private_tmpdir`` does) before it takes ``tmp_path``, then one that takes ``tmp_path`` alone. Run
first in a session (alone, or first on an xdist worker), the second used to find pytest's base
temp directory inside the first's private directory, removed with it
(``tests/unit/test_test_hygiene.py`` runs this module alone in a fresh pytest)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


@pytest.fixture
def private_tempdir(short_tmpdir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(tempfile, "tempdir", str(short_tmpdir))
    yield short_tmpdir


def test_a_private_tempdir_first(private_tempdir: Path, tmp_path: Path) -> None:
    (tmp_path / "first").write_text("1")
    assert not tmp_path.is_relative_to(private_tempdir)


def test_tmp_path_after_it(tmp_path: Path) -> None:
    (tmp_path / "second").write_text("1")
