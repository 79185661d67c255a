"""--cell-memory-mib / -pids / -disk-mib / -cpus: validated before anything runs (exit 2, flag named)."""

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
        ("--cell-cpus", "-1"),
        ("--cell-cpus", "0.001"),
        ("--cell-cpus", "many"),
        ("--cell-cpus", "nan"),
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


def test_the_cpu_quota_defaults_to_the_fair_share_and_zero_means_none(monkeypatch):
    from workflow_bench.runner_args import default_cell_cpus
    from workflow_bench.sweep.prepare import cell_cpus

    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert (default_cell_cpus(1), default_cell_cpus(2), default_cell_cpus(3), default_cell_cpus(16)) == (
        8.0,
        4.0,
        2.67,
        1.0,  # never below one core: a cell must be able to run its CLI
    )
    parse = runner.build_parser().parse_args
    assert cell_cpus(parse(["--tasks", "t.yaml", "--workers", "2"])) == 4.0
    assert cell_cpus(parse(["--tasks", "t.yaml", "--cell-cpus", "1.5"])) == 1.5
    assert cell_cpus(parse(["--tasks", "t.yaml", "--cell-cpus", "0"])) is None
