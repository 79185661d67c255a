"""--ray-address's form: HOST:PORT only, refused otherwise with the flag named (exit 2 upstream)."""

from __future__ import annotations

import pytest

from workflow_bench.schedule.ray_address import parse_ray_address
from workflow_bench.schedule.ray_cells import ExecutorSpec

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        ("127.0.0.1:6379", ("127.0.0.1", 6379)),
        ("head.example:1", ("head.example", 1)),
        ("h:65535", ("h", 65535)),
        ("[::1]:6390", ("::1", 6390)),
    ],
)
def test_host_and_port_are_accepted(address, parsed):
    assert parse_ray_address(address) == parsed
    assert ExecutorSpec("ray", address).ray_address == address


@pytest.mark.parametrize(
    "address",
    ["", "auto", "h", "h:", ":6379", "h:0", "h:65536", "h:-1", "h:6x", "ray://h:1", "h :1", "h:1/x", "h:+1"],
)
def test_anything_else_names_the_flag(address):
    with pytest.raises(ValueError, match=r"--ray-address .* is not HOST:PORT"):
        parse_ray_address(address)
    with pytest.raises(ValueError, match="--ray-address"):
        ExecutorSpec("ray", address)
