"""The sem_bench boot benchmark's console lines (kernel-patches/0007), parsed.  Pure.

The kernel prints one KTAP document (parse.parse_ktap sees it as "sem_bench"), whose
diagnostic lines carry the figures as key=value words:

    # sem_bench config smp=1 cpus=2 debug_mutexes=0 ... hz=250
    # sem_bench size type=mutex bytes=32
    # sem_bench lock type=mutex threads=4 run=1 us=1000123 ops=123456 cpu_ns=1999 cpus=2
    # sem_bench handoff type=completion threads=2 run=1 us=... ops=... cpu_ns=... cpus=2

parse_sem_bench() turns a console log into a SemBench; summarise() turns the
measurements into median/min/max of ops/s and CPU use per (test, type, threads).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import TypedDict

from qemu.parse import clean_lines

_LINE = re.compile(r"^# sem_bench (?P<kind>config|size|lock|handoff)"
                   r"(?P<words>(?: [a-z_]+=[A-Za-z0-9_]+)+)\s*$")
_WORD = re.compile(r"([a-z_]+)=([A-Za-z0-9_]+)")
_INT = re.compile(r"^-?\d+$")
MEASURE_KEYS = ("type", "threads", "run", "us", "ops", "cpu_ns", "cpus")


class SemBenchError(ValueError):
    """A sem_bench line that claims to be one but lacks a field or has a bad value."""


@dataclass(frozen=True)
class Measurement:
    test: str           # lock | handoff
    type: str           # arch_semaphore | mutex | mutex_debug | semaphore | completion
    threads: int
    run: int
    us: int             # wall time, microseconds
    ops: int            # lock/unlock pairs (lock) or round trips (handoff)
    cpu_ns: int         # CPU time of all the benchmark's kthreads
    cpus: int           # online CPUs

    @property
    def ops_per_s(self) -> float:
        return self.ops * 1e6 / self.us if self.us > 0 else 0.0

    @property
    def cpu_percent(self) -> float:
        """CPU use as a share of all CPUs over the wall time, in percent."""
        wall_ns = self.us * 1000 * self.cpus
        return 100.0 * self.cpu_ns / wall_ns if wall_ns > 0 else 0.0


@dataclass
class SemBench:
    config: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    measurements: list[Measurement] = field(default_factory=list)


def _words(text: str) -> dict[str, str]:
    return dict(_WORD.findall(text))


def parse_sem_bench(text: str) -> SemBench:
    """Every sem_bench line of a console log; other lines are ignored."""
    out = SemBench()
    for line in clean_lines(text):
        m = _LINE.match(line)
        if not m:
            continue
        kind, words = m["kind"], _words(m["words"])
        if kind == "config":
            out.config.update(words)
        elif kind == "size":
            if "type" not in words or not _INT.match(words.get("bytes", "")):
                raise SemBenchError(f"size line without type or bytes: {line!r}")
            out.sizes[words["type"]] = int(words["bytes"])
        else:
            missing = [k for k in MEASURE_KEYS if k not in words]
            if missing:
                raise SemBenchError(f"{kind} line without {', '.join(missing)}: {line!r}")
            bad = [k for k in MEASURE_KEYS[1:] if not _INT.match(words[k])]
            if bad:
                raise SemBenchError(f"{kind} line with a non-integer {bad[0]}: {line!r}")
            out.measurements.append(Measurement(
                kind, words["type"], *(int(words[k]) for k in MEASURE_KEYS[1:])))
    return out


class Spread(TypedDict):
    """A figure over several runs."""
    median: float
    min: float
    max: float
    n: int
    runs: list[float]


class ContentionRow(TypedDict):
    """One (test, type, threads) of the measurements: bench.json's "contention" rows."""
    test: str
    type: str
    threads: int
    ops_per_s: Spread
    cpu_percent: Spread


def spread(values: list[float], digits: int = 1) -> Spread:
    """median, min, max and the runs themselves, rounded."""
    if not values:
        raise ValueError("no values")
    return {"median": round(statistics.median(values), digits),
            "min": round(min(values), digits), "max": round(max(values), digits),
            "n": len(values), "runs": [round(v, digits) for v in values]}


def summarise(measurements: list[Measurement]) -> list[ContentionRow]:
    """One row per (test, type, threads), in the order first seen: ops/s and CPU %."""
    groups: dict[tuple[str, str, int], list[Measurement]] = {}
    for m in measurements:
        groups.setdefault((m.test, m.type, m.threads), []).append(m)
    rows: list[ContentionRow] = []
    for (test, typ, threads), ms in groups.items():
        rows.append({"test": test, "type": typ, "threads": threads,
                     "ops_per_s": spread([m.ops_per_s for m in ms], 0),
                     "cpu_percent": spread([m.cpu_percent for m in ms], 1)})
    return rows
