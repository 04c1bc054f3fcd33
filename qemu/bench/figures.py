"""The bench's figures: summaries of repeated runs, the seed's 2005 claims checked
against the 6.1 measurements, and the Markdown tables of reports/bench.md.  Pure
functions of the measured parts.
"""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Iterator

from qemu.bench.plot import Panel, Point
from qemu.bench.textsize import markdown as text_markdown, text_claim


PARTS = ("boots", "audit", "spatch", "kernel", "text", "boottest", "verify", "triage")


SCHEMA = 1


# The seed's figures (001-cover-generic-mutex-subsystem.txt), for the comparison.
SEED = {"semaphore_bytes": 20, "mutex_bytes": 16, "throughput_ratio": 2.4,
        "cpu_ratio": 2.8, "efficiency_ratio": 6.9, "text_saved_bytes": 25051}


TCG_NOTE = ("QEMU TCG (software emulation): the figures are relative (one type against "
            "another on the same boot), not absolute; they say nothing about real "
            "hardware speed.")


class BenchError(Exception):
    """A run failed: its command and the end of its output."""


def summarise(seconds: list[float]) -> dict:
    return {"median": round(statistics.median(seconds), 1), "min": round(min(seconds), 1),
            "max": round(max(seconds), 1), "runs": [round(s, 1) for s in seconds]}


def ratio(a: float, b: float, digits: int = 2) -> float | None:
    return round(a / b, digits) if b else None


def row(rows: list[dict], test: str, typ: str, threads: int) -> dict | None:
    return next((r for r in rows if (r["test"], r["type"], r["threads"])
                 == (test, typ, threads)), None)


def _verdict(value: float | None, seed: float) -> str:
    """holds (at least the seed's factor), partly (the same direction), does not hold."""
    if value is None:
        return "not measured"
    if value >= seed:
        return "holds"
    return "partly" if value > 1.0 else "does not hold"


def seed_claims(sizes: dict[str, int], rows: list[dict], text: dict | None = None
                ) -> list[dict]:
    """The seed's claims against the 6.1 figures, one entry each, with a verdict
    (text: the figures of the text part, see classify/textsize.py)."""
    claims = []
    sem, mtx = sizes.get("semaphore"), sizes.get("mutex")
    claims.append({
        "claim": "struct mutex is smaller than struct semaphore",
        "seed": f"{SEED['mutex_bytes']} vs {SEED['semaphore_bytes']} bytes (2005 i386)",
        "measured": f"{mtx} vs {sem} bytes (6.1 x86_64, no lock debugging)"
        if sem and mtx else "not measured",
        "verdict": "not measured" if not (sem and mtx) else
        ("holds" if mtx < sem else "does not hold")})
    threads = max((r["threads"] for r in rows if r["test"] == "lock"), default=0)
    s, m = row(rows, "lock", "arch_semaphore", threads), row(rows, "lock", "mutex", threads)
    tput = cpu = eff = cpu_more = None
    if s and m:
        cpu_more = ratio(m["cpu_percent"]["median"], s["cpu_percent"]["median"])
        tput = ratio(m["ops_per_s"]["median"], s["ops_per_s"]["median"])
        cpu = ratio(s["cpu_percent"]["median"], m["cpu_percent"]["median"])
        eff_s = ratio(s["ops_per_s"]["median"], s["cpu_percent"]["median"], 6)
        eff_m = ratio(m["ops_per_s"]["median"], m["cpu_percent"]["median"], 6)
        eff = ratio(eff_m or 0.0, eff_s or 0.0)
    where = f"{threads} kthreads on one lock (sem_bench, QEMU TCG)"
    claims.append({"claim": "under contention a mutex has more throughput than a semaphore",
                   "seed": f"{SEED['throughput_ratio']}x (test-mutex V 16 10, 8 CPUs)",
                   "measured": f"{tput}x, {where}" if tput else "not measured",
                   "verdict": _verdict(tput, SEED["throughput_ratio"])})
    claims.append({"claim": "under contention a mutex uses less CPU than a semaphore",
                   "seed": f"{SEED['cpu_ratio']}x less CPU",
                   "measured": (f"{cpu}x less CPU" if cpu >= 1 else
                                f"{cpu_more}x more CPU") + f", {where}"
                   if cpu else "not measured",
                   "verdict": _verdict(cpu, SEED["cpu_ratio"])})
    claims.append({"claim": "a mutex does more operations per unit of CPU time",
                   "seed": f"{SEED['efficiency_ratio']}x",
                   "measured": f"{eff}x, {where}" if eff else "not measured",
                   "verdict": _verdict(eff, SEED["efficiency_ratio"])})
    md = sizes.get("mutex_debug")
    claims.append({"claim": "struct mutex_debug is a plain struct mutex when lock debugging "
                            "is off",
                   "seed": "mutex_debug maps down()/up() to mutex_lock()/mutex_unlock()",
                   "measured": f"{md} vs {mtx} bytes" if md and mtx else "not measured",
                   "verdict": "not measured" if not (md and mtx) else
                   ("holds" if md == mtx else "does not hold")})
    claims.append(text_claim(text, SEED["text_saved_bytes"]))
    return claims


