"""The environment a sandboxed process sees: an allowlist, never a copy of ``os.environ``.

The host environment of a benchmark operator holds cloud keys, tokens and
paths to their home; none of it may reach a task's setup, the agent or its
tools. Everything here is built from constants plus what the caller passes
explicitly (the model endpoint and key for the CLI process only).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

SANDBOX_WORKSPACE = "/workspace"
SANDBOX_HOME = "/home/agent"
SANDBOX_TMP = "/tmp"
SANDBOX_CLAUDE_DIR = "/opt/claude"
SANDBOX_CLAUDE_BIN = f"{SANDBOX_CLAUDE_DIR}/claude"
SANDBOX_UID = 1000  # the CLI refuses bypass modes as uid 0; tools run as this uid too

BASE_ENVIRONMENT: Mapping[str, str] = MappingProxyType(
    {
        "HOME": SANDBOX_HOME,
        "USER": "agent",
        "LOGNAME": "agent",
        "TMPDIR": SANDBOX_TMP,
        "PATH": f"{SANDBOX_CLAUDE_DIR}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "XDG_CONFIG_HOME": f"{SANDBOX_HOME}/.config",
        "XDG_CACHE_HOME": f"{SANDBOX_HOME}/.cache",
    }
)

# Claude Code knobs for every session. Each was observed on 2.1.332:
# - NONESSENTIAL_TRAFFIC: otherwise it probes HEAD /api/hello and telemetry hosts;
# - SUBPROCESS_ENV_SCRUB: strips the model credentials from Bash children;
# - CONFIG_DIR: keeps all CLI state under the private, per-session HOME.
CLAUDE_ENVIRONMENT: Mapping[str, str] = MappingProxyType(
    {
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "1",
        "CLAUDE_CONFIG_DIR": f"{SANDBOX_HOME}/.claude",
    }
)


def tool_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for setup, verify, oracle and git helpers (no model access)."""
    env = dict(BASE_ENVIRONMENT)
    env.update(extra or {})
    return env


def claude_environment(
    *,
    base_url: str,
    api_key: str | None,
    auth_token: str | None,
    model: str,
    max_retries: int,
    api_timeout_ms: int,
) -> dict[str, str]:
    """Environment for the CLI process: the allowlist plus model access and pinning.

    All model aliases are pinned to ``model`` so the CLI never spawns a
    subagent on a model the operator did not choose (and did not budget for).
    """
    env = tool_environment(CLAUDE_ENVIRONMENT)
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_MODEL": model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
            "ANTHROPIC_SMALL_FAST_MODEL": model,
            "CLAUDE_CODE_SUBAGENT_MODEL": model,
            # Without a low retry cap a dead endpoint costs ~3 minutes per
            # session (10 retries with backoff, measured on 2.1.332).
            "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
            "API_TIMEOUT_MS": str(api_timeout_ms),
        }
    )
    if api_key:
        env["ANTHROPIC_API_KEY"] = api_key
    if auth_token:
        env["ANTHROPIC_AUTH_TOKEN"] = auth_token
    return env
