"""Stage 4, run: boot a kernel image + initramfs in QEMU (x86_64: the default PC and
ttyS0; arm64: `-M virt -cpu cortex-a57` and ttyAMA0), console teed live to a log file.

The timeout is enforced from outside: QEMU runs in its own session (process group) and
the whole group is killed when the deadline passes.  The harness appends one line of its
own to the console log, always starting with HARNESS_PREFIX, saying how QEMU ended;
parse.py reads the verdict (hang, QEMU failure, truncated log) from that line.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import socket
import time
import shutil
import signal
import subprocess
import threading

from dataclasses import dataclass, field
from pathlib import Path

from qemu.arch import get_arch
from qemu.common import Timer

log = logging.getLogger("sem2mutex.qemu.run")

QEMU = get_arch("x86_64").qemu
HARNESS_PREFIX = "s2m-harness: "
BASE_CMDLINE = "console=ttyS0 panic=-1 ignore_loglevel"


def base_cmdline(arch: str = "x86_64") -> str:
    """BASE_CMDLINE with the arch's serial console."""
    return BASE_CMDLINE.replace("ttyS0", get_arch(arch).console)
KEYS_TRIGGER = "s2m-init: keys"          # the guest's /init asks for key presses
KEY_NAMES = ("a", "s", "d", "f", "j", "k", "l", "spc")


class RunStatus(enum.Enum):
    EXITED = "exited"              # QEMU ended by itself with status 0 (reboot/panic)
    TIMEOUT = "timeout"            # killed by the harness at the deadline
    SILENT = "silent"              # killed: no console output for RunRequest.silence s
    QEMU_MISSING = "qemu_missing"
    QEMU_FAILED = "qemu_failed"    # QEMU ended with a non-zero status / signal


@dataclass(frozen=True)
class RunRequest:
    kernel: Path
    initrd: Path
    log_path: Path
    append: str = ""                     # added after BASE_CMDLINE
    timeout: float = 120.0
    accel: str = "tcg"
    memory_mb: int = 256
    smp: int = 1                         # vCPUs (the kernel needs CONFIG_SMP for > 1)
    qemu: str = ""                       # "": the arch's QEMU system binary
    arch: str = "x86_64"
    command: tuple[str, ...] | None = None  # replaces the QEMU command line (tests)
    extra_args: tuple[str, ...] = ()     # devices: disks, NICs, USB (runtime scenarios)
    qmp: Path | None = None              # QMP socket path (with keys)
    keys: int = 0                        # key presses sent through QMP on KEYS_TRIGGER
    silence: float = 0.0                 # > 0: kill QEMU after so long without a line


@dataclass
class RunResult:
    status: RunStatus
    elapsed: float
    returncode: int | None = None
    log_path: Path | None = None
    tail: list[str] = field(default_factory=list)   # last 50 console lines
    errors: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)


def qemu_command(req: RunRequest) -> list[str]:
    if req.command is not None:
        return list(req.command)
    arch = get_arch(req.arch)
    cmdline = base_cmdline(req.arch) + (" " + req.append if req.append else "")
    cmd = [req.qemu or arch.qemu, *arch.machine, "-accel", req.accel, "-m",
           str(req.memory_mb), "-smp", str(req.smp), "-nographic", "-no-reboot",
           "-kernel", str(req.kernel), "-initrd", str(req.initrd), "-append", cmdline]
    if req.qmp is not None:
        cmd += ["-qmp", f"unix:{req.qmp},server=on,wait=off"]
    return cmd + list(req.extra_args)


def key_events(names: tuple[str, ...]) -> list[dict]:
    """QMP commands: press and release each key (input-send-event, qcode names)."""
    out = []
    for name in names:
        for down in (True, False):
            out.append({"execute": "input-send-event", "arguments": {"events": [
                {"type": "key", "data": {"down": down,
                                         "key": {"type": "qcode", "data": name}}}]}})
    return out


def send_keys(path: Path, count: int, timeout: float = 10.0) -> str:
    """Press `count` keys through the QMP socket at `path`; returns a one-line outcome."""
    names = tuple(KEY_NAMES[i % len(KEY_NAMES)] for i in range(count))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            f = sock.makefile("rwb")
            f.readline()                                   # the QMP greeting
            replies = []
            for cmd in [{"execute": "qmp_capabilities"}] + key_events(names):
                f.write(json.dumps(cmd).encode() + b"\n")
                f.flush()
                replies.append(json.loads(f.readline() or b"{}"))
                time.sleep(0.05)
    except (OSError, ValueError) as err:
        return f"keys: QMP failed: {err}"
    bad = [r for r in replies if "return" not in r]
    return f"keys: {len(names)} pressed" + (f", {len(bad)} refused: {bad[0]}" if bad else "")


