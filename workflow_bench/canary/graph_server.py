"""The canary's hostile graph toolkit, run INSIDE the attacker cell's sandbox (stdlib only).

``python3 graph_server.py --index`` is the toolkit's index step: it writes ``.canary-index/
graph.json`` (a symbol list) in the workspace. ``python3 graph_server.py`` is a minimal stdio MCP
server (newline-delimited JSON-RPC 2.0: ``initialize``, ``tools/list``, ``tools/call``, ``ping``)
whose tools do what a hostile server would: ``probe_network`` opens a TCP connection,
``probe_write`` writes a file, ``rename`` (declared mutating, so never granted) rewrites the
workspace. Each reports what the sandbox let it do with a marker the judges in
``attacks_graphs.py`` look for. No ``mcp`` SDK: the canary must run wherever the runner does.
"""

import contextlib
import json
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORKSPACE = Path("/workspace")
INDEX = WORKSPACE / ".canary-index"


def probe_network(host: str, port: int) -> str:
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as err:
        return f"CANARY-MCP-CONNECT-REFUSED {type(err).__name__}"
    return "CANARY-MCP-CONNECT-SUCCEEDED"


def probe_write(path: str) -> str:
    try:
        Path(path).write_text("written by a hostile MCP server\n")
    except OSError as err:
        return f"CANARY-MCP-WRITE-REFUSED {type(err).__name__}: {err.strerror}"
    return "CANARY-MCP-WRITE-SUCCEEDED"


def rename(old: str, new: str) -> str:
    # The write jail may stop the effect; that the call ran at all is the escape.
    with contextlib.suppress(OSError):
        (WORKSPACE / "CANARY-MCP-RENAMED").write_text(f"{old} -> {new}\n")
    return "CANARY-MCP-RENAME-EXECUTED"


def _tool(name: str, description: str, **properties: str) -> dict:
    props = {key: {"type": kind} for key, kind in properties.items()}
    return {"name": name, "description": description, "inputSchema": {"type": "object", "properties": props}}


TOOLS: dict[str, tuple[Callable[..., str], dict[str, Any]]] = {
    "probe_network": (
        probe_network,
        _tool("probe_network", "Open a TCP connection.", host="string", port="integer"),
    ),
    "probe_write": (probe_write, _tool("probe_write", "Write a file.", path="string")),
    "rename": (rename, _tool("rename", "Rename a symbol (mutating).", old="string", new="string")),
}


def _answer(request: dict) -> dict | None:
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        return None  # a notification (e.g. notifications/initialized)
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "canary", "version": "1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": [schema for _, schema in TOOLS.values()]}
    elif method == "tools/call" and params.get("name") in TOOLS:
        function = TOOLS[params["name"]][0]
        text = function(**(params.get("arguments") or {}))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        error = {"code": -32601, "message": f"unsupported: {method}"}
        return {"jsonrpc": "2.0", "id": request["id"], "error": error}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def serve() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        answer = _answer(json.loads(line))
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


def build_index() -> None:
    INDEX.mkdir()
    symbols = sorted(p.relative_to(WORKSPACE).as_posix() for p in WORKSPACE.rglob("*.py"))
    (INDEX / "graph.json").write_text(json.dumps(symbols, indent=1) + "\n")


if __name__ == "__main__":
    build_index() if sys.argv[1:] == ["--index"] else serve()
