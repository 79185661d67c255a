"""What the CLI may read as configuration: the argv, the harness's project mask, what the row lists."""

from __future__ import annotations

import dataclasses
import json
import stat

import pytest

from workflow_bench.cells.sessions import CLI_CONFIG, SETTING_SOURCES, SessionRequest, claude_argv
from workflow_bench.sandbox import PROJECT_MASK_NAME, PROJECT_SETTINGS, write_runtime_dir
from workflow_bench.sandbox._seccomp import BLOCKED_SYSCALLS, PROCESS_ACCESS, filter_program

REQUEST = SessionRequest(
    prompt="p", model="m", tools=("Bash",), disallowed_tools=(), expected_skill=None, env={}, timeout_s=10
)


def test_every_session_loads_only_the_project_source_and_the_inline_settings():
    argv = claude_argv(REQUEST, session_id="s")
    assert argv.count(SETTING_SOURCES) == 1 and SETTING_SOURCES == "--setting-sources=project"
    assert json.loads(argv[argv.index("--settings") + 1]) == json.loads(PROJECT_SETTINGS)
    # the negative control's request: every source, as the CLI's default
    loose = claude_argv(dataclasses.replace(REQUEST, harness_settings_only=False), session_id="s")
    assert not any(a.startswith("--setting-sources") for a in loose)


def test_the_project_mask_is_the_harness_settings_and_a_skills_mount_point(tmp_path):
    mask = write_runtime_dir(tmp_path / "runtime") / PROJECT_MASK_NAME
    assert sorted(p.name for p in mask.iterdir()) == ["settings.json", "skills"]
    assert json.loads((mask / "settings.json").read_text()) == {"disableAllHooks": True}
    for path in (mask, mask / "skills", mask / "settings.json"):
        assert not stat.S_IMODE(path.stat().st_mode) & 0o222, path  # nobody writes it


@pytest.mark.parametrize(
    ("path", "config"),
    [
        (".claude/settings.json", True),
        (".claude/settings.local.json", True),
        ("sub/dir/.claude/settings.json", True),
        (".mcp.json", True),
        ("home/.claude.json", True),
        ("etc/claude-code/managed-settings.json", True),
        ("settings.json", False),
        (".claude/skills/work/SKILL.md", False),
        ("src/claude/settings.py", False),
    ],
)
def test_cli_configuration_paths_are_recognised(path, config):
    assert bool(CLI_CONFIG.search(path)) is config


def test_the_filter_denies_process_access_unless_the_negative_control_drops_it():
    assert set(PROCESS_ACCESS) <= set(BLOCKED_SYSCALLS)
    full, loose = filter_program("x86_64"), filter_program("x86_64", process_access=False)
    aarch = filter_program("aarch64")
    assert full is not None and loose is not None and aarch is not None
    # 8 bytes per instruction: one JEQ per syscall number, native and i386 lists
    assert len(full) - len(loose) == 8 * 2 * len(PROCESS_ACCESS)
    assert len(aarch) == 8 * (4 + len(BLOCKED_SYSCALLS) + 2)