def wait_or_kill(proc: subprocess.Popen, req: RunRequest, last_line: list[float]) -> str:
    """Wait for QEMU to end: "exited", or "timeout" / "silent" (no console line for
    req.silence seconds) after killing its whole process group."""
    deadline = time.monotonic() + req.timeout
    ended = "exited"
    while proc.poll() is None:
        now = time.monotonic()
        if now >= deadline:
            ended = "timeout"
        elif req.silence > 0 and now - last_line[0] >= req.silence:
            ended = "silent"
        else:
            time.sleep(0.05)
            continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        break
    return ended


def run_qemu(req: RunRequest) -> RunResult:
    cmd = qemu_command(req)
    if req.command is None and shutil.which(cmd[0]) is None:
        pkg = "qemu-system-arm" if req.arch == "arm64" else "qemu-system-x86"
        return RunResult(RunStatus.QEMU_MISSING, 0.0, command=cmd, errors=[
            f"{cmd[0]} not found: apt-get install {pkg}"])
    req.log_path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    with Timer() as t, req.log_path.open("w", encoding="utf-8", errors="replace") as out:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as err:
            return RunResult(RunStatus.QEMU_MISSING, 0.0, command=cmd,
                             errors=[f"cannot start {cmd[0]}: {err}"])
        log.info("booting (%s, timeout %.0f s): %s", req.accel, req.timeout, req.log_path)
        stderr_chunks: list[bytes] = []
        notes: list[str] = []
        last_line = [time.monotonic()]

        def tee() -> None:
            assert proc.stdout is not None
            for raw in iter(proc.stdout.readline, b""):
                text = raw.decode("utf-8", "replace").replace("\r", "").rstrip("\n")
                lines.append(text)
                last_line[0] = time.monotonic()
                out.write(text + "\n")
                out.flush()
                if req.keys and req.qmp is not None and text.endswith(KEYS_TRIGGER):
                    threading.Thread(target=lambda: notes.append(send_keys(req.qmp, req.keys)),
                                     daemon=True).start()

        def drain() -> None:
            assert proc.stderr is not None
            stderr_chunks.append(proc.stderr.read())

        threads = [threading.Thread(target=tee, daemon=True),
                   threading.Thread(target=drain, daemon=True)]
        for th in threads:
            th.start()
        ended = wait_or_kill(proc, req, last_line)
        for th in threads:
            th.join(timeout=5)
        elapsed = t.now()
        stderr = b"".join(stderr_chunks).decode("utf-8", "replace").strip()
        if ended == "timeout":
            status = RunStatus.TIMEOUT
            marker = f"timeout after {req.timeout:.0f} s, killed qemu"
        elif ended == "silent":
            status = RunStatus.SILENT
            marker = f"no console output for {req.silence:.0f} s, killed qemu"
        elif proc.returncode != 0:
            status = RunStatus.QEMU_FAILED
            marker = f"qemu exited with status {proc.returncode}"
        else:
            status = RunStatus.EXITED
            marker = "qemu exited with status 0"
        for note in notes:
            out.write(f"{HARNESS_PREFIX}{note}\n")
        out.write(f"{HARNESS_PREFIX}{marker} after {elapsed:.1f} s\n")
    errors = []
    if status is RunStatus.QEMU_FAILED:
        errors = [f"{cmd[0]} exited with status {proc.returncode}"] + stderr.splitlines()[-10:]
    elif status is RunStatus.TIMEOUT:
        errors = [f"no end of boot after {req.timeout:.0f} s (hang); last console lines:"]
    elif status is RunStatus.SILENT:
        errors = [f"no console output for {req.silence:.0f} s (hang); last console lines:"]
    log.info("qemu: %s after %.1f s", status.value, t.elapsed)
    return RunResult(status, t.elapsed, proc.returncode, req.log_path, lines[-50:], errors, cmd)


def probe_kvm(kernel: Path, initrd: Path, log_path: Path, timeout: float = 20.0) -> bool:
    """KVM only after a short probe boot proves it reaches our init (nested KVM here
    hangs silently after the firmware)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    res = run_qemu(RunRequest(kernel, initrd, log_path, "s2m.scenario=kvm-probe",
                              timeout, accel="kvm"))
    ok = res.status is RunStatus.EXITED and "s2m-init: done" in log_path.read_text()
    log.info("kvm probe: %s", "works" if ok else "does not work, using tcg")
    return ok


