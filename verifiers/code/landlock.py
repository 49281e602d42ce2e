"""Landlock (Linux >= 5.13) through raw syscalls: file-system, TCP and signal confinement.

`restrict(read_paths, write_paths)` confines the calling process and all its future children:
files may be opened for reading only beneath ``read_paths`` and for writing only beneath
``write_paths``; nothing may be executed; with ABI >= 4 no TCP bind/connect at all; with
ABI >= 6 no signal to, and no abstract unix socket of, a process outside the domain.
`scope_signals()` adds a layer that only scopes signals (a test process cannot signal its runner).

Not covered: already-open file descriptors keep their rights (Landlock checks at open time);
`ioctl` on devices before ABI 5; UDP and other non-TCP protocols (seccomp blocks sockets).
"""

from __future__ import annotations

import ctypes
import os

_NR_CREATE, _NR_ADD_RULE, _NR_RESTRICT = 444, 445, 446  # same number on x86_64 and aarch64
_CREATE_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_ALL_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    v = _libc.syscall(_NR_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_VERSION))
    return max(int(v), 0)


def _fs_all(abi: int) -> int:
    best = max(k for k in _FS_ALL_BY_ABI if k <= abi)
    return _FS_ALL_BY_ABI[best]


def _attr_size(abi: int) -> int:
    if abi >= 6:
        return ctypes.sizeof(_RulesetAttr)
    return 16 if abi >= 4 else 8


def _create(attr: _RulesetAttr, abi: int) -> int:
    fd = _libc.syscall(_NR_CREATE, ctypes.byref(attr), ctypes.c_size_t(_attr_size(abi)), 0)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"landlock_create_ruleset: {os.strerror(e)}")
    return int(fd)


def _enforce(fd: int) -> None:
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if _libc.syscall(_NR_RESTRICT, fd, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"landlock_restrict_self: {os.strerror(e)}")


def _add_path(fd: int, path: str, access: int) -> None:
    try:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that does not exist grants nothing
    try:
        if not os.path.isdir(path):
            access &= WRITE_FILE | READ_FILE | EXECUTE | (1 << 14) | (1 << 15)
        rule = _PathBeneath(access, pfd)
        if _libc.syscall(_NR_ADD_RULE, fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"landlock_add_rule({path}): {os.strerror(e)}")
    finally:
        os.close(pfd)


def restrict(read_paths: list[str], write_paths: list[str], abi: int | None = None) -> dict:
    """Confine this process (see module doc). Returns what was enforced; raises OSError."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    fs_all = _fs_all(abi)
    attr = _RulesetAttr(fs_all, 0, 0)
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL
    fd = _create(attr, abi)
    try:
        for p in read_paths:
            _add_path(fd, p, READ_FILE | READ_DIR)
        for p in write_paths:
            _add_path(fd, p, fs_all & ~EXECUTE)
        _enforce(fd)
    finally:
        os.close(fd)
    return {"abi": abi, "fs": True, "tcp": abi >= 4, "signals": abi >= 6}


def scope_signals(abi: int) -> bool:
    """Add a layer that forbids signalling processes outside it (ABI >= 6); False if unsupported."""
    if abi < 6:
        return False
    fd = _create(_RulesetAttr(0, 0, _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX), abi)
    try:
        _enforce(fd)
    finally:
        os.close(fd)
    return True
