"""Scripted model provider: a loopback model server that answers from a YAML script.

Tests and the offline demo fake exactly one thing, the model. The real Claude Code CLI talks to
this server (Anthropic Messages, directly) or a real LiteLLM proxy does (OpenAI Responses, with
``--via-gateway``), and the CLI really executes the tool calls it scripts. Each cell gets its own
minted API key, so every request is attributed to one cell, and the ledger records what was
served per key; subagents (told apart by the CLI's ``x-claude-code-agent-id`` header) are
scripted under their session's ``subagents``.

Public surface: ``load_script`` / ``parse_script`` → ``Script``; ``ScriptedProvider`` (context
manager: ``base_url``, ``mint_key``, ``ledger``, ``all_ledger``, ``request_count``);
``LedgerEntry``; ``ScriptError``.
"""

from workflow_bench.providers.scripted._ledger import EXHAUSTED_TEXT, LedgerEntry, unscripted_text
from workflow_bench.providers.scripted._load import load_script, parse_script
from workflow_bench.providers.scripted._script import (
    CWD_TOKEN,
    SCHEMA_VERSION,
    Cell,
    Fault,
    Match,
    Script,
    ScriptError,
    Session,
    ToolCall,
    Turn,
    Usage,
    substitute_cwd,
)
from workflow_bench.providers.scripted._server import ScriptedProvider

__all__ = [
    "CWD_TOKEN",
    "EXHAUSTED_TEXT",
    "SCHEMA_VERSION",
    "Cell",
    "Fault",
    "LedgerEntry",
    "Match",
    "Script",
    "ScriptError",
    "ScriptedProvider",
    "Session",
    "ToolCall",
    "Turn",
    "Usage",
    "load_script",
    "parse_script",
    "substitute_cwd",
    "unscripted_text",
]
