"""What a session gets of the toolkit's MCP servers: the strict ``--mcp-config`` and the tool grants.

Public surface: ``SessionMcp``, ``session_mcp`` and ``EMPTY_MCP_CONFIG``. Arms with ``mcp`` get
every server of the toolkit, and only its declared read-only tools go into ``--tools`` and
``--allowedTools``; mutating tools are also named in ``--disallowedTools`` so a scripted or real
call to one is refused. Arms without ``mcp`` (``baseline_nomcp``) get the empty config and every
``mcp__<server>`` prefix disallowed.

Each server is started as ``/usr/bin/env -i <allowlist> /usr/bin/python3 -I <jail> -- command``:
the CLI's own environment carries the model endpoint and key, and a server (third-party code the
agent can talk to) must never see it; the jail (``jail.py``, bound read-only at ``JAIL_TARGET``)
Landlock-restricts the server to writing beneath the sandbox's private /tmp and /dev only, so it
reads the workspace and index but cannot change them. The CLI runs inside the cell's sandbox, so
its servers do too: no network, the cell's mounts only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .spec import MCP_TOOL_PREFIX, Toolkit

EMPTY_MCP_CONFIG = '{"mcpServers":{}}'
ENV_BIN = "/usr/bin/env"
# The server's PATH: runtime mounts (e.g. a node prefix) first, then the system.
SERVER_BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
JAIL_SOURCE = Path(__file__).with_name("jail.py")
JAIL_TARGET = "/opt/wfbench-mcp/jail.py"
JAIL_PYTHON = "/usr/bin/python3"  # the system python the sandbox always has (stdlib only)
SERVER_WRITABLE = ("/tmp", "/dev")  # the sandbox's private tmpfs, and /dev/null
SERVER_HOME = "/tmp/mcp-home"


@dataclass(frozen=True, slots=True)
class SessionMcp:
    """The MCP part of one session's argv, and what the row records."""

    config_json: str
    granted_tools: tuple[str, ...]
    refused_tools: tuple[str, ...]
    server_names: tuple[str, ...]


def session_mcp(toolkit: Toolkit, *, with_mcp: bool, home: str = SERVER_HOME) -> SessionMcp:
    """The strict MCP config for an arm that does (or does not) get the toolkit's servers."""
    if not with_mcp or not toolkit.mcp_servers:
        refused = tuple(f"{MCP_TOOL_PREFIX}{server.name}" for server in toolkit.mcp_servers)
        return SessionMcp(EMPTY_MCP_CONFIG, (), refused, ())
    path = ":".join([*(f"{m.target}/bin" for m in toolkit.runtime_mounts), SERVER_BASE_PATH])
    servers = {}
    for server in toolkit.mcp_servers:
        env = {"PATH": path, "HOME": home, **server.env}
        servers[server.name] = {
            "type": "stdio",
            "command": ENV_BIN,
            "args": [
                "-i",
                *(f"{k}={v}" for k, v in env.items()),
                JAIL_PYTHON,
                "-I",
                JAIL_TARGET,
                *(arg for path in SERVER_WRITABLE for arg in ("--writable", path)),
                "--",
                server.command,
                *server.args,
            ],
        }
    return SessionMcp(
        config_json=json.dumps({"mcpServers": servers}, separators=(",", ":"), sort_keys=True),
        granted_tools=toolkit.granted_mcp_tools,
        refused_tools=tuple(name for server in toolkit.mcp_servers for name in server.refused_tool_names()),
        server_names=tuple(server.name for server in toolkit.mcp_servers),
    )
