"""The bench's `triage` part: `python3 -m qemu triage` on a large log, and on inputs
that are not logs.

The large log (work/bench/triage/big.log, SIZE bytes) is a committed runtime log of
the runtime set, the one with the most reports, repeated whole (banner, reports,
lockdep-class lines) until it is that size, its printk times going on from one
copy to the next.  Each run is a child process: its wall time, its CPU time (user +
system, from wait4: on a machine shared with other jobs the wall time is an upper
bound, the CPU time what the run itself cost) and its peak resident memory
(ru_maxrss).  /dev/zero and /dev/urandom must be refused quickly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from classify.paths import PROJECT_DIR
from qemu import parse
from qemu.bench.figures import BenchError, summarise

SIZE = 200 << 20
RUNTIME = PROJECT_DIR / "reports" / "linux-6.1.192" / "runtime"
AUDIT = RUNTIME.parent / "audit.json"
_TIME = re.compile(rb"^\[\s*(\d+)\.(\d+)\]", re.M)


def source_log() -> Path:
    """The committed runtime log with the most reports."""
    logs = sorted(RUNTIME.glob("*.log"))
    if not logs:
        raise BenchError(f"triage: no runtime log in {RUNTIME}")
    return max(logs, key=lambda p: (len(parse.parse_log(p.read_text(errors="replace"))
                                        .reports), p.name))


def build_log(src: Path, dest: Path, size: int = SIZE) -> int:
    """dest: src repeated to `size` bytes, times shifted by 1000 s a copy; its size."""
    text = src.read_bytes()
    dest.parent.mkdir(parents=True, exist_ok=True)
    written = copy = 0
    with open(dest, "wb") as out:
        while written < size:
            shift = copy * 1000
            chunk = _TIME.sub(lambda m: b"[%5d.%s]" % (int(m[1]) + shift, m[2]), text)
            out.write(chunk)
            written += len(chunk)
            copy += 1
    return written


def timed_child(cmd: list[str]) -> tuple[int, float, float, float]:
    """(exit status, wall seconds, peak resident MiB, CPU seconds) of one child."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    return proc.returncode, wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def triage_cmd(log: Path) -> list[str]:
    return [sys.executable, "-m", "qemu", "triage", str(log), "--audit", str(AUDIT),
            "--json"]


def bench_triage(runs: int, out_dir: Path, size: int = SIZE) -> dict:
    """The figures: the large log's wall time and peak memory per run, and the
    seconds /dev/zero and /dev/urandom take to be refused (exit status 2)."""
    src = source_log()
    big = out_dir / "big.log"
    total = build_log(src, big, size)
    walls, peaks, cpus = [], [], []
    try:
        for i in range(runs):
            rc, wall, peak, cpu = timed_child(triage_cmd(big))
            if rc != 0:
                raise BenchError(f"triage of {big} failed (exit status {rc})")
            walls.append(wall)
            peaks.append(peak)
            cpus.append(cpu)
            print(f"bench: triage {total >> 20} MiB run {i + 1}/{runs}: {wall:.1f} s "
                  f"({cpu:.1f} s CPU), peak {peak:.0f} MiB", file=sys.stderr)
    finally:
        big.unlink(missing_ok=True)
    refused = {}
    for dev in ("/dev/zero", "/dev/urandom"):
        rc, wall, peak, _ = timed_child(triage_cmd(Path(dev)))
        if rc != 2:
            raise BenchError(f"triage {dev}: exit status {rc}, not 2")
        refused[Path(dev).name] = {"seconds": round(wall, 2), "peak_mib": round(peak, 1)}
        print(f"bench: triage {dev}: refused in {wall:.2f} s", file=sys.stderr)
    return {"log": src.name, "log_mib": round(total / (1 << 20), 1),
            "seconds": summarise(walls), "cpu_seconds": summarise(cpus),
            "peak_mib": round(max(peaks), 1),
            "peak_mib_runs": [round(p, 1) for p in peaks], "refused": refused,
            "command": "python3 -m qemu triage LOG --audit AUDIT --json"}
