"""The cell sandbox's seccomp filter: the syscalls that draw on a host-wide budget no cell may hold.

A classic-BPF program, handed to bwrap (``--seccomp FD``) for every process of a cell, that
answers ``EPERM`` to:

- ``add_key``, ``request_key``, ``keyctl``: the kernel key quota is per host uid (root's 25 MB,
  ``kernel.keys.root_maxbytes``), not per sandbox; one cell took all of it while a host process
  was refused (EDQUOT). No tool a task runs needs the kernel keyring (Docker's default profile
  refuses the same three).
- ``fanotify_init``: fanotify groups are a per-uid budget (``user.max_fanotify_groups``, 128)
  like inotify instances; unprivileged fanotify is a monitoring API no task needs.
- ``ptrace``, ``process_vm_readv``, ``process_vm_writev``, ``pidfd_getfd`` (``PROCESS_ACCESS``):
  reading or steering another process of the cell. The CLI holds the session's relay key in its
  environment and its requests in memory; the CLI binary is execute-only (not dumpable, so the
  kernel refuses these to the cell uid already, ``_bwrap``) and the Landlock prefix refuses them to
  prefixed tools: this is the third layer, which neither a replaced shell prefix nor a process the
  CLI starts by itself can drop (bwrap sets ``no_new_privs``; a seccomp filter is inherited and
  cannot be removed). Cost: no debugger, strace or LeakSanitizer inside a cell.

Everything else is allowed: the filter takes nothing else away. Architectures: the x86-64 ABI,
its x32 numbers (bit 30) and the i386 ABI a 64-bit kernel also serves, and AArch64; on any
other architecture ``filter_program`` returns None and the cell runs without the filter (the row
says so). Written by hand because it is ten instructions: libseccomp's Python bindings are not
on PyPI, and a ten-line table is easier to review than a dependency.
"""

from __future__ import annotations

import errno
import platform
import struct

# linux/audit.h
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_AUDIT_ARCH_I386 = 0x40000003
_X32_BIT = 0x40000000
# Syscall numbers (unistd tables): add_key, request_key, keyctl, fanotify_init.
_BLOCKED = {
    "x86_64": (248, 249, 250, 300),
    "aarch64": (217, 218, 219, 262),
}
_BLOCKED_I386 = (286, 287, 288, 338)
# ptrace, process_vm_readv, process_vm_writev, pidfd_getfd.
_PROCESS_ACCESS = {
    "x86_64": (101, 310, 311, 438),
    "aarch64": (117, 270, 271, 438),
}
_PROCESS_ACCESS_I386 = (26, 347, 348, 438)
PROCESS_ACCESS = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd")
BLOCKED_SYSCALLS = ("add_key", "request_key", "keyctl", "fanotify_init", *PROCESS_ACCESS)

# linux/filter.h and linux/seccomp.h
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _deny_list(numbers: tuple[int, ...]) -> list[bytes]:
    """With the syscall number loaded: EPERM for each of ``numbers``, else allow."""
    out = []
    for index, number in enumerate(numbers):
        # jump to the EPERM return (after the remaining checks and the allow) on a match
        out.append(_insn(_JEQ_K, len(numbers) - index, 0, number))
    out.append(_insn(_RET_K, 0, 0, _ALLOW))
    out.append(_insn(_RET_K, 0, 0, _ERRNO | errno.EPERM))
    return out


def filter_program(machine: str | None = None, *, process_access: bool = True) -> bytes | None:
    """The filter as bwrap reads it (``struct sock_filter[]``), or None on an unknown architecture.

    ``process_access=False`` leaves ``PROCESS_ACCESS`` allowed: only the canary's negative control.
    """
    machine = machine or platform.machine()
    if machine not in _AUDIT_ARCH:
        return None
    extra = _PROCESS_ACCESS[machine] if process_access else ()
    native = _deny_list(_BLOCKED[machine] + extra)
    program = [_insn(_LD_W_ABS, 0, 0, _ARCH)]
    if machine == "x86_64":
        i386 = _deny_list(_BLOCKED_I386 + (_PROCESS_ACCESS_I386 if process_access else ()))
        # arch == x86_64 ? native : (arch == i386 ? i386 : allow)
        program.append(_insn(_JEQ_K, 0, 2 + len(native), _AUDIT_ARCH["x86_64"]))
        program.append(_insn(_LD_W_ABS, 0, 0, _NR))
        # x32 calls carry bit 30: refuse them whole (no task runs x32 binaries)
        program.append(_insn(_JSET_K, len(native) - 1, 0, _X32_BIT))  # to native's EPERM
        program += native
        program.append(_insn(_JEQ_K, 0, 1 + len(i386), _AUDIT_ARCH_I386))
        program.append(_insn(_LD_W_ABS, 0, 0, _NR))
        program += i386
        program.append(_insn(_RET_K, 0, 0, _ALLOW))
    else:
        program.append(_insn(_JEQ_K, 1, 0, _AUDIT_ARCH[machine]))
        program.append(_insn(_RET_K, 0, 0, _ALLOW))
        program.append(_insn(_LD_W_ABS, 0, 0, _NR))
        program += native
    return b"".join(program)
