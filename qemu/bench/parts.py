"""`python3 -m qemu.bench`: the measured parts (sem_bench boots, the audit cold and
warm, one whole-tree spatch run, the boot kernel's configure/build/boot, the .text
of the conversion patches), each stored on its own in work/bench/, then the
figures assembled into reports/bench.{json,md,svg}.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from classify.paths import COCCI_DIR, PATCHES_DIR, PROJECT_DIR, WORK_DIR
from qemu.bench.figures import (BenchError, PARTS, _part_meta, assemble, check_shape,
                                contention_panels, markdown, parts_of, summarise)
from qemu.bench.plot import line_chart
from qemu.bench.textsize import TextError, bench_text, series_indexes
from qemu.bench.triagetime import bench_triage
from qemu.bench.verifytime import bench_verify
from qemu.boot import boot_test
from qemu.build import build_dir_for
from qemu.scenarios import load_scenario
from qemu.sembench import parse_sem_bench, summarise as sem_summarise
from qemu.source import kernel_key






BENCH_DIR = WORK_DIR / "bench"


SPATCH_COCCI = COCCI_DIR / "sem_ops.cocci"


log = logging.getLogger("sem2mutex.bench")


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
        res, wall, cpu = run_timed(cmd, cwd=PROJECT_DIR, capture_output=True, text=True)
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


def unlimited_stack() -> None:
    """The stack of spatch and its workers as large as allowed: at the default 8 MiB a
    worker dies on some 6.1 file (parmap's parent then fails with End_of_file after
    about 33 minutes, having printed 708 of the 786 report lines); with the limit
    lifted the same run completes (2.2 GB resident at most)."""
    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))


def bench_spatch(kernel: Path, runs: int, out_dir: Path) -> dict:
    cmd = spatch_command(kernel)
    seconds, cpu = [], []
    for i in range(runs):
        out = out_dir / f"spatch-{i + 1}.out"
        with out.open("w") as f:
            res, wall, used = run_timed(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=kernel,
                                        preexec_fn=unlimited_stack)
        seconds.append(wall)
        cpu.append(used)
        if res.returncode != 0:
            raise BenchError(f"{' '.join(cmd)} failed ({res.returncode}) after {wall:.0f} s, "
                             f"see {out}")
        print(f"bench: whole-tree spatch run {i + 1}/{runs}: {wall:.1f} s ({used:.1f} s CPU, "
              f"{sum(1 for _ in out.open())} report lines)", file=sys.stderr, flush=True)
    return {**summarise(seconds), "cpu": summarise(cpu), "command": cmd,
            "stack": "ulimit -s unlimited (spatch crashes at the default 8 MiB)"}


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
    sc = dataclasses.replace(load_scenario(name), **changes)
    (res,) = boot_test([sc], kernel, out_dir=out_dir)
    if not res.passed:
        raise BenchError(f"boot {name} failed: " + "; ".join(res.problems[:12]))
    return res


def bench_boots(kernel: Path, runs: int, ms: int, out_dir: Path) -> dict:
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


def bench_boot_test(kernel: Path, runs: int, out_dir: Path) -> dict:
    """`make boot-test` (python3 -m qemu boot-test: the standard set, two boots at a
    time) warm: one run to bring the builds up to date, not counted, then `runs` timed
    runs with nothing changed.  Each must pass."""
    cmd = [sys.executable, "-m", "qemu", "boot-test", "--kernel", str(kernel),
           "--out", str(out_dir)]
    walls = []
    for i in range(runs + 1):
        res, wall, _ = run_timed(cmd, capture_output=True, text=True, cwd=PROJECT_DIR)
        if res.returncode != 0:
            raise BenchError("boot-test failed: " + " | ".join(
                (res.stdout + res.stderr).strip().splitlines()[-12:]))
        summary = res.stdout.strip().splitlines()[-1]
        print(f"bench: boot-test {'warm-up' if i == 0 else f'run {i}/{runs}'}: "
              f"{wall:.1f} s, {summary}", file=sys.stderr, flush=True)
        if i:
            walls.append(wall)
    return {"warm": summarise(walls), "boots": int(summary.split()[1]) if summary.startswith(
        "boot-test: ") else 0, "command": "python3 -m qemu boot-test"}


def measure_part(part: str, kernel: Path, cache: Path, runs: int, ms: int,
                 kernel_runs: int, spatch_runs: int, patches: Path | None = None) -> dict:
    """One part's figures, with its own date and the load average around it."""
    meta = _part_meta()
    started = time.monotonic()
    if part == "boots":
        figures = bench_boots(kernel, runs, ms, BENCH_DIR / "boots")
    elif part == "audit":
        figures = bench_audit(kernel, cache, runs)
    elif part == "spatch":
        figures = bench_spatch(kernel, spatch_runs, BENCH_DIR)
    elif part == "boottest":
        figures = bench_boot_test(kernel, runs, BENCH_DIR / "boot-test")
    elif part == "verify":
        figures = bench_verify(kernel, patches or PATCHES_DIR, runs, BENCH_DIR / "verify")
    elif part == "triage":
        figures = bench_triage(runs, BENCH_DIR / "triage")
    elif part == "text":
        try:
            figures = bench_text(kernel, patches or PATCHES_DIR)
        except TextError as err:
            raise BenchError(f"text: {err}") from None
    else:
        figures = bench_kernel(kernel, kernel_runs, BENCH_DIR / "kernel-boots")
    meta["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    meta["seconds"] = round(time.monotonic() - started, 1)
    return {"meta": meta, "figures": figures}


def run_bench(kernel: Path, cache: Path, runs: int, parts: tuple[str, ...], ms: int,
              kernel_runs: int, spatch_runs: int, note: str = "",
              patches: Path | None = None, previous: dict | None = None) -> dict:
    """Measures the parts asked for (each kept in work/bench/part-<name>.json, so a
    part can be measured again on its own) and assembles all parts measured so far;
    a part measured neither now nor in work/bench is kept from previous (the
    committed reports/bench.json), with its own date in part_meta."""
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for part in parts:
        figures = measure_part(part, kernel, cache, runs, ms, kernel_runs, spatch_runs,
                               patches)
        if note:        # the conditions of this part's measurement, kept with it
            figures["meta"]["note"] = note
        (BENCH_DIR / f"part-{part}.json").write_text(
            json.dumps(figures, indent=2, sort_keys=True) + "\n")
    stored = {p.stem.removeprefix("part-"): json.loads(p.read_text())
              for p in sorted(BENCH_DIR.glob("part-*.json"))
              if p.stem.removeprefix("part-") in PARTS}
    stored = parts_of(previous or {}) | stored
    old_note = (previous or {}).get("note", "")
    for name, figures in stored.items():
        # a part measured before notes were kept per part: the report's note was its
        if name not in parts and old_note and not figures["meta"].get("note"):
            figures["meta"]["note"] = old_note
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
        # the date of the boots the plot shows, not of the latest part
        date = (result.get("part_meta") or {}).get("boots", {}).get("date", result["date"])
        svg.write_text(line_chart(contention_panels(rows),
                                  f"sem_bench on Linux 6.1, QEMU TCG, {c['vcpus']} vCPUs",
                                  f"median of {c['runs']} runs, bars: min–max; "
                                  f"TCG figures are relative, not absolute. {date}"))
        print(f"bench: wrote {svg}")
    if md:
        md.write_text(markdown(result))
        print(f"bench: wrote {md}")


def main(kernel: Path, cache: Path, runs: int, out: Path | None, parts: tuple[str, ...] =
         PARTS, ms: int = 1000, kernel_runs: int | None = None, spatch_runs: int = 1,
         svg: Path | None = None, md: Path | None = None, note: str = "",
         patches: Path | None = None) -> int:
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise BenchError(f"unknown part(s) {', '.join(unknown)} (known: {', '.join(PARTS)})")
    if "text" in parts:             # before an hour of other parts, not after it
        try:
            series_indexes(patches or PATCHES_DIR)
        except TextError as err:
            raise BenchError(f"text: {err}") from None
    previous = None
    if out and out.exists():
        try:
            previous = json.loads(out.read_text())
        except ValueError as err:
            raise BenchError(f"{out}: not JSON ({err}): move it away first") from None
    result = run_bench(kernel, cache, runs, parts, ms,
                       runs if kernel_runs is None else kernel_runs, spatch_runs, note,
                       patches, previous)
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
