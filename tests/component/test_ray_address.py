"""--ray-address where no Ray head answers fails within a bound, with the address named.

Measured before the check existed: ``ray.init(address=...)`` on a closed port was still retrying
after 200 s. Both failure shapes are exercised with real sockets and a real Ray child: a refused
port (fails at once) and a port that accepts but never speaks Ray (fails at the join bound).
The positive control (a real head passes) is the two-node demo in tests/e2e/test_demo_sweep.py,
which joins its cluster through the same check.
"""

from __future__ import annotations

import socket
import time

import pytest

from workflow_bench.schedule.ray_address import RayUnreachable, check_ray_head

pytestmark = pytest.mark.component


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_port_fails_at_once():
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(RayUnreachable, match=f"nothing answers at --ray-address 127.0.0.1:{port}"):
        check_ray_head(f"127.0.0.1:{port}")
    assert time.monotonic() - started < 5


def test_a_port_that_is_not_a_ray_head_fails_at_the_join_bound(ray_bin):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        started = time.monotonic()
        said = rf"--ray-address {address} .*no Ray head answered within 8 s"
        with pytest.raises(RayUnreachable, match=said):
            check_ray_head(address, join_timeout=8)
        elapsed = time.monotonic() - started
    assert 8 <= elapsed < 20, elapsed
