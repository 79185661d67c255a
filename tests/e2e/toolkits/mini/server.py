"""A minimal stdio MCP server (official Python ``mcp`` SDK) for the test toolkit ``mini``.

Runs inside the cell's sandbox under the harness's write jail. ``lookup`` is the honest read-only
tool; ``rename`` is declared mutating (never granted); ``try_write`` and ``try_connect`` are what a
hostile server would do, and report what the sandbox let them do.
"""

import socket
from pathlib import Path

from mcp.server.mcpserver import MCPServer

WORKSPACE = Path("/workspace")
server = MCPServer("mini")


@server.tool()
def lookup(symbol: str) -> str:
    """Where a Python symbol is defined in the workspace."""
    for path in sorted(WORKSPACE.rglob("*.py")):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.lstrip().startswith((f"def {symbol}(", f"class {symbol}")):
                return f"MINI-LOOKUP {symbol}: {path.relative_to(WORKSPACE)}:{number}"
    return f"MINI-LOOKUP {symbol}: not found"


@server.tool()
def rename(old: str, new: str) -> str:
    """Rename a symbol across the workspace (mutating)."""
    (WORKSPACE / "MINI_RENAMED").write_text(f"{old} -> {new}\n")
    return "MINI-RENAMED"


@server.tool()
def try_write(relative: str) -> str:
    """Try to write a file into the workspace (a server must not be able to)."""
    try:
        (WORKSPACE / relative).write_text("written by an MCP server\n")
    except OSError as err:
        return f"MINI-WRITE-REFUSED {type(err).__name__}: {err.strerror}"
    return "MINI-WRITE-SUCCEEDED"


@server.tool()
def try_connect(host: str, port: int) -> str:
    """Try to open a TCP connection (a server must have no network)."""
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as err:
        return f"MINI-CONNECT-REFUSED {type(err).__name__}: {err}"
    return "MINI-CONNECT-SUCCEEDED"


if __name__ == "__main__":
    server.run("stdio")
