"""make bench: the seed's figures measured again on 6.1, and the toolkit's own speed.

Parts (each can be chosen with --parts; all by default):

  boots    the sem_bench kernel (kernel-patches/0007) booted in QEMU/TCG on all host
           cores: sizes without lock debugging and with it (a second, small kernel
           booted with sem_bench=0), lock contention and wait/wake handoff
           (ops/s and CPU use, median/min/max of --runs runs inside one boot)
  audit    `make audit` cold (--fresh) and warm, --runs runs each
  spatch   one plain whole-tree spatch run of cocci/sem_ops.cocci, as
           `make coccicheck MODE=report` runs it (--spatch-runs, default 1)
  kernel   configure/build/boot of the boot-test kernel (scenario `clean`): cold (empty
           O= directory, ccache off) and warm (nothing changed), --kernel-runs each

Each audit run is a separate `python3 -m classify audit` process writing to a scratch
directory, so the figures include interpreter start-up and report writing, as a user
sees them.  Everything is written to reports/bench.json (sorted, stable), the plot to
reports/bench.svg and the table to reports/bench.md.  Pure helpers (spread, ratios,
seed_claims, markdown) are tested; the measuring functions are not timed by any test.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from .plot import Panel, Point, line_chart

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "work"
BENCH_DIR = WORK / "bench"
SPATCH_COCCI = REPO / "cocci" / "sem_ops.cocci"
PARTS = ("boots", "audit", "spatch", "kernel")
SCHEMA = 1

log = logging.getLogger("sem2mutex.bench")

# The seed's figures (001-cover-generic-mutex-subsystem.txt), for the comparison.
SEED = {"semaphore_bytes": 20, "mutex_bytes": 16, "throughput_ratio": 2.4,
        "cpu_ratio": 2.8, "efficiency_ratio": 6.9, "text_saved_bytes": 25051}

TCG_NOTE = ("QEMU TCG (software emulation): the figures are relative (one type against "
            "another on the same boot), not absolute; they say nothing about real "
            "hardware speed.")


class BenchError(Exception):
    """A run failed: its command and the end of its output."""


# ----------------------------------------------------------------------- pure helpers

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


def seed_claims(sizes: dict[str, int], rows: list[dict]) -> list[dict]:
    """The seed's claims against the 6.1 figures, one entry each, with a verdict."""
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
    claims.append({"claim": "converting the mutex-like semaphores saves .text",
                   "seed": f"{SEED['text_saved_bytes']} bytes (0.76%)",
                   "measured": "not measured here: needs the conversion patches of "
                               "another issue", "verdict": "not measured"})
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
        r = tk.get("ratios") or {}
        if r:
            out.append(f"| whole-tree spatch / audit | {r.get('spatch_over_audit_cold')}x "
                       f"cold, {r.get('spatch_over_audit_warm')}x warm |")
        if r.get("spatch_over_audit_cold_cpu"):
            out.append(f"| whole-tree spatch / audit, CPU time | "
                       f"{r['spatch_over_audit_cold_cpu']}x cold, "
                       f"{r['spatch_over_audit_warm_cpu']}x warm |")
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


# ------------------------------------------------------------------------- measuring

def run_timed(cmd: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, float, float]:
    """(result, wall seconds, CPU seconds): user + system time of the command and of
    every process it waited for (the audit's spatch workers)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    res = subprocess.run(cmd, **kwargs)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return res, wall, cpu


def time_audit(kernel: Path, cache: Path, fresh: bool) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="s2m-bench-") as out:
        cmd = [sys.executable, "-m", "classify", "audit", "--kernel", str(kernel),
               "--cache", str(cache), "--out", out] + (["--fresh"] if fresh else [])
        res, wall, cpu = run_timed(cmd, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        raise BenchError(f"{' '.join(cmd)} failed ({res.returncode}):\n"
                         + "\n".join(res.stderr.splitlines()[-20:]))
    return wall, cpu


def bench_audit(kernel: Path, cache: Path, runs: int) -> dict:
    figures: dict[str, list[float]] = {"cold": [], "warm": [], "cold_cpu": [],
                                       "warm_cpu": []}
    for i in range(runs):
        for kind in ("cold", "warm"):
            wall, cpu = time_audit(kernel, cache, fresh=kind == "cold")
            figures[kind].append(wall)
            figures[f"{kind}_cpu"].append(cpu)
            print(f"bench: audit {kind} run {i + 1}/{runs}: {wall:.1f} s "
                  f"({cpu:.1f} s CPU)", file=sys.stderr, flush=True)
    return {kind: summarise(s) for kind, s in figures.items()}


def spatch_command(kernel: Path, cocci: Path = SPATCH_COCCI, jobs: int = 0) -> list[str]:
    """What `make coccicheck MODE=report COCCI=cocci` runs (scripts/coccicheck), with the
    semantic patch's own `// Options:` line, over the whole tree."""
    jobs = jobs or len(os.sched_getaffinity(0))
    return ["spatch", "-D", "report", "--no-show-diff", "--very-quiet",
            "--cocci-file", str(cocci), "--dir", str(kernel), "--no-includes",
            "--include-headers", "--jobs", str(jobs), "--chunksize", "1"]


