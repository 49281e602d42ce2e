"""The containment layers of the code sandbox, applied at three levels.

* worker (`enter_worker_namespaces`, once, as root): a private mount namespace (a size-capped
  tmpfs for the programs' temp dirs; directories the sandbox uid cannot traverse, such as a
  mode-700 ``/root`` holding the interpreter, are replaced by a tmpfs that shows only the
  interpreter read-only) and an empty network namespace (loopback down).
* child (`confine_child`, once per forked child, i.e. per program or per chunk of its tests):
  its own session and process group; rlimits (address space, file size, open files,
  processes, no core; the harness sets the CPU rlimit per test); a per-worker unprivileged
  uid and gid with no supplementary groups; not dumpable (no ptrace, no /proc/PID/mem of it);
  no_new_privs; Landlock (read-only interpreter and libraries, writes only in its temp dir,
  no TCP, no signals or abstract sockets outside its domain); seccomp (BPF built once per
  worker) denying non-unix sockets, exec, ptrace, mount and namespace creation, setsid and
  setpgid (so every descendant stays in the group the worker kills), kill of the worker or of
  process groups, io_uring, bpf, keyring, module and clock syscalls.

Not covered here: cgroups (v1 on the target machine; memory is bounded by RLIMIT_AS, which
counts address space, not resident memory), a PID namespace per program (the Makefile runs the
hostile tests inside one), and anything the kernel itself gets wrong.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import stat
import sys

from dapo_bench.verifiers.code import landlock

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 1, 4, 36
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_CLONE_NEWNS, _CLONE_NEWNET = 0x00020000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT = 1, 2, 4, 32
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)

DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
    "chroot", "unshare", "setns", "setsid", "setpgid", "execve", "execveat", "pidfd_open",
    "pidfd_send_signal", "pidfd_getfd", "bpf", "perf_event_open", "keyctl", "add_key",
    "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "sethostname", "setdomainname", "iopl", "ioperm", "name_to_handle_at", "open_by_handle_at",
    "mknod", "mknodat", "quotactl", "syslog", "vhangup", "fanotify_init", "open_tree",
    "move_mount", "fsopen", "fsmount", "fspick", "mount_setattr", "kcmp", "setuid", "setgid",
    "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
)


def prctl(option: int, arg: int = 0) -> None:
    if _libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"prctl({option}): {os.strerror(e)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None):
    enc = (lambda s: None if s is None else s.encode())
    if _libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {target}: {os.strerror(e)}")


# ----------------------------------------------------------------------------- worker level


def interpreter_paths() -> list[str]:
    """Directories a child must read: the interpreter, its libraries and the system libraries."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    paths.update(p for p in sys.path if p and os.path.isdir(p))
    paths.update(p for p in ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache",
                             "/etc/localtime", "/usr/share/zoneinfo") if os.path.exists(p))
    return sorted(paths)


def _hidden_ancestors(paths: list[str]) -> dict[str, set[str]]:
    """Ancestor dirs without o+x (not traversable by another uid) -> the entries below needed."""
    out: dict[str, set[str]] = {}
    for p in paths:
        parts = os.path.abspath(p).split("/")[1:]
        for i in range(len(parts) - 1):
            anc = "/" + "/".join(parts[: i + 1])
            if not os.stat(anc).st_mode & stat.S_IXOTH:
                out.setdefault(anc, set()).add(parts[i + 1])
                break
    return out


def enter_worker_namespaces(tmp_base: str, disk_mb: int) -> dict[str, str]:
    """As root: private mount + network namespaces (see module doc). Returns layer -> detail;
    a layer that could not be set up is absent (and `check_layers` reports it inactive)."""
    done: dict[str, str] = {}
    if os.geteuid() != 0:
        return done
    if _libc.unshare(_CLONE_NEWNET) == 0:
        done["netns"] = "empty network namespace (loopback down)"
    if _libc.unshare(_CLONE_NEWNS) != 0:
        return done
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)  # nothing propagates to the host
    _mount("tmpfs", tmp_base, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={disk_mb}m,mode=711")
    done["tmpfs"] = f"temp dirs on a private {disk_mb} MiB tmpfs"
    for anc, entries in _hidden_ancestors(interpreter_paths()).items():
        fds = {e: os.open(os.path.join(anc, e), os.O_PATH) for e in entries}
        _mount("tmpfs", anc, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=755")
        for e, fd in fds.items():
            os.mkdir(os.path.join(anc, e))
            _mount(f"/proc/self/fd/{fd}", os.path.join(anc, e), None, _MS_BIND | _MS_REC, None)
            _mount(None, os.path.join(anc, e), None,
                   _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID, None)
            os.close(fd)
        done.setdefault("mountns", "private mount namespace")
        done["mountns"] += f"; {anc} shows only {', '.join(sorted(entries))} (read-only)"
    done.setdefault("mountns", "private mount namespace")
    prctl(_PR_SET_CHILD_SUBREAPER, 1)
    return done


# ----------------------------------------------------------------------------- runner level


def confine_child(uid: int | None, tmpdir: str, limits, abi: int, bpf: bytes | None) -> None:
    """In the forked child, before any untrusted byte is touched. Raises OSError on failure."""
    os.setsid()
    os.chdir(tmpdir)
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(max(limits.file_mb, limits.output_mb) * mb),) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.nofile,) * 2)
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.nproc,) * 2)
        os.chown(tmpdir, uid, uid)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    prctl(_PR_SET_PDEATHSIG, 9)  # after setresuid, which clears it
    prctl(_PR_SET_DUMPABLE, 0)
    prctl(_PR_SET_NO_NEW_PRIVS, 1)
    if abi > 0:
        landlock.restrict(interpreter_paths() + ["/dev/null", "/dev/urandom", "/dev/zero"],
                          [tmpdir, "/dev/null"], abi)
    if bpf:
        load_bpf(bpf)


def seccomp_bpf(worker_pid: int) -> bytes:
    """The child's seccomp filter as raw BPF (built once per worker; loading is cheap)."""
    import pyseccomp as sc

    deny = sc.ERRNO(errno.EPERM)
    f = sc.SyscallFilter(sc.ALLOW)

    def rule(action, name, *args):
        try:
            f.add_rule(action, name, *args)
        except (RuntimeError, ValueError, OSError):
            pass  # syscall unknown on this architecture

    for name in DENIED_SYSCALLS:
        rule(deny, name)
    rule(deny, "socket", sc.Arg(0, sc.NE, 1))  # only AF_UNIX
    rule(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc falls back to clone, whose flags we see
    for flag in _NS_FLAGS:
        rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    rule(deny, "ioctl", sc.Arg(1, sc.EQ, 0x5412))  # TIOCSTI
    for name in ("kill", "tkill", "tgkill"):
        rule(deny, name, sc.Arg(0, sc.EQ, worker_pid))
    for name in ("kill", "tgkill"):
        rule(deny, name, sc.Arg(0, sc.MASKED_EQ, 0x80000000, 0x80000000))  # negative: groups
    fd = os.memfd_create("bpf")
    try:
        with os.fdopen(os.dup(fd), "wb") as fh:
            f.export_bpf(fh)
        os.lseek(fd, 0, 0)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_bpf(bpf: bytes) -> None:
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"seccomp load: {os.strerror(e)}")
