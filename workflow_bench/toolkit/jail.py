"""Read-only jail for toolkit MCP servers: ``python3 jail.py --writable DIR... -- COMMAND ARGS``.

Runs INSIDE the cell's sandbox (bind-mounted as a single file, started by the CLI through the
strict ``--mcp-config``), so it uses the standard library only. Before exec'ing the server it
applies a Landlock ruleset: every file-system write right is handled, and granted only beneath
the ``--writable`` directories (the sandbox's private /tmp and /dev). The server therefore reads
the workspace and the index but cannot change them, even during a work session whose workspace
bind is writable for the agent. Nested bubblewrap is impossible there (the sandbox disables user
namespaces), which is why the kernel's unprivileged Landlock does this job. No network exists in
the sandbox to begin with. Fails closed: if Landlock is unavailable the server is not started.
"""

from __future__ import annotations

import ctypes
import os
import sys

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
_O_PATH = 0o10000000
# LANDLOCK_ACCESS_FS_* write rights (ABI 1..3): write_file, remove_dir, remove_file, make_char,
# make_dir, make_reg, make_sock, make_fifo, make_block, make_sym, refer (ABI 2), truncate (ABI 3).
_WRITE_FILE = 1 << 1
_WRITE_RIGHTS = _WRITE_FILE | sum(1 << bit for bit in range(4, 13)) | (1 << 13) | (1 << 14)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _fail(message: str) -> None:
    print(f"mcp-jail: {message}; refusing to start the server", file=sys.stderr)
    sys.exit(97)


def restrict_writes(writable: list[str]) -> None:
    """Landlock-restrict this process (and what it execs) to writing beneath ``writable`` only."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 3:
        _fail(f"Landlock ABI {abi} (need >= 3, errno {ctypes.get_errno()})")
    attr = _RulesetAttr(_WRITE_RIGHTS)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if ruleset < 0:
        _fail(f"landlock_create_ruleset failed (errno {ctypes.get_errno()})")
    for path in writable:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError as err:
            _fail(f"cannot open writable dir {path}: {err}")
        rule = _PathBeneath(_WRITE_RIGHTS, fd)
        if libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            _fail(f"landlock_add_rule {path} failed (errno {ctypes.get_errno()})")
        os.close(fd)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(NO_NEW_PRIVS) failed")
    if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
        _fail(f"landlock_restrict_self failed (errno {ctypes.get_errno()})")
    os.close(ruleset)


def main(argv: list[str]) -> None:
    writable: list[str] = []
    while argv and argv[0] == "--writable":
        writable.append(argv[1])
        argv = argv[2:]
    if not argv or argv[0] != "--" or len(argv) < 2:
        _fail("usage: jail.py [--writable DIR]... -- COMMAND [ARGS]")
    restrict_writes(writable)
    os.execv(argv[1], argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
