"""Probe which containment layers are really active, from inside a confined test process.

`probe_inside` runs (as trusted code) where a program would run and tries what the layers must
stop: writing and reading outside the temp dir, opening an internet socket, signalling pid 1.
`summarise` turns its report and the worker's hello into ``layer -> (active, detail)``, and
`isolated` says whether both network and write isolation hold (otherwise every verdict is
``sandbox_error``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import socket

_PR_GET_SECCOMP, _PR_GET_NO_NEW_PRIVS = 21, 39


def _denied(fn) -> tuple[bool, str]:
    try:
        fn()
    except OSError as e:
        return e.errno in (errno.EACCES, errno.EPERM, errno.EROFS), errno.errorcode.get(
            e.errno or -1, str(e.errno))
    return False, "allowed"


def probe_inside() -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    target = f"/tmp/dapo-probe-{os.getpid()}-{os.urandom(4).hex()}"
    write_denied, wd = _denied(lambda: os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600)))
    read_denied, rd = _denied(lambda: os.close(os.open("/etc/passwd", os.O_RDONLY)))
    sock_denied, sd = _denied(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
    kill_denied, kd = _denied(lambda: os.kill(1, 0))
    own_tmp_ok = not _denied(lambda: open("probe.txt", "w").close())[0]
    report = {
        "uid": os.getuid(), "groups": os.getgroups(),
        "seccomp_mode": libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0),
        "no_new_privs": libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0),
        "write_outside": [write_denied, wd], "read_outside": [read_denied, rd],
        "own_tmp_writable": own_tmp_ok, "inet_socket": [sock_denied, sd],
        "kill_pid1": [kill_denied, kd],
        "rlimits": {n: resource.getrlimit(getattr(resource, n))[0] for n in
                    ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_FSIZE",
                     "RLIMIT_NOFILE", "RLIMIT_CORE")},
    }
    if not write_denied:
        try:
            os.unlink(target)
        except OSError:
            pass
    return report


def summarise(hello: dict, report: dict | None) -> dict[str, tuple[bool, str]]:
    """Layer name -> (active, detail)."""
    ns = hello.get("ns", {})
    abi = int(hello.get("abi", 0))
    out: dict[str, tuple[bool, str]] = {}
    if report is None:
        out["probe"] = (False, "the probe did not report")
        return out
    rl = report["rlimits"]
    out["uid"] = (report["uid"] != 0 and not report["groups"],
                  (f"uid {report['uid']}, groups {report['groups']}; kill(1): "
                   f"{report['kill_pid1'][1]}"))
    out["rlimits"] = (rl["RLIMIT_AS"] > 0 and rl["RLIMIT_CPU"] > 0 and rl["RLIMIT_CORE"] == 0,
                      ", ".join(f"{k[7:]}={v}" for k, v in rl.items()))
    out["no_new_privs"] = (report["no_new_privs"] == 1, "prctl(PR_GET_NO_NEW_PRIVS)")
    fs_ok = report["write_outside"][0] and report["read_outside"][0] and \
        report["own_tmp_writable"]
    out["landlock_fs"] = (abi > 0 and fs_ok,
                          (f"ABI {abi}; write /tmp: {report['write_outside'][1]}, "
                           f"read /etc/passwd: {report['read_outside'][1]}, "
                           f"own temp dir writable: {report['own_tmp_writable']}"))
    out["landlock_net"] = (abi >= 4, f"TCP bind/connect handled (ABI {abi} >= 4)")
    out["landlock_scope"] = (abi >= 6, f"signals/abstract sockets scoped (ABI {abi} >= 6)")
    out["seccomp"] = (report["seccomp_mode"] == 2 and report["inet_socket"][0],
                      (f"filter mode {report['seccomp_mode']}; AF_INET socket: "
                       f"{report['inet_socket'][1]}"))
    out["netns"] = ("netns" in ns, ns.get("netns", "not available (needs root)"))
    out["mountns"] = ("mountns" in ns, ns.get("mountns", hello.get("ns_error") or
                                              "not available (needs root)"))
    out["tmpfs"] = ("tmpfs" in ns, ns.get("tmpfs", "temp dirs on the host file system"))
    return out


def isolated(layers: dict[str, tuple[bool, str]]) -> tuple[bool, str]:
    """Both network and write isolation must hold for any verdict to count."""
    net = [k for k in ("seccomp", "netns", "landlock_net") if layers.get(k, (False,))[0]]
    write = [k for k in ("landlock_fs",) if layers.get(k, (False,))[0]]
    if not net or not write:
        return False, f"network isolation: {net or 'none'}; write isolation: {write or 'none'}"
    return True, f"network: {', '.join(net)}; writes: {', '.join(write)}"
