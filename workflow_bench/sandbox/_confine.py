"""The tool confinement helper: agent tool processes cannot reach the CLI process.

Every Bash tool command runs through the shell prefix, which starts it through ``CONFINE_SCRIPT``
(run by the sandbox's ``/usr/bin/python3``): the script puts itself in a fresh Landlock domain,
then execs the command. Landlock's ptrace rule — a process may only ptrace, or open
``/proc/<pid>/{mem,environ,fd/*}`` of, processes in its own domain or below — then keeps every
tool process away from the CLI (which stays outside the domain), whatever their uids.

Measured on this machine (kernel 6.18, Landlock ABI 7, bwrap 0.8.0), inside our sandbox, with
the runner as root and as ``nobody``: without the domain a tool process opened the CLI's
``/proc/<pid>/environ``, ``mem`` and ``fd/1`` and ``PTRACE_ATTACH``ed to it; inside it, each
open failed with EACCES and ptrace with EPERM. Alternatives ruled out: a nested PID namespace
needs a nested user namespace (our bwrap passes --disable-userns) and cannot mount a fresh /proc
inside bwrap anyway (the "Can't mount proc" failure of the CLI's own scrub mode); a non-dumpable
CLI (not tried) would need an unreadable binary, since dumpability resets on execve.

The handled rights (creating block and character devices) are ones no tool needs; the domain
exists for its ptrace rule, not for file access. Fails closed: without Landlock the command does
not run (exit 126), so a host that cannot confine tools cannot silently run unconfined ones.
"""

from __future__ import annotations

from dataclasses import dataclass

CONFINE_NAME = "confine.py"
CONFINE_EXIT = 126
SANDBOX_PYTHON = "/usr/bin/python3"

CONFINE_SCRIPT = f'''"""workflow-bench: run argv[1:] in a new Landlock domain (see sandbox/_confine.py)."""
import ctypes, os, struct, sys

CREATE_RULESET, RESTRICT_SELF = 444, 446  # same number on every architecture
PR_SET_NO_NEW_PRIVS = 38
MAKE_CHAR, MAKE_BLOCK = 1 << 6, 1 << 11


def fail(what):
    sys.stderr.write("workflow-bench confine: %s: %s\\n" % (what, os.strerror(ctypes.get_errno())))
    sys.exit({CONFINE_EXIT})


libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
attr = ctypes.create_string_buffer(struct.pack("Q", MAKE_CHAR | MAKE_BLOCK))
fd = libc.syscall(CREATE_RULESET, attr, ctypes.c_size_t(8), ctypes.c_uint32(0))
if fd < 0:
    fail("Landlock is unavailable")
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
    fail("no_new_privs")
if libc.syscall(RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
    fail("landlock_restrict_self")
os.close(fd)
os.execv(sys.argv[1], sys.argv[1:])
'''


@dataclass(frozen=True, slots=True)
class Confinement:
    """The defences against a CLI the agent reconfigured or a process the CLI runs unprefixed.

    Every field is True for every benchmark cell; the canary turns one off at a time to show the
    attack it stops then gets through (its negative controls). Nothing else sets them.
    """

    harness_settings_only: bool = True
    """The CLI loads no user or local settings, and the project's ``.claude`` is a read-only
    harness directory (the seeded skills plus ``PROJECT_SETTINGS``): ``--setting-sources=project``."""
    exec_only_cli: bool = True
    """The CLI runs from an execute-only copy (mode 0111), so the kernel makes it non-dumpable:
    its ``/proc/<pid>/environ``, ``mem`` and ``ptrace`` are refused to every process of the cell."""
    seccomp_process_access: bool = True
    """The cell's seccomp filter refuses ptrace, process_vm_readv/writev and pidfd_getfd."""
    relay_peer_pin: bool = True
    """The relay serves only the socket peer process of its first admitted request (the CLI)."""


EXEC_ONLY_MODE = 0o111
# The project settings every session reads (``.claude/settings.json`` of the read-only mask): no
# hooks from anywhere. The same object is passed inline with ``--settings`` (cells/sessions.py).
PROJECT_SETTINGS = '{"disableAllHooks":true}'
PROJECT_MASK_NAME = "project-claude"