def toolkit_ratios(audit: dict | None, spatch: dict | None) -> dict:
    """How many times faster the audit is than one whole-tree spatch run: in wall
    time, and in CPU time (user + system of all child processes), which a loaded
    machine changes much less."""
    if not audit or not spatch:
        return {}
    base = spatch["median"]
    ratios = {"spatch_over_audit_cold": ratio(base, audit["cold"]["median"], 1),
              "spatch_over_audit_warm": ratio(base, audit["warm"]["median"], 1)}
    if spatch.get("cpu") and audit.get("cold_cpu"):
        for kind in ("cold", "warm"):
            ratios[f"spatch_over_audit_{kind}_cpu"] = ratio(
                spatch["cpu"]["median"], audit[f"{kind}_cpu"]["median"], 1)
    return ratios


def contention_panels(rows: list[dict]) -> list[Panel]:
    panels = []
    for test, title in (("lock", "lock/unlock, one lock: ops/s"),
                        ("handoff", "wait/wake handoff: round trips/s")):
        p = Panel(title, "kthreads", "operations per second (TCG)")
        for r in rows:
            if r["test"] != test:
                continue
            f = r["ops_per_s"]
            p.series.setdefault(r["type"], []).append(
                Point(r["threads"], f["median"], f["min"], f["max"]))
        if p.series:
            panels.append(p)
    return panels


def _spread_text(f: dict | None, unit: str = "", digits: int = 0) -> str:
    if not f:
        return "-"
    fmt = f"{{:,.{digits}f}}"
    return (f"{fmt.format(f['median'])}{unit} ({fmt.format(f['min'])}–"
            f"{fmt.format(f['max'])})")


def verify_rows(v: dict | None) -> list[str]:
    """The verification of the conversion patches, here and through distcc."""
    if not v:
        return []
    what = f"{v.get('patches')} patches, {v.get('objects')} objects"
    if v.get("semaphores", v.get("patches")) != v.get("patches"):
        what = f"{v['semaphores']} semaphores, " + what
    prepare = v.get("prepare_seconds") or {}

    def of_which(mode: str) -> str:
        f = prepare.get(mode)
        return (f"; of which configuring build directories: {f['median']:,.1f}"
                if f and f["median"] else "")
    return [f"| verification of the conversion patches ({what}), {v['local_jobs']}, "
            f"empty ccache | {_spread_text(v['local'], digits=1)}{of_which('local')} |",
            f"| the same through distcc ({v['hosts']}; {v['distcc_jobs']} jobs went "
            f"there; same machine: overhead, not a speed-up) | "
            f"{_spread_text(v['distcc'], digits=1)}{of_which('distcc')} |"]


def triage_rows(tr: dict | None) -> list[str]:
    """PARTS=triage: make triage on a large log, and the inputs it refuses."""
    if not tr:
        return []
    refused = ", ".join(f"/dev/{k} {v['seconds']}" for k, v in sorted(tr["refused"].items()))
    cpu = f"; {_spread_text(tr['cpu_seconds'], digits=1)} s CPU" if tr.get(
        "cpu_seconds") else ""
    return [f"| make triage, a {tr['log_mib']:.0f} MiB log (peak {tr['peak_mib']:.0f} MiB "
            f"resident) | {_spread_text(tr['seconds'], digits=1)}{cpu} |",
            f"| make triage, refused: {refused} s | |"]