def bench_spatch(kernel: Path, runs: int, out_dir: Path) -> dict:
    cmd = spatch_command(kernel)
    seconds, cpu = [], []
    for i in range(runs):
        out = out_dir / f"spatch-{i + 1}.out"
        with out.open("w") as f:
            res, wall, used = run_timed(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=kernel)
        seconds.append(wall)
        cpu.append(used)
        if res.returncode != 0:
            raise BenchError(f"{' '.join(cmd)} failed ({res.returncode}) after {wall:.0f} s, "
                             f"see {out}")
        print(f"bench: whole-tree spatch run {i + 1}/{runs}: {wall:.1f} s ({used:.1f} s CPU, "
              f"{sum(1 for _ in out.open())} report lines)", file=sys.stderr, flush=True)
    return {**summarise(seconds), "cpu": summarise(cpu), "command": cmd}


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _boot(kernel: Path, name: str, out_dir: Path, **changes: object):
    from qemu.boot import boot_test
    from qemu.scenarios import load_scenario
    sc = dataclasses.replace(load_scenario(name), **changes)
    (res,) = boot_test([sc], kernel, out_dir=out_dir)
    if not res.passed:
        raise BenchError(f"boot {name} failed: " + "; ".join(res.problems[:12]))
    return res


def bench_boots(kernel: Path, runs: int, ms: int, out_dir: Path) -> dict:
    from qemu.sembench import parse_sem_bench, summarise as sem_summarise
    measure_s = 18 * runs * ms / 1000
    res = _boot(kernel, "bench", out_dir, cmdline=f"sem_bench={runs},{ms}",
                timeout=120 + 2 * measure_s)
    fast = parse_sem_bench((out_dir / "bench.log").read_text(errors="replace"))
    dres = _boot(kernel, "bench-sizes-debug", out_dir)
    debug = parse_sem_bench((out_dir / "bench-sizes-debug.log").read_text(errors="replace"))
    return {"sizes": {"nodebug": fast.sizes, "debug": debug.sizes,
                      "config": {"nodebug": fast.config, "debug": debug.config}},
            "contention": {"runs": runs, "ms": ms, "vcpus": int(fast.config.get("cpus", 0)),
                           "accel": "tcg", "boot_seconds": res.run_elapsed,
                           "rows": sem_summarise(fast.measurements)},
            "debug_boot_seconds": dres.run_elapsed}


def bench_kernel(kernel: Path, runs: int, out_dir: Path, scenario: str = "clean") -> dict:
    """Configure/build/boot of the boot-test kernel: cold = empty O= dir and no ccache,
    warm = the same again with nothing changed."""
    from qemu.build import build_dir_for
    from qemu.scenarios import load_scenario
    from qemu.source import kernel_key
    sc = load_scenario(scenario)
    bdir = build_dir_for(sc.fragments, kernel_key(kernel))
    times: dict[str, dict[str, list[float]]] = {"cold": {}, "warm": {}}
    for i in range(runs):
        for kind in ("cold", "warm"):
            if kind == "cold":
                shutil.rmtree(bdir, ignore_errors=True)
            with _env(CCACHE_DISABLE="1") if kind == "cold" else contextlib.nullcontext():
                res = _boot(kernel, scenario, out_dir)
            st = res.stage_seconds
            for stage, key in (("configure", "config"), ("build", "build"), ("boot", "run")):
                times[kind].setdefault(stage, []).append(st.get(key, 0.0))
            print(f"bench: kernel {kind} run {i + 1}/{runs}: configure "
                  f"{st.get('config', 0):.1f} s, build {st.get('build', 0):.1f} s, boot "
                  f"{st.get('run', 0):.1f} s", file=sys.stderr, flush=True)
    return {"scenario": scenario, "fragments": list(sc.fragments),
            "cold_means": "empty O= directory, CCACHE_DISABLE=1",
            **{kind: {s: summarise(v) for s, v in t.items()} for kind, t in times.items()}}


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


