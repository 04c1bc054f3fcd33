"""Kernel builds through distcc, when DISTCC_HOSTS says where.

Without DISTCC_HOSTS in the environment nothing changes: ccache compiles here,
make -j is cores + 1.  With it, every kbuild make (verification, marking check,
boot kernels, bench) runs ccache with CCACHE_PREFIX=distcc, so a ccache miss is
compiled by a distccd of the list (ccache still preprocesses here and still
serves its hits), and -j is the host list's total (`distcc -j`).

Before the first make, each host of the list is tried (a TCP connect): when none
answers the build stops with one line naming them; when some do, the others
are named in a warning and distcc itself runs their jobs here (its fallback).
A host that answers but cannot compile (no such compiler) is distcc's own
fallback too: distcc logs "failed to distribute, running locally instead".
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

log = logging.getLogger("sem2mutex.distcc")

DEFAULT_PORT = 3632
_HOST = re.compile(r"^(?P<user>[^@]+@)?(?P<host>\[[^\]]+\]|[^:/,]+)(?::(?P<port>\d+))?"
                   r"(?:/(?P<limit>\d+))?(?P<opts>,.*)?$")


class DistccError(RuntimeError):
    """No build host of DISTCC_HOSTS can be reached."""


def host_list(env: dict[str, str]) -> list[str]:
    """The entries of DISTCC_HOSTS ([] when unset or blank), options
    (--randomize, --localslots=N) and +zeroconf left out."""
    return [h for h in env.get("DISTCC_HOSTS", "").split()
            if not h.startswith("-") and h != "+zeroconf"]


def enabled(env: dict[str, str]) -> bool:
    return bool(host_list(env))


def tcp_address(entry: str) -> tuple[str, int] | None:
    """(host, port) of a TCP entry ("build1:3700/8", "build2/4"); None for one
    that does not go through a distccd port here (localhost runs the compiler
    locally; user@host goes through ssh)."""
    m = _HOST.match(entry)
    if not m or m.group("user") or m.group("host") == "localhost":
        return None
    return m.group("host").strip("[]"), int(m.group("port") or DEFAULT_PORT)


def jobs(env: dict[str, str]) -> int:
    """make -j from the host list: what `distcc -j` says (the sum of each host's
    limit), else 4 a host, as distcc counts."""
    try:
        res = subprocess.run(["distcc", "-j"], capture_output=True, text=True,
                             env=env, timeout=10)
        if res.returncode == 0 and res.stdout.strip().isdigit():
            return int(res.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    total = 0
    for entry in host_list(env):
        m = _HOST.match(entry)
        total += int(m.group("limit")) if m and m.group("limit") else 4
    return max(total, 1)


def unreachable(env: dict[str, str], timeout: float = 3.0) -> dict[str, str]:
    """{entry: why} for each TCP host of the list that does not accept a
    connection."""
    out = {}
    for entry in host_list(env):
        addr = tcp_address(entry)
        if addr is None:
            continue
        try:
            with socket.create_connection(addr, timeout=timeout):
                pass
        except OSError as e:
            out[entry] = e.strerror or type(e).__name__
    return out


def check_hosts(env: dict[str, str], warn: bool = True) -> None:
    """Raise DistccError when DISTCC_HOSTS is set and none of its hosts answers;
    with warn, log a warning naming the ones that do not, when others do."""
    hosts = host_list(env)
    if not hosts:
        return
    down = unreachable(env)
    named = "; ".join(f"{h}: {why}" for h, why in down.items())
    if len(down) == len(hosts):
        raise DistccError(f"distcc: no host of DISTCC_HOSTS answers ({named}): start "
                          "distccd there, fix DISTCC_HOSTS, or unset it to build here")
    if down and warn:
        log.warning("distcc: %d of %d host(s) do not answer (%s); distcc compiles "
                    "their share here", len(down), len(hosts), named)


def build_env(env: dict[str, str]) -> dict[str, str]:
    """The variables a kbuild make adds: ccache hands its misses to distcc."""
    return {"CCACHE_PREFIX": "distcc"} if enabled(env) else {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_daemon(logfile: Path, jobs: int = 2, port: int = 0) -> Iterator[str]:
    """A distccd on 127.0.0.1 (its own port, its log in logfile, only 127.0.0.1
    allowed) for the tests and the bench; yields its DISTCC_HOSTS entry."""
    port = port or free_port()
    with open(logfile, "w") as log:
        proc = subprocess.Popen(["distccd", "--daemon", "--no-detach", "--listen", "127.0.0.1",
                                 "--port", str(port), "--allow", "127.0.0.1",
                                 "--jobs", str(jobs), "--log-stderr", "--log-level", "info"],
                                stderr=log)
    try:
        for _ in range(100):
            if "listening on" in logfile.read_text() or proc.poll() is not None:
                break
            time.sleep(0.1)
        if proc.poll() is not None:
            raise DistccError(f"distccd did not start: {logfile.read_text().strip()[-200:]}")
        yield f"127.0.0.1:{port}/{jobs}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def jobs_done(logfile: Path) -> int:
    """How many compile jobs a distccd's log says it completed."""
    return logfile.read_text(errors="replace").count("COMPILE_OK")
