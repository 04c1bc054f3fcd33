"""Time `make audit` cold and warm: the classifier's speed targets, measured.

Each run is a separate `python3 -m classify audit` process writing to a scratch
directory, so the figures include interpreter start-up and report writing, as a
user sees them.  Cold runs pass --fresh (every file re-scanned, spatch re-run);
warm runs follow a cold one with nothing changed.  Prints median, min and max.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class BenchError(Exception):
    """An audit run failed: its command and the end of its output."""


def time_audit(kernel: Path, cache: Path, fresh: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="s2m-bench-") as out:
        cmd = [sys.executable, "-m", "classify", "audit", "--kernel", str(kernel),
               "--cache", str(cache), "--out", out] + (["--fresh"] if fresh else [])
        started = time.monotonic()
        res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        seconds = time.monotonic() - started
    if res.returncode != 0:
        raise BenchError(f"{' '.join(cmd)} failed ({res.returncode}):\n"
                         + "\n".join(res.stderr.splitlines()[-20:]))
    return seconds


def summarise(seconds: list[float]) -> dict:
    return {"median": round(statistics.median(seconds), 1), "min": round(min(seconds), 1),
            "max": round(max(seconds), 1), "runs": [round(s, 1) for s in seconds]}


def bench_audit(kernel: Path, cache: Path, runs: int) -> dict:
    figures: dict[str, list[float]] = {"cold": [], "warm": []}
    for i in range(runs):
        for kind in ("cold", "warm"):
            seconds = time_audit(kernel, cache, fresh=kind == "cold")
            figures[kind].append(seconds)
            print(f"bench: audit {kind} run {i + 1}/{runs}: {seconds:.1f} s",
                  file=sys.stderr, flush=True)
    return {kind: summarise(s) for kind, s in figures.items()}


def main(kernel: Path, cache: Path, runs: int, out: Path | None) -> int:
    result = {"kernel": str(kernel), "cpus": len(os.sched_getaffinity(0)),
              "date": time.strftime("%Y-%m-%d"), "audit": bench_audit(kernel, cache, runs)}
    for kind in ("cold", "warm"):
        f = result["audit"][kind]
        print(f"bench: make audit {kind}: median {f['median']} s "
              f"(min {f['min']}, max {f['max']}, {runs} runs)")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        print(f"bench: wrote {out}")
    return 0