def measure_part(part: str, kernel: Path, cache: Path, runs: int, ms: int,
                 kernel_runs: int, spatch_runs: int) -> dict:
    """One part's figures, with its own date and the load average around it."""
    meta = _part_meta()
    started = time.monotonic()
    if part == "boots":
        figures = bench_boots(kernel, runs, ms, BENCH_DIR / "boots")
    elif part == "audit":
        figures = bench_audit(kernel, cache, runs)
    elif part == "spatch":
        figures = bench_spatch(kernel, spatch_runs, BENCH_DIR)
    else:
        figures = bench_kernel(kernel, kernel_runs, BENCH_DIR / "kernel-boots")
    meta["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    meta["seconds"] = round(time.monotonic() - started, 1)
    return {"meta": meta, "figures": figures}


def assemble(parts: dict[str, dict], kernel: Path, runs: int, note: str,
             machine_info: dict | None = None) -> dict:
    """reports/bench.json from the latest figures of each part (pure when given
    machine_info)."""
    dates = sorted(p["meta"]["date"] for p in parts.values())
    result: dict = {"schema": SCHEMA, "date": dates[-1] if dates else "",
                    "machine": machine_info or machine(), "kernel": str(kernel),
                    "runs": runs, "parts": sorted(parts), "note": note, "tcg": TCG_NOTE,
                    "part_meta": {k: v["meta"] for k, v in parts.items()},
                    "skipped": {"code_size": "the .text before/after the mutex-class "
                                "conversion patches needs those patches (another issue)"}}
    if "boots" in parts:
        result.update(parts["boots"]["figures"])
    toolkit: dict = {k: parts[k]["figures"] for k in ("audit", "spatch", "kernel")
                     if k in parts}
    toolkit["ratios"] = toolkit_ratios(toolkit.get("audit"), toolkit.get("spatch"))
    result["toolkit"] = toolkit
    result["seed_claims"] = seed_claims((result.get("sizes") or {}).get("nodebug", {}),
                                        (result.get("contention") or {}).get("rows", []))
    return result


def run_bench(kernel: Path, cache: Path, runs: int, parts: tuple[str, ...], ms: int,
              kernel_runs: int, spatch_runs: int, note: str = "") -> dict:
    """Measures the parts asked for (each kept in work/bench/part-<name>.json, so a
    part can be measured again on its own) and assembles all parts measured so far."""
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for part in parts:
        figures = measure_part(part, kernel, cache, runs, ms, kernel_runs, spatch_runs)
        (BENCH_DIR / f"part-{part}.json").write_text(
            json.dumps(figures, indent=2, sort_keys=True) + "\n")
    stored = {p.stem.removeprefix("part-"): json.loads(p.read_text())
              for p in sorted(BENCH_DIR.glob("part-*.json"))
              if p.stem.removeprefix("part-") in PARTS}
    result = assemble(stored, kernel, runs, note)
    result["bench_seconds"] = round(time.monotonic() - started, 1)
    return result


def write_outputs(result: dict, out: Path, svg: Path | None, md: Path | None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"bench: wrote {out}")
    rows = (result.get("contention") or {}).get("rows") or []
    if svg and rows:
        c = result["contention"]
        svg.write_text(line_chart(contention_panels(rows),
                                  f"sem_bench on Linux 6.1, QEMU TCG, {c['vcpus']} vCPUs",
                                  f"median of {c['runs']} runs, bars: min–max; "
                                  f"TCG figures are relative, not absolute. {result['date']}"))
        print(f"bench: wrote {svg}")
    if md:
        md.write_text(markdown(result))
        print(f"bench: wrote {md}")


def main(kernel: Path, cache: Path, runs: int, out: Path | None, parts: tuple[str, ...] =
         PARTS, ms: int = 1000, kernel_runs: int | None = None, spatch_runs: int = 1,
         svg: Path | None = None, md: Path | None = None, note: str = "") -> int:
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise BenchError(f"unknown part(s) {', '.join(unknown)} (known: {', '.join(PARTS)})")
    result = run_bench(kernel, cache, runs, parts, ms,
                       runs if kernel_runs is None else kernel_runs, spatch_runs, note)
    audit = result["toolkit"].get("audit")
    for kind in ("cold", "warm"):
        if audit:
            f = audit[kind]
            print(f"bench: make audit {kind}: median {f['median']} s "
                  f"(min {f['min']}, max {f['max']}, {runs} runs)")
    problems = check_shape(result)
    if problems:
        raise BenchError("reports/bench.json would be malformed: " + "; ".join(problems))
    if out:
        write_outputs(result, out, svg, md)
    print(f"bench: done in {result['bench_seconds']:.0f} s")
    return 0
