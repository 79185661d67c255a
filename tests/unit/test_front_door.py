"""The front door: ``workflow-bench SUBCOMMAND`` is the ``python -m`` form of each command.

Run as real processes (the installed console script, ``python -m workflow_bench`` and each
``python -m workflow_bench.<module>``): the same help (only the usage name differs, and it names the
form that was typed), the same exit code on bad input.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from workflow_bench.cli import COMMANDS

SCRIPT = Path(sysconfig.get_path("scripts")) / "workflow-bench"


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _unwrapped(text: str) -> str:
    # argparse re-wraps lines to the usage name's width: compare the words, not the layout.
    return re.sub(r"\s+", " ", text).strip()


def test_front_door_lists_every_subcommand() -> None:
    result = _run([str(SCRIPT), "--help"])
    assert result.returncode == 0, result.stderr
    listed = set(re.findall(r"^    ([a-z]+)\b", result.stdout, flags=re.M))
    assert listed == set(COMMANDS), result.stdout
    for command in COMMANDS.values():
        assert f"workflow_bench.{command.module}" in _unwrapped(result.stdout)


def test_python_dash_m_package_is_the_front_door() -> None:
    assert (
        _run([sys.executable, "-m", "workflow_bench", "--help"]).stdout
        == _run([str(SCRIPT), "--help"]).stdout
    )


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_subcommand_is_its_python_dash_m_form(name: str) -> None:
    command = COMMANDS[name]
    door = _run([str(SCRIPT), name, "--help"])
    module = _run([sys.executable, "-m", f"workflow_bench.{command.module}", "--help"])
    assert door.returncode == module.returncode == 0, (door.stderr, module.stderr)
    assert door.stdout.startswith(f"usage: workflow-bench {name}")
    assert module.stdout.startswith(f"usage: python -m workflow_bench.{command.module}")
    names = (f"workflow-bench {name}", f"python -m workflow_bench.{command.module}")

    def words(text: str) -> str:
        for spelling in names:
            text = text.replace(spelling, "PROG")
        return _unwrapped(text)

    assert words(door.stdout) == words(module.stdout)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_bad_flag_is_exit_2_both_ways(name: str) -> None:
    command = COMMANDS[name]
    door = _run([str(SCRIPT), name, "--no-such-flag"])
    module = _run([sys.executable, "-m", f"workflow_bench.{command.module}", "--no-such-flag"])
    assert door.returncode == module.returncode == 2, (door.stderr, module.stderr)
    assert (
        door.stderr.replace(f"workflow-bench {name}", "PROG")
        == module.stderr.replace(f"python -m workflow_bench.{command.module}", "PROG")
        or _unwrapped(door.stderr).split(": error: ")[-1] == _unwrapped(module.stderr).split(": error: ")[-1]
    )


def test_unknown_subcommand_is_exit_2_naming_it() -> None:
    result = _run([str(SCRIPT), "frobnicate"])
    assert result.returncode == 2
    assert "frobnicate" in result.stderr
