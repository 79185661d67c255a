"""--executor ray's pure parts: the flags, the loopback rule and the node check (with negative controls).

The Ray runtime itself is exercised end to end (tests/e2e: the demo on a two-node cluster, and
cancellation); here every predicate that decides whether a node may run a cell gets a case that
must pass and one that must fail.
"""

from __future__ import annotations

import dataclasses
import pickle
import sys
import tempfile
from pathlib import Path

import pytest

from workflow_bench.providers.access import CellKey, ModelAccess
from workflow_bench.runner_args import build_parser
from workflow_bench.schedule.flags import executor_from_args, validate_schedule_args
from workflow_bench.schedule.ray_cells import (
    ExecutorSpec,
    HostIdentity,
    NodeRequirements,
    is_loopback_url,
    node_problems,
    shipped_access,
)
from workflow_bench.schedule.ray_local import RayPathError, check_local_paths_fit, longest_local_socket_path
from workflow_bench.schedule.resume import harness_version
from workflow_bench.workspace.paths import AF_UNIX_PATH_MAX

pytestmark = pytest.mark.unit


def _args(*extra: str):
    return build_parser(description=None).parse_args(["--tasks", "t.yaml", *extra])


def test_threads_is_the_default_and_ray_address_needs_ray():
    assert executor_from_args(_args()) == ExecutorSpec("threads", None)
    assert executor_from_args(_args("--executor", "ray", "--ray-address", "h:1")) == ExecutorSpec(
        "ray", "h:1"
    )
    with pytest.raises(ValueError, match="--ray-address needs --executor ray"):
        validate_schedule_args(_args("--ray-address", "127.0.0.1:6379"))
    with pytest.raises(ValueError, match="executor must be one of"):
        ExecutorSpec("processes")  # type: ignore[arg-type]


def test_executor_ray_without_the_extra_is_a_usage_error(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    with pytest.raises(ValueError, match="needs the optional ray extra"):
        validate_schedule_args(_args("--executor", "ray"))


def test_a_tmpdir_too_long_for_a_local_ray_instance_is_a_usage_error(tmp_path, monkeypatch):
    room = AF_UNIX_PATH_MAX - len(longest_local_socket_path("/"))  # bytes left for TMPDIR
    fits = "/" + "f" * (room - 1)
    check_local_paths_fit(fits)  # exactly at the bound
    with pytest.raises(RayPathError, match=f"at most {room} bytes"):
        check_local_paths_fit(fits + "g")
    monkeypatch.setattr(tempfile, "tempdir", fits + "g")
    with pytest.raises(ValueError, match="too long for a local Ray instance"):
        validate_schedule_args(_args("--executor", "ray"))
    validate_schedule_args(_args("--executor", "ray", "--ray-address", "127.0.0.1:6379"))  # no local sockets


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080", True),
        ("http://127.3.4.5:1", True),
        ("http://localhost:4000/v1", True),
        ("http://[::1]:9", True),
        ("https://api.anthropic.com", False),
        ("http://10.0.0.5:4000", False),
        ("http://192.0.2.2:4000", False),
    ],
)
def test_loopback_upstream(url, loopback):
    assert is_loopback_url(url) is loopback


def _need(tmp_path: Path, **changes) -> NodeRequirements:
    need = NodeRequirements(
        origin=HostIdentity.here(),
        loopback_upstream=True,
        harness=harness_version(),
        claude_bin=sys.executable,  # any executable stands in for the CLI's presence check
        bwrap_bin="sh",
        paths=(str(tmp_path),),
    )
    return dataclasses.replace(need, **changes)


def test_a_node_with_everything_in_place_passes(tmp_path):
    assert node_problems(_need(tmp_path)) == []


def test_another_machine_is_refused_only_with_a_loopback_upstream(tmp_path):
    elsewhere = HostIdentity(machine_id="not-this-machine", boot_id="x")
    problems = node_problems(_need(tmp_path, origin=elsewhere))
    assert len(problems) == 1 and "cells must run on the driver's machine" in problems[0]
    assert node_problems(_need(tmp_path, origin=elsewhere, loopback_upstream=False)) == []


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"harness": "0.0.0+deadbeef"}, "runs workflow-bench"),
        ({"claude_bin": "/nonexistent/claude"}, "no pinned Claude CLI"),
        ({"bwrap_bin": "no-such-bwrap-binary"}, "has no no-such-bwrap-binary"),
        ({"paths": ("/nonexistent/work-root",)}, "does not see /nonexistent/work-root"),
    ],
)
def test_each_missing_prerequisite_is_named(tmp_path, change, says):
    problems = node_problems(_need(tmp_path, **change))
    assert len(problems) == 1 and says in problems[0]


def test_the_credential_is_minted_on_the_driver_and_the_ledger_stays_there():
    minted = []

    def mint(key: CellKey) -> str:
        minted.append(key)
        return f"sk-cell-{key.slug}"

    access = ModelAccess(
        provider="scripted", base_url="http://127.0.0.1:1", mint=mint, observe=lambda key: None
    )
    key = CellKey(task_id="t", run=0, arm="baseline")
    shipped = shipped_access(access, key)
    assert minted == [key]
    assert shipped.mint is None and shipped.observe is None
    assert shipped.credentials_for(key).api_key == f"sk-cell-{key.slug}"
    assert shipped.credentials_for(key).api_key in shipped.static_secrets  # redacted on the node too
    pickle.dumps(shipped)  # crosses to the node as data (closures stay behind)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(access)  # negative control: the driver's access could not cross
