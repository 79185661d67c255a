"""The environment a sandboxed process sees: an allowlist, never a copy of ``os.environ``.

The host environment of a benchmark operator holds cloud keys, tokens and
paths to their home; none of it may reach a task's setup, the agent or its
tools. Everything here is built from constants plus what the caller passes
explicitly (the model endpoint and key for the CLI process only).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from ._confine import CONFINE_NAME, CONFINE_SCRIPT, PROJECT_MASK_NAME, PROJECT_SETTINGS, SANDBOX_PYTHON

SANDBOX_WORKSPACE = "/workspace"
SANDBOX_HOME = "/home/agent"
SANDBOX_TMP = "/tmp"
SANDBOX_CLAUDE_DIR = "/opt/claude"
SANDBOX_CLAUDE_BIN = f"{SANDBOX_CLAUDE_DIR}/claude"
RUNTIME_BIN = "/opt/wfbench/bin"  # keep in sync with runtimes._store.BIN_DIR (a unit test checks)
SANDBOX_UID = 1000  # the CLI refuses bypass modes as uid 0; tools run as this uid too

BASE_ENVIRONMENT: Mapping[str, str] = MappingProxyType(
    {
        "HOME": SANDBOX_HOME,
        "USER": "agent",
        "LOGNAME": "agent",
        "TMPDIR": SANDBOX_TMP,
        # RUNTIME_BIN: a task's runtimes (node, python) when it names any (runtimes.BIN_DIR).
        "PATH": f"{SANDBOX_CLAUDE_DIR}:{RUNTIME_BIN}:/usr/local/bin:/usr/bin:/bin",
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

SANDBOX_RUNTIME_DIR = f"{SANDBOX_CLAUDE_DIR}/runtime"
MODEL_SOCKET_DIR = "/run/wfbench-model"
MODEL_SOCKET = f"{MODEL_SOCKET_DIR}/api.sock"
USER_SKILLS_DIR = f"{SANDBOX_HOME}/.claude/skills"
# tmpfs sizes: small enough that an agent filling /tmp or HOME hits ENOSPC long
# before the host's RAM notices (the CLI itself keeps < 5 MB there per session).
TMP_SIZE_BYTES = 512 * 1024 * 1024
HOME_SIZE_BYTES = 256 * 1024 * 1024
RUN_SIZE_BYTES = 4 * 1024 * 1024  # holds only the relay socket's mount point
SHM_SIZE_BYTES = 64 * 1024 * 1024  # POSIX shared memory and semaphores (multiprocessing)
# Per-file cap for every sandboxed process (RLIMIT_FSIZE, applied by prlimit):
# bounds what one runaway write can put on the host disk through the workspace.
MAX_FILE_BYTES = 1024 * 1024 * 1024
SHELL_PREFIX = f"{SANDBOX_RUNTIME_DIR}/shell-prefix"

# Claude Code knobs for every session. Each was observed on 2.1.332:
# - NONESSENTIAL_TRAFFIC: otherwise it probes HEAD /api/hello and telemetry hosts;
# - SUBPROCESS_ENV_SCRUB=0: scrub mode wraps every Bash child in a nested
#   bwrap, which cannot mount /proc inside our sandbox ("Can't mount proc on
#   /newroot/proc"), so every Bash call failed; the shell prefix below does
#   the scrubbing instead;
# - SHELL_PREFIX: every Bash command runs through ``shell_prefix_script()``,
#   which starts it from an empty environment plus the tool allowlist, so the
#   model credentials in the CLI's own environment never reach agent tools;
# - CONFIG_DIR: keeps all CLI state under the private, per-session HOME.
CLAUDE_ENVIRONMENT: Mapping[str, str] = MappingProxyType(
    {
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "0",
        "CLAUDE_CODE_SHELL_PREFIX": SHELL_PREFIX,
        "CLAUDE_CONFIG_DIR": f"{SANDBOX_HOME}/.claude",
    }
)


def shell_prefix_script(
    environment: Mapping[str, str] = BASE_ENVIRONMENT, *, confine: str | None = None
) -> str:
    """The Bash-tool wrapper: the CLI passes the whole command as one argument.

    ``environment`` is the whole environment of the tool (the host backend
    passes the allowlist with its own paths). ``confine``: the path of the
    Landlock helper (``_confine``) the command starts through, so tools
    cannot reach the CLI process; None only for the host-unsafe backend.
    """
    assignments = " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(environment.items()))
    launcher = f"{SANDBOX_PYTHON} -I -S {shlex.quote(confine)} " if confine else ""
    return f'#!/bin/sh\nexec {launcher}/usr/bin/env -i {assignments} /bin/bash -c "$1"\n'


EMPTY_DIR_NAME = "empty"


def write_runtime_dir(path: Path) -> Path:
    """Create the read-only runtime files mounted at SANDBOX_RUNTIME_DIR (once per sweep)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / EMPTY_DIR_NAME).mkdir(mode=0o555, exist_ok=True)
    confine = path / CONFINE_NAME
    confine.write_text(CONFINE_SCRIPT)
    confine.chmod(0o444)
    prefix = path / "shell-prefix"
    prefix.write_text(shell_prefix_script(confine=f"{SANDBOX_RUNTIME_DIR}/{CONFINE_NAME}"))
    prefix.chmod(0o555)
    # The session's view of the workspace's .claude (bound read-only over it): the harness's
    # settings and a mount point for the seeded skills; nothing the agent writes is read there.
    mask = path / PROJECT_MASK_NAME
    (mask / "skills").mkdir(parents=True, exist_ok=True)
    (mask / "settings.json").write_text(PROJECT_SETTINGS + "\n")
    (mask / "settings.json").chmod(0o444)
    (mask / "skills").chmod(0o555)
    mask.chmod(0o555)
    return path


def tool_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for setup, verify, oracle and git helpers (no model access)."""
    env = dict(BASE_ENVIRONMENT)
    env.update(extra or {})
    return env


def claude_environment(
    *, model: str, max_retries: int, api_timeout_ms: int, session_key: str
) -> dict[str, str]:
    """Environment for the CLI process: the allowlist plus model routing and pinning.

    No provider credential: the CLI talks HTTP over ``MODEL_SOCKET`` to the host relay, which
    injects the real one. ``session_key`` is the session's relay credential (the relay refuses
    a request without it): only the CLI holds it, in this environment, which tool processes can
    neither inherit (the shell prefix starts them from ``env -i``) nor read through
    ``/proc/<cli>/environ`` (``_confine.py``). All model aliases are pinned to ``model`` so the CLI
    never spawns a subagent on a model the operator did not choose.
    """
    env = tool_environment(CLAUDE_ENVIRONMENT)
    env.update(
        {
            "ANTHROPIC_BASE_URL": "http://localhost",
            "ANTHROPIC_UNIX_SOCKET": MODEL_SOCKET,
            "ANTHROPIC_API_KEY": session_key,
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
    return env