def markdown(result: dict) -> str:
    """The README table: sizes, contention, handoff, toolkit, the seed's claims."""
    out = [f"Measured {result['date']} on {result['machine']['summary']}.",
           f"{TCG_NOTE}"]
    if result.get("note"):
        out.append(f"**{result['note']}**")
    sizes = result.get("sizes") or {}
    if sizes.get("nodebug"):
        dbg = sizes.get("debug") or {}
        out += ["", "| type (x86_64, 6.1) | bytes | with DEBUG_MUTEXES+DEBUG_LOCK_ALLOC+"
                "PROVE_LOCKING |", "|---|---:|---:|"]
        for typ, n in sizes["nodebug"].items():
            out.append(f"| struct {typ} | {n} | {dbg.get(typ, '-')} |")
    rows = (result.get("contention") or {}).get("rows") or []
    if rows:
        c = result["contention"]
        out += ["", f"Contention (sem_bench, {c['vcpus']} vCPUs, {c['ms']} ms per run, "
                f"median (min–max) of {c['runs']} runs):", "",
                "| test | type | kthreads | ops/s | CPU % |", "|---|---|---:|---:|---:|"]
        for r in rows:
            out.append(f"| {r['test']} | {r['type']} | {r['threads']} | "
                       f"{_spread_text(r['ops_per_s'])} | "
                       f"{_spread_text(r['cpu_percent'], digits=1)} |")
    tk = result.get("toolkit") or {}
    if tk:
        out += ["", "| toolkit | seconds, median (min–max) |", "|---|---:|"]
        for kind in ("cold", "warm"):
            for key, what in ((kind, ""), (f"{kind}_cpu", ", CPU time")):
                if (tk.get("audit") or {}).get(key):
                    out.append(f"| make audit, {kind}{what} | "
                               f"{_spread_text(tk['audit'][key], digits=1)} |")
        if tk.get("spatch"):
            n = len(tk["spatch"]["runs"])
            runs = f"{n} run{'s' * (n > 1)}"
            out.append(f"| whole-tree spatch sem_ops.cocci ({runs}) | "
                       f"{_spread_text(tk['spatch'], digits=1)} |")
            if tk["spatch"].get("cpu"):
                out.append(f"| whole-tree spatch sem_ops.cocci ({runs}), CPU time | "
                           f"{_spread_text(tk['spatch']['cpu'], digits=1)} |")
        for kind in ("cold", "warm"):
            stages = (tk.get("kernel") or {}).get(kind, {})
            for stage in ("configure", "build", "boot"):
                if stage in stages:
                    out.append(f"| kernel {stage}, {kind} | "
                               f"{_spread_text(stages[stage], digits=1)} |")
        if tk.get("boot_test"):
            bt = tk["boot_test"]
            out.append(f"| make boot-test, warm ({bt['boots']} boots, two at a time) | "
                       f"{_spread_text(bt['warm'], digits=1)} |")
        out += verify_rows(tk.get("verify")) + triage_rows(tk.get("triage"))
        r = tk.get("ratios") or {}
        if r:
            out.append(f"| whole-tree spatch / audit | {r.get('spatch_over_audit_cold')}x "
                       f"cold, {r.get('spatch_over_audit_warm')}x warm |")
        if r.get("spatch_over_audit_cold_cpu"):
            out.append(f"| whole-tree spatch / audit, CPU time | "
                       f"{r['spatch_over_audit_cold_cpu']}x cold, "
                       f"{r['spatch_over_audit_warm_cpu']}x warm |")
    if result.get("text"):
        out += text_markdown(result["text"])
    missing = [p for p in PARTS if p not in result.get("parts", PARTS)]
    if missing:
        out += ["", "Not measured in this run: " + ", ".join(missing)
                + f" (make bench PARTS={','.join(missing)})."]
    claims = result.get("seed_claims") or []
    if claims:
        out += ["", "| the seed's claim | 2005 | 6.1 | verdict |", "|---|---|---|---|"]
        for cl in claims:
            out.append(f"| {cl['claim']} | {cl['seed']} | {cl['measured']} | "
                       f"{cl['verdict']} |")
    return "\n".join(out) + "\n"


