"""One sweep per output directory, and writes that fail keep every complete row."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.builders import row
from workflow_bench.output import directory as output_module
from workflow_bench.output.directory import RESULTS_FILE, OutputDir, OutputDirError, OutputWriteError
from workflow_bench.output.lock import LOCK_FILE, claim_output_dir
from workflow_bench.rows.migrate import read_rows

pytestmark = pytest.mark.unit

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from workflow_bench.output.lock import claim_output_dir
    claim = claim_output_dir(Path(sys.argv[1]))
    print("held", flush=True)
    time.sleep(60)
    """
)


def test_second_claim_names_the_holder_and_changes_nothing(tmp_path):
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = sorted(os.listdir(out))
        with pytest.raises(OutputDirError, match=rf"in use by runner pid {holder.pid} on .*, started "):
            claim_output_dir(out)
        assert sorted(os.listdir(out)) == before == [LOCK_FILE]
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the lock with the holder (SIGKILL): the directory is usable again.
    claim = claim_output_dir(out)
    assert json.loads((out / LOCK_FILE).read_text())["pid"] == os.getpid()
    claim.release()


def test_claim_is_released_and_unused_directory_removed(tmp_path):
    out = tmp_path / "a" / "out"
    claim = claim_output_dir(out)
    claim.release(remove_if_unused=True)
    assert not out.exists()
    claim = claim_output_dir(out)
    (out / RESULTS_FILE).write_text("{}\n")
    claim.release(remove_if_unused=True)
    assert (out / RESULTS_FILE).exists()
    with pytest.raises(OutputDirError, match="not an empty directory"):
        claim_output_dir(out)
    assert sorted(os.listdir(out)) == [LOCK_FILE, RESULTS_FILE]


def test_existing_empty_dir_is_left_as_found_when_unused(tmp_path):
    claim = claim_output_dir(tmp_path)
    claim.release(remove_if_unused=True)
    assert tmp_path.is_dir() and not any(tmp_path.iterdir())


@pytest.mark.parametrize("where", ["under-a-file", "under-proc", "is-a-file"])
def test_unusable_out_is_refused_without_a_traceback(where, tmp_path):
    (tmp_path / "file").write_text("x")
    path = {
        "under-a-file": tmp_path / "file" / "out",
        "under-proc": __import__("pathlib").Path("/proc/wfbench-out"),
        "is-a-file": tmp_path / "file",
    }[where]
    with pytest.raises(OutputDirError, match="--out"):
        claim_output_dir(path)


def test_failed_row_append_is_cut_back_to_the_last_complete_row(tmp_path, monkeypatch):
    out = OutputDir(tmp_path)
    out.persist("c1", row(task="t", run=1), {"patch.diff": b"diff"})
    real_write = os.write
    calls = {"n": 0}

    def full_disk(fd, data):
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:5])  # half a line reaches the disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output_module.os, "write", full_disk)
    with pytest.raises(OutputWriteError, match="No space left on device"):
        out.persist("c2", row(task="t", run=2), {})
    monkeypatch.undo()
    lines = (tmp_path / RESULTS_FILE).read_text().splitlines()
    assert [stored.run for stored in read_rows("\n".join(lines))] == [1]


def test_failed_artifact_write_leaves_no_partial_file(tmp_path, monkeypatch):
    out = OutputDir(tmp_path)

    def full_disk(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output_module.os, "write", full_disk)
    with pytest.raises(OutputWriteError):
        out.persist("c1", row(task="t"), {"patch.diff": b"diff"})
    monkeypatch.undo()
    assert not (tmp_path / "c1.patch").exists() and not (tmp_path / RESULTS_FILE).exists()
