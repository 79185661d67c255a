"""``--ray-address``: its form, and a bounded check that a Ray head answers there.

``ray.init(address=...)`` against an address where no Ray head listens does not fail: it logs
"Failed to connect to GCS" and retries for minutes (measured here: still waiting after 200 s).
A user's typo must cost seconds and exit 2, so before the runner joins a cluster it
1. parses the address (``host:port`` only: no scheme, no ``auto``; ``ValueError`` names it);
2. opens a TCP connection to it (refused or silent: fails within ``CONNECT_TIMEOUT_S``);
3. joins it from a throwaway child process killed after ``JOIN_TIMEOUT_S``: something listening
   on that port that is not a Ray head makes the child hang, not the runner.
Only then does the runner's own ``ray.init`` run. Callers: ``schedule.flags`` (form),
``schedule.ray_cells`` (reachability).
"""

from __future__ import annotations

import socket
import sys

from workflow_bench.process import run_process

CONNECT_TIMEOUT_S = 5.0
JOIN_TIMEOUT_S = 60.0

_JOIN = "import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False); ray.shutdown()"


class RayUnreachable(Exception):
    """No Ray head answered at the address within the bound; nothing was run."""


def parse_ray_address(address: str) -> tuple[str, int]:
    """``host:port`` -> (host, port); ValueError naming ``--ray-address`` otherwise."""
    host, sep, port_text = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:6379
    bad = (
        not sep
        or not host
        or "/" in address
        or any(c.isspace() for c in address)
        or not port_text.isdigit()
        or not 1 <= int(port_text) <= 65535
    )
    if bad:
        raise ValueError(
            f"--ray-address {address!r} is not HOST:PORT (the Ray head's GCS address, e.g. 127.0.0.1:6379; "
            "schemes such as ray:// and 'auto' are not accepted)"
        )
    return host, int(port_text)


def check_ray_head(
    address: str, *, connect_timeout: float = CONNECT_TIMEOUT_S, join_timeout: float = JOIN_TIMEOUT_S
) -> None:
    """Return when a Ray head answers at ``address``; raise RayUnreachable within the two bounds."""
    host, port = parse_ray_address(address)
    try:
        with socket.create_connection((host, port), timeout=connect_timeout):
            pass
    except OSError as exc:
        raise RayUnreachable(f"nothing answers at --ray-address {address} ({exc})") from exc
    joined = run_process([sys.executable, "-c", _JOIN, address], timeout_s=join_timeout)
    if joined.state == "timeout":
        raise RayUnreachable(
            f"--ray-address {address} accepts connections but no Ray head answered "
            f"within {join_timeout:.0f} s"
        )
    if not joined.ok:
        last = (joined.stderr_tail.strip().splitlines() or [joined.describe()])[-1][:300]
        raise RayUnreachable(f"could not join the Ray cluster at --ray-address {address}: {last}")
