"""The bench's `verify` part: how long the verification of the conversion patches
takes (`python3 -m classify patches --verify-only`: git am, checkpatch, and the
before/after compiles with sparse, on x86_64 or the architecture that builds a
file), here and through distcc.

Both runs start from an empty ccache of their own (a ccache hit never reaches
distcc, and the two runs must compile the same objects) and from the persistent
O= directories `make patches` configured (their configuration is not measured).
The distcc run goes to a distccd this part starts on 127.0.0.1: the same machine,
so its figure is distcc's overhead (and make -j from the host list instead of
-j1), not a speed-up; build hosts elsewhere give the speed-up.  The series are
verified in a copy of the patches directory: work/patches keeps its records.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from classify import distcc
from classify.paths import PROJECT_DIR
from qemu.bench.figures import BenchError, summarise

OVERHEAD_NOTE = ("distcc: a distccd on the same machine (127.0.0.1), so the figure is "
                 "distcc's overhead, not a speed-up")


def verify_once(kernel: Path, patches: Path, work: Path, env: dict[str, str]) -> tuple[float, dict]:
    """One verification of the series of patches in a copy under work, with env;
    (wall seconds, what it counted)."""
    out = work / "patches"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(patches, out, ignore=shutil.ignore_patterns("logs", "verify.json",
                                                                "patches.json"))
    cmd = [sys.executable, "-m", "classify", "patches", "--kernel", str(kernel),
           "--verify-only", "--out", str(out)]
    started = time.monotonic()
    res = subprocess.run(cmd, cwd=PROJECT_DIR, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if res.returncode != 0:
        raise BenchError(f"{' '.join(cmd)} failed ({res.returncode}): "
                         + " | ".join((res.stdout + res.stderr).strip().splitlines()[-3:]))
    data = json.loads((out / "verify.json").read_text())
    verified = [r["verification"] for r in data["semaphores"].values() if r.get("verification")]
    # a hand-written patch converts several semaphores: its record is theirs
    patches = {r["patch"]: r for r in verified}
    return wall, {"patches": len(patches), "semaphores": len(verified),
                  "objects": sum(len(r.get("build", {})) for r in patches.values()),
                  "prepare_seconds": data.get("timings", {}).get("prepare_seconds", 0.0)}


def bench_verify(kernel: Path, patches: Path, runs: int, out_dir: Path) -> dict:
    if not (patches / "patches.json").is_file():
        raise BenchError(f"{patches}: no conversion patches: run `make patches` first")
    if not shutil.which("distccd"):
        raise BenchError("distccd is not installed (Debian package distcc; make setup)")
    out_dir.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k != "DISTCC_HOSTS"}
    times: dict[str, list[float]] = {"local": [], "distcc": []}
    # configuring a build directory an architecture needs for the first time
    prepare: dict[str, list[float]] = {"local": [], "distcc": []}
    counted: dict = {}
    jobs = 0
    with tempfile.TemporaryDirectory(prefix="s2m-bench-verify-") as tmp:
        work = Path(tmp)
        for i in range(runs):
            shutil.rmtree(work / "ccache", ignore_errors=True)
            wall, counted = verify_once(kernel, patches, work,
                                        {**base, "CCACHE_DIR": str(work / "ccache")})
            times["local"].append(wall)
            prepare["local"].append(counted.pop("prepare_seconds"))
            print(f"bench: verify local run {i + 1}/{runs}: {wall:.1f} s", file=sys.stderr,
                  flush=True)
            shutil.rmtree(work / "ccache", ignore_errors=True)
            logfile = out_dir / f"distccd-{i + 1}.log"
            with distcc.local_daemon(logfile) as host:
                wall, theirs = verify_once(kernel, patches, work, {
                    **base, "CCACHE_DIR": str(work / "ccache"), "DISTCC_HOSTS": host})
            prepare["distcc"].append(theirs["prepare_seconds"])
            jobs = distcc.jobs_done(logfile)
            times["distcc"].append(wall)
            print(f"bench: verify through distcc run {i + 1}/{runs}: {wall:.1f} s, "
                  f"{jobs} jobs in distccd's log", file=sys.stderr, flush=True)
    return {**{k: summarise(v) for k, v in times.items()}, **counted,
            "prepare_seconds": {k: summarise(v) for k, v in prepare.items()},
            "distcc_jobs": jobs, "hosts": "127.0.0.1 (distccd --jobs 2), make -j2",
            "local_jobs": "make -j1", "ccache": "empty at the start of each run",
            "note": OVERHEAD_NOTE}
