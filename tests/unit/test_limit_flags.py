"""--cell-memory-mib / --cell-pids / --cell-disk-mib: validated before anything runs (exit 2, flag named)."""

from __future__ import annotations

import pytest

from workflow_bench import runner
from workflow_bench.sandbox import DEFAULT_DISK_MIB, DEFAULT_MEMORY_MIB, DEFAULT_PIDS

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--cell-memory-mib", "0"),
        ("--cell-memory-mib", "100"),  # below the floor the CLI needs
        ("--cell-memory-mib", "99999999"),  # more than the host has
        ("--cell-memory-mib", "1.5"),
        ("--cell-pids", "-1"),
        ("--cell-pids", "lots"),
        ("--cell-disk-mib", "0"),
        ("--cell-disk-mib", ""),
    ],
)
def test_nonsense_limits_exit_2_naming_the_flag(flag, value, tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        runner.main(["--tasks", str(tmp_path / "none.yaml"), "--out", str(out), flag, value])
    assert exc.value.code == 2
    assert flag in capsys.readouterr().err
    assert not out.exists()


def test_defaults_and_valid_values_parse():
    parse = runner.build_parser().parse_args
    args = parse(["--tasks", "t.yaml"])
    assert (args.cell_memory_mib, args.cell_pids, args.cell_disk_mib) == (
        DEFAULT_MEMORY_MIB,
        DEFAULT_PIDS,
        DEFAULT_DISK_MIB,
    )
    args = parse(
        ["--tasks", "t.yaml", "--cell-memory-mib", "1024", "--cell-pids", "64", "--cell-disk-mib", "16"]
    )
    assert (args.cell_memory_mib, args.cell_pids, args.cell_disk_mib) == (1024, 64, 16)
