#!/usr/bin/env python3
"""Run a command inside edge-ttsd.service's sandbox the way systemd 252 would, without systemd.

For tests and for checking a new dependency on a machine where systemd is not PID 1 (CI,
containers, a debootstrapped root). It reads the unit file and applies, in systemd's order:

- the file system: with --root, a private mount namespace in which the root is read-only
  (ProtectSystem=strict) except the StateDirectory=, /home, /root and /run/user are empty
  (ProtectHome=yes), /tmp and /var/tmp are private (PrivateTmp=yes); then chroot;
- StateDirectory= (created, owned by the service user, $STATE_DIRECTORY),
  LoadCredential= (copied, readable by the service user only, $CREDENTIALS_DIRECTORY);
- User=, Group=, SupplementaryGroups=, UMask=, Environment=, an empty
  CapabilityBoundingSet=, NoNewPrivileges=;
- seccomp, with the same rules systemd 252 builds: SystemCallFilter= (the groups come from
  `systemd-analyze syscall-filter`, so they are systemd's own), SystemCallErrorNumber=,
  SystemCallArchitectures=native, RestrictAddressFamilies=, MemoryDenyWriteExecute=,
  RestrictNamespaces=;
- then it execs ExecStart= (or the command given after `--`).

Not emulated: DevicePolicy=/DeviceAllow= and MemoryMax= (cgroups), ProtectKernel*=,
ProtectProc=, ProtectClock=, RestrictRealtime= (already implied by ~@resources here).

    run_sandboxed.py [--unit FILE] [--root DIR] [--set Key=Value ...] [--env K=V ...] [-- CMD ...]

Needs root for everything but the seccomp part; libseccomp2 (always on Debian: apt uses it).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import errno
import os
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "edge-ttsd.service"

# --- the unit file ------------------------------------------------------------------------


def parse_unit(text: str) -> dict[str, list[str]]:
    """Keys of all sections as `Section.Key` -> values in order; an empty assignment resets."""
    values: dict[str, list[str]] = {}
    section = ""
    logical = ""
    for raw in text.splitlines():
        line = raw.strip()
        if logical:
            line = logical + " " + line
            logical = ""
        if line.endswith("\\"):
            logical = line[:-1].rstrip()
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        name = f"{section}.{key.strip()}"
        value = value.strip()
        if value:
            values.setdefault(name, []).append(value)
        else:
            values[name] = []
    return values


class Unit:
    def __init__(self, path: Path, overrides: Iterable[str] = ()):
        self.name = path.name
        self.values = parse_unit(path.read_text(encoding="utf-8"))
        for item in overrides:
            key, _, value = item.partition("=")
            self.values[f"Service.{key}"] = [value] if value else []

    def all(self, key: str) -> list[str]:
        return self.values.get(f"Service.{key}", [])

    def get(self, key: str, default: str = "") -> str:
        found = self.all(key)
        return found[-1] if found else default

    def flag(self, key: str) -> bool:
        return self.get(key, "no").lower() in ("yes", "true", "on", "1", "strict", "full")

    def words(self, key: str) -> list[str]:
        return [word for value in self.all(key) for word in shlex.split(value)]


# --- libc and libseccomp through ctypes ---------------------------------------------------

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    32,
    4096,
    16384,
    1 << 18,
)
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_ACT_ALLOW = 0x7FFF0000
CMP_EQ, CMP_GE, CMP_MASKED_EQ = 4, 5, 7
_PROT_WRITE, _PROT_EXEC, _SHM_EXEC = 0x2, 0x4, 0o100000
AF_MAX = 46  # Linux 6.x; systemd's own table ends there too


def errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


def _libseccomp() -> ctypes.CDLL:
    lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_load.argtypes = (ctypes.c_void_p,)
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    return lib


class Filter:
    """One seccomp filter. systemd loads one per feature; stacked, the strictest one wins."""

    def __init__(self, default_action: int):
        self._lib = _libseccomp()
        self.default = default_action
        self.ctx = self._lib.seccomp_init(default_action)
        if not self.ctx:
            raise OSError("seccomp_init failed")

    def add(self, action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
        number = self._lib.seccomp_syscall_resolve_name(name.encode())
        if number == -1 or action == self.default:  # not a syscall on this architecture
            return
        array = (_ArgCmp * max(len(cmps), 1))(*[_ArgCmp(*cmp) for cmp in cmps])
        result = self._lib.seccomp_rule_add_array(self.ctx, action, number, len(cmps), array)
        if result not in (0, -errno.EEXIST, -errno.EDOM):  # EDOM: multiplexed, not native
            raise OSError(-result, f"seccomp rule for {name}: {os.strerror(-result)}")

    def load(self) -> None:
        result = self._lib.seccomp_load(self.ctx)
        self._lib.seccomp_release(self.ctx)
        if result != 0:
            raise OSError(-result, f"seccomp_load: {os.strerror(-result)}")


def syscall_groups() -> dict[str, list[str]]:
    """systemd's own @groups, from `systemd-analyze syscall-filter`."""
    out = subprocess.run(
        ["systemd-analyze", "syscall-filter", "--no-pager"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    groups: dict[str, list[str]] = {}
    current: list[str] = []
    for line in out.splitlines():
        if line.startswith("@"):
            current = groups.setdefault(line.strip(), [])
        elif line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())
    return groups


def expand(names: Iterable[str], groups: dict[str, list[str]]) -> set[str]:
    found: set[str] = set()
    for name in names:
        if name.startswith("@"):
            found |= expand(groups.get(name, []), groups)
        else:
            found.add(name.partition(":")[0])
    return found


def syscall_filter(unit: Unit) -> Filter | None:
    """SystemCallFilter= as systemd 252 builds it: the first entry decides allow or deny list;
    an allow list starts from @default; later `~` entries remove from it."""
    entries = unit.all("SystemCallFilter")
    if not entries:
        return None
    groups = syscall_groups()
    allow_list = not entries[0].startswith("~")
    chosen: set[str] = expand(["@default"], groups) if allow_list else set()
    for entry in entries:
        invert = entry.startswith("~")
        names = expand(entry.lstrip("~").split(), groups)
        if invert == allow_list:
            chosen -= names
        else:
            chosen |= names
    error = unit.get("SystemCallErrorNumber")
    fail = errno_action(getattr(errno, error)) if error else SCMP_ACT_KILL_PROCESS
    filt = Filter(fail if allow_list else SCMP_ACT_ALLOW)
    for name in sorted(chosen):
        filt.add(SCMP_ACT_ALLOW if allow_list else fail, name)
    return filt


def address_family_filter(unit: Unit) -> Filter | None:
    value = " ".join(unit.all("RestrictAddressFamilies"))
    if not value or value == "none":
        return None
    invert = value.startswith("~")
    listed = {int(getattr(socket, name)) for name in value.lstrip("~").split()}
    blocked = listed if invert else set(range(AF_MAX)) - listed
    filt = Filter(SCMP_ACT_ALLOW)
    refuse = errno_action(errno.EAFNOSUPPORT)
    for family in sorted(blocked):
        filt.add(refuse, "socket", (0, CMP_EQ, family, 0))
    if not invert:
        filt.add(refuse, "socket", (0, CMP_GE, AF_MAX, 0))
    return filt


def write_execute_filter() -> Filter:
    """MemoryDenyWriteExecute=yes, as systemd 252's seccomp_memory_deny_write_execute()."""
    filt = Filter(SCMP_ACT_ALLOW)
    eperm = errno_action(errno.EPERM)
    both = _PROT_WRITE | _PROT_EXEC
    for name in ("mmap", "mmap2"):
        filt.add(eperm, name, (2, CMP_MASKED_EQ, both, both))
    for name in ("mprotect", "pkey_mprotect"):
        filt.add(eperm, name, (2, CMP_MASKED_EQ, _PROT_EXEC, _PROT_EXEC))
    filt.add(eperm, "shmat", (2, CMP_MASKED_EQ, _SHM_EXEC, _SHM_EXEC))
    return filt


def namespace_filter() -> Filter:
    """RestrictNamespaces=yes: no unshare()/setns(), no clone() with namespace flags."""
    flags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
    flags |= 0x40000000  # NEWNS NEWCGROUP NEWUTS NEWIPC NEWUSER NEWPID NEWNET
    filt = Filter(SCMP_ACT_ALLOW)
    eperm = errno_action(errno.EPERM)
    for name in ("unshare", "setns"):
        filt.add(eperm, name)
    for bit in range(32):
        if flags & (1 << bit):
            filt.add(eperm, "clone", (0, CMP_MASKED_EQ, 1 << bit, 1 << bit))
    # clone3() takes its flags in a struct seccomp cannot read: systemd answers ENOSYS so that
    # glibc falls back to clone(), whose flags it can check.
    filt.add(errno_action(errno.ENOSYS), "clone3")
    return filt


# --- the steps ----------------------------------------------------------------------------


def lookup(root: Path, user: str, group: str, extra: list[str]) -> tuple[int, int, list[int], str]:
    def table(name: str) -> dict[str, list[str]]:
        rows = (root / "etc" / name).read_text(encoding="utf-8").splitlines()
        return {r.split(":")[0]: r.split(":") for r in rows if r and not r.startswith("#")}

    passwd, groups = table("passwd"), table("group")
    if user not in passwd:
        raise SystemExit(f"run_sandboxed: no user {user!r} in {root}/etc/passwd (217/USER)")
    uid, gid, home = int(passwd[user][2]), int(passwd[user][3]), passwd[user][5]
    if group:
        gid = int(groups[group][2])
    return uid, gid, [int(groups[name][2]) for name in extra], home


def setup_mounts(unit: Unit, root: Path, writable: list[Path]) -> None:
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    top = str(root)
    _mount(top, top, None, MS_BIND | MS_REC)
    if unit.flag("PrivateTmp"):
        for tmp in ("tmp", "var/tmp"):
            if (root / tmp).is_dir():
                _mount("tmpfs", str(root / tmp), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    if unit.get("ProtectHome") in ("yes", "true", "read-only", "tmpfs"):
        for home in ("home", "root", "run/user"):
            if (root / home).is_dir():
                _mount("tmpfs", str(root / home), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
                _mount(None, str(root / home), None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for path in writable:
        _mount(str(path), str(path), None, MS_BIND)
    if unit.get("ProtectSystem") == "strict":
        _mount(None, top, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        for path in writable:  # a bind of a read-only mount's directory starts read-only
            _mount(None, str(path), None, MS_REMOUNT | MS_BIND)


def state_directories(unit: Unit, root: Path, uid: int, gid: int) -> list[str]:
    mode = int(unit.get("StateDirectoryMode", "0755"), 8)
    paths = []
    for name in unit.words("StateDirectory"):
        path = root / "var" / "lib" / name
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(mode)
        st = path.stat()
        if (st.st_uid, st.st_gid) != (uid, gid):  # systemd's shortcut: top dir owned → done
            for sub in [path, *path.rglob("*")]:
                os.chown(sub, uid, gid, follow_symlinks=False)
        paths.append(f"/var/lib/{name}")
    return paths


def credentials(unit: Unit, root: Path, uid: int, gid: int) -> str | None:
    entries = unit.all("LoadCredential")
    if not entries:
        return None
    directory = root / "run" / "credentials" / unit.name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    for entry in entries:
        cred, _, source = entry.partition(":")
        src = root / source.lstrip("/")
        if not src.is_file():
            raise SystemExit(f"run_sandboxed: credential {cred}: no {source} (243/CREDENTIALS)")
        target = directory / cred
        shutil.copyfile(src, target)
        os.chown(target, uid, gid)
        target.chmod(0o400)
    os.chown(directory, uid, gid)
    directory.chmod(0o500)
    return f"/run/credentials/{unit.name}"


def environment(unit: Unit, user: str, home: str, extra: dict[str, str]) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
        "LANG": "C.UTF-8",
        "HOME": home,
        "USER": user,
        "LOGNAME": user,
        "SHELL": "/usr/sbin/nologin",
        "INVOCATION_ID": os.urandom(16).hex(),
    }
    for item in unit.words("Environment"):
        key, _, value = item.partition("=")
        env[key] = value
    watchdog = unit.get("WatchdogSec")
    if watchdog:
        env["WATCHDOG_USEC"] = str(int(_seconds(watchdog) * 1_000_000))
        env["WATCHDOG_PID"] = str(os.getpid())  # exec keeps the pid
    env.update(extra)
    return env


def _seconds(span: str) -> float:
    units = {"ms": 0.001, "s": 1, "sec": 1, "min": 60, "m": 60}
    for suffix, factor in sorted(units.items(), key=lambda kv: -len(kv[0])):
        if span.endswith(suffix):
            return float(span[: -len(suffix)]) * factor
    return float(span)


def drop_capability_bounding_set(last: int) -> None:
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unit", type=Path, default=UNIT)
    parser.add_argument("--root", type=Path, help="a target root (chroot) holding the install")
    parser.add_argument("--set", action="append", default=[], metavar="Key=Value")
    parser.add_argument("--env", action="append", default=[], metavar="K=V")
    parser.add_argument("command", nargs="*", help="instead of ExecStart=")
    args = parser.parse_args(argv)

    unit = Unit(args.unit, args.set)
    command = args.command or shlex.split(unit.get("ExecStart").lstrip("-@:+!"))
    root = (args.root or Path("/")).resolve()
    extra = dict(item.split("=", 1) for item in args.env)
    env_add: dict[str, str] = {}
    is_root = os.geteuid() == 0
    user = unit.get("User")
    uid = gid = -1
    groups: list[int] = []
    home = os.environ.get("HOME", "/")
    if is_root and user:
        extra_groups = unit.words("SupplementaryGroups")
        uid, gid, groups, home = lookup(root, user, unit.get("Group"), extra_groups)
        states = state_directories(unit, root, uid, gid)
        if states:
            env_add["STATE_DIRECTORY"] = ":".join(states)
        creds = credentials(unit, root, uid, gid)
        if creds:
            env_add["CREDENTIALS_DIRECTORY"] = creds
        if args.root:
            setup_mounts(unit, root, [root / s.lstrip("/") for s in states])
    env = environment(unit, user or os.environ.get("USER", "root"), home, {**env_add, **extra})
    # systemd's order: the syscall filter goes last, as close to execve() as possible
    # (it also forbids seccomp() itself, so nothing could be loaded after it). Built now,
    # while systemd-analyze and libseccomp of this machine are at hand; loaded at the end.
    filters = [namespace_filter() if unit.flag("RestrictNamespaces") else None]
    if unit.flag("MemoryDenyWriteExecute"):
        filters.append(write_execute_filter())
    filters += [address_family_filter(unit), syscall_filter(unit)]
    last_cap = int(Path("/proc/sys/kernel/cap_last_cap").read_text())

    if args.root:
        os.chroot(root)
    os.chdir(unit.get("WorkingDirectory", "/"))
    if is_root and user:
        if "Service.CapabilityBoundingSet" in unit.values and not unit.all("CapabilityBoundingSet"):
            drop_capability_bounding_set(last_cap)  # CapabilityBoundingSet= (empty)
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(uid)
    os.umask(int(unit.get("UMask", "0022"), 8))
    if unit.flag("NoNewPrivileges") or not is_root:
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")

    for filt in filters:
        if filt is not None:
            filt.load()
    os.execve(command[0], command, env)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