def check_shape(result: dict) -> list[str]:
    """What reports/bench.json must hold; [] when it does."""
    problems = [f"missing {k}" for k in ("schema", "date", "machine", "parts", "seed_claims")
                if k not in result]
    for f in _spreads(result):
        if not {"median", "min", "max", "runs"} <= f.keys():
            problems.append(f"a figure without median/min/max/runs: {sorted(f)}")
        elif not f["min"] <= f["median"] <= f["max"]:
            problems.append(f"median outside min..max: {f}")
    return problems


def _spreads(obj: object) -> Iterator[dict]:
    if isinstance(obj, dict):
        if "median" in obj:
            yield obj
        else:
            for v in obj.values():
                yield from _spreads(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _spreads(v)


def _first_line(cmd: list[str]) -> str:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    return (res.stdout or res.stderr).strip().splitlines()[0] if (res.stdout or res.stderr) \
        else "unavailable"


def machine() -> dict:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_gib = 0.0
    with contextlib.suppress(OSError, ValueError, IndexError):
        kb = next(ln for ln in Path("/proc/meminfo").read_text().splitlines()
                  if ln.startswith("MemTotal"))
        mem_gib = round(int(kb.split()[1]) / 2**20, 1)
    cpus = len(os.sched_getaffinity(0))
    return {"cpu": model, "cpus": cpus, "mem_gib": mem_gib, "arch": platform.machine(),
            "host_kernel": platform.release(), "python": platform.python_version(),
            "qemu": _first_line(["qemu-system-x86_64", "--version"]),
            "gcc": _first_line(["gcc", "--version"]),
            "spatch": _first_line(["spatch", "--version"]),
            "summary": f"{cpus} × {model}, {mem_gib} GiB, {platform.machine()}"}


def _part_meta() -> dict:
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_average_start": [round(x, 2) for x in os.getloadavg()]}


# what assemble() writes besides the parts' figures
_FRAME = {"schema", "date", "machine", "kernel", "runs", "parts", "note", "tcg", "part_meta",
          "text", "skipped", "toolkit", "seed_claims", "bench_seconds"}
_TOOLKIT = {"audit": "audit", "spatch": "spatch", "kernel": "kernel", "verify": "verify",
            "boottest": "boot_test", "triage": "triage"}


def parts_of(result: dict) -> dict[str, dict]:
    """The parts an assembled reports/bench.json holds, each with its meta and
    figures as measure_part() gave them: the inverse of assemble()."""
    meta = result.get("part_meta") or {}
    parts: dict[str, dict] = {}
    for name in result.get("parts") or ():
        if name == "boots":
            figures = {k: v for k, v in result.items() if k not in _FRAME}
        elif name == "text":
            figures = result.get("text")
        else:
            figures = (result.get("toolkit") or {}).get(_TOOLKIT.get(name, name))
        if name in meta and figures is not None:
            parts[name] = {"meta": meta[name], "figures": figures}
    return parts


def assemble(parts: dict[str, dict], kernel: Path, runs: int, note: str,
             machine_info: dict | None = None) -> dict:
    """reports/bench.json from the latest figures of each part (pure when given
    machine_info)."""
    dates = sorted(p["meta"]["date"] for p in parts.values())
    # each part's conditions, once each (a note given now is of the parts measured now)
    notes = [parts[k]["meta"].get("note", "") for k in sorted(parts)]
    note = "; ".join(dict.fromkeys(n for n in notes if n)) or note
    result: dict = {"schema": SCHEMA, "date": dates[-1] if dates else "",
                    "machine": machine_info or machine(), "kernel": str(kernel),
                    "runs": runs, "parts": sorted(parts), "note": note, "tcg": TCG_NOTE,
                    "part_meta": {k: v["meta"] for k, v in parts.items()}}
    if "boots" in parts:
        result.update(parts["boots"]["figures"])
    if "text" in parts:
        result["text"] = parts["text"]["figures"]
    else:
        result["skipped"] = {"code_size": "not measured: make patches, then make bench "
                                          "PARTS=text"}
    toolkit: dict = {key: parts[k]["figures"] for k, key in _TOOLKIT.items() if k in parts}
    toolkit["ratios"] = toolkit_ratios(toolkit.get("audit"), toolkit.get("spatch"))
    result["toolkit"] = toolkit
    result["seed_claims"] = seed_claims((result.get("sizes") or {}).get("nodebug", {}),
                                        (result.get("contention") or {}).get("rows", []),
                                        result.get("text"))
    return result
