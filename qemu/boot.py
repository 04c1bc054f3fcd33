"""`run` only chains the stages: source -> configure -> build -> initramfs -> run ->
parse -> evaluate; boot_test runs a scenario set, building each configuration once.

Per boot, work/boots/<scenario>.json (sorted, stable) and <scenario>.log (the console).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from classify.tree import TreeError, kernel_version
from classify.kbuild import config_values
from qemu import control, parse
from qemu.arch import get_arch
from qemu.build import BuildRequest, BuildResult, BuildStatus, build, build_dir_for
from qemu.common import DEFAULT_KERNEL, WORK_DIR, Timer, dumps
from qemu.config import ConfigRequest, ConfigResult, ConfigStatus, configure
from qemu.rootfs import (InitramfsResult, InitramfsStatus, make_initramfs, request_for,
                         with_modules)
from qemu.run import RunRequest, RunResult, RunStatus, probe_kvm, run_qemu
from qemu.scenarios import (Evaluation, Scenario, console_problems, evaluate,
                            selftest_problems)
from qemu.selftests import read_selftests
from qemu.source import Source, kernel_key, prepare_source

log = logging.getLogger("sem2mutex.qemu.boot")

BOOTS_DIR = WORK_DIR / "boots"
# QEMU/TCG boots at once: one per core of the 2-core machines the project runs on; each
# boot is one single-threaded vCPU, so two of them take the two cores.
PARALLEL_BOOTS = 2


@dataclass
class Kernel:
    """A built configuration: what boots need from the config+build stages."""
    fragments: tuple[str, ...]
    config: ConfigResult
    build: BuildResult | None
    problems: list[str] = field(default_factory=list)
    modules: list[Path] = field(default_factory=list)   # CONFIG_MODULES: its *.ko
    initrd: Path | None = None     # the initramfs with the modules (rootfs.with_modules)

    @property
    def ok(self) -> bool:
        return self.build is not None and self.build.status is BuildStatus.SUCCESS


@dataclass
class BootResult:
    scenario: str
    passed: bool
    verdict: str
    problems: list[str]
    json_path: Path | None = None
    reports: list[str] = field(default_factory=list)   # "kind: title"
    run_elapsed: float = 0.0
    fragments: tuple[str, ...] = ()
    stage_seconds: dict[str, float] = field(default_factory=dict)   # stage -> elapsed
    notes: list[str] = field(default_factory=list)   # the locking tests, each report's origin


def build_kernel(source: Source, fragments: tuple[str, ...], arch: str = "x86_64",
                 key: str | None = None, drop_undefined: bool = False) -> Kernel:
    """Configure and build one fragment set (in the O= directory of key, default the
    source's kernel_key); with CONFIG_MODULES the modules too, for /init's insmod:.
    drop_undefined: leave out the options the tree has no Kconfig entry for (the
    series' own, on a pristine control)."""
    bdir = build_dir_for(fragments, kernel_key(source.kernel) if key is None else key,
                         arch=arch)
    cres = configure(ConfigRequest(source.tree, bdir, fragments, arch=arch,
                                   drop_undefined=drop_undefined))
    if cres.status is not ConfigStatus.SUCCESS:
        return Kernel(fragments, cres, None,
                      [f"config {cres.status.value}: {e}" for e in cres.errors])
    modules = config_values(bdir / ".config").get("CONFIG_MODULES") == "y"
    target = get_arch(arch).image_target + (" modules" if modules else "")
    # -j2: a shared 2-core machine
    bres = build(BuildRequest(source.tree, bdir, jobs=2, target=target))
    problems = [] if bres.status is BuildStatus.SUCCESS else (
        [f"build failed ({bres.log}):"] + bres.errors)
    kos = sorted(bdir.rglob("*.ko")) if modules and not problems else []
    return Kernel(fragments, cres, bres, problems, kos)


def attach_modules(kernel: Kernel, initramfs: InitramfsResult) -> None:
    """kernel.initrd: the shared initramfs with this kernel's modules appended."""
    if kernel.ok and kernel.modules and initramfs.image is not None:
        assert kernel.build is not None and kernel.build.image is not None
        bdir = kernel.build.log.parent if kernel.build.log else kernel.build.image.parent
        kernel.initrd = with_modules(initramfs.image, kernel.modules,
                                     bdir / "s2m-initramfs.cpio")


def boot_scenario(sc: Scenario, kernel: Kernel, initramfs: InitramfsResult, source: Source,
                  accel: str = "tcg", out_dir: Path = BOOTS_DIR,
                  extra_args: tuple[str, ...] = (), qmp: Path | None = None,
                  evaluator: Callable[[Scenario, parse.ParsedLog], Evaluation] = evaluate,
                  name: str = "", arch: str = "x86_64") -> BootResult:
    """Boot one scenario; extra_args (devices), qmp, evaluator and name (the boot's,
    for its log and json, when a scenario is booted several times) serve the runtime
    set."""
    name = name or sc.name
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / f"{name}.log"
    record: dict = {
        "scenario": sc.name, "boot": name, "fragments": list(sc.fragments), "append": sc.append(),
        "kernel": str(source.kernel), "series": source.series, "smp": sc.vcpus(),
        "arch": arch,
        "config_hash": kernel.config.config_hash,
        "stages": {"config": {"status": kernel.config.status, "elapsed": kernel.config.elapsed,
                              "skipped": kernel.config.skipped, "errors": kernel.config.errors}},
    }
    if kernel.build is not None:
        record["stages"]["build"] = {"status": kernel.build.status,
                                     "elapsed": kernel.build.elapsed,
                                     "errors": kernel.build.errors}
    record["stages"]["initramfs"] = {"status": initramfs.status, "elapsed": initramfs.elapsed,
                                     "sha256": initramfs.sha256, "errors": initramfs.errors}
    problems = list(kernel.problems) + initramfs.errors
    verdict = "not_booted"
    if kernel.ok and initramfs.status is InitramfsStatus.SUCCESS:
        assert kernel.build is not None and kernel.build.image and initramfs.image
        rres: RunResult = run_qemu(RunRequest(kernel.build.image,
                                              kernel.initrd or initramfs.image, log_path,
                                              sc.append(), sc.timeout, accel=accel,
                                              memory_mb=sc.memory, smp=sc.vcpus(),
                                              extra_args=extra_args, qmp=qmp,
                                              keys=sc.keys, silence=sc.silence,
                                              arch=arch))
        record["stages"]["run"] = {"status": rres.status, "elapsed": rres.elapsed,
                                   "returncode": rres.returncode, "errors": rres.errors,
                                   "command": rres.command}
        if rres.status is RunStatus.QEMU_MISSING:
            problems += rres.errors
        else:
            with Timer() as t:
                text = log_path.read_text(errors="replace")
                parsed = parse.parse_log(text)
                ev: Evaluation = evaluator(sc, parsed)
                ev.problems += console_problems(sc, parse.clean_lines(text))
                tests = read_selftests(text)
                ev.problems += selftest_problems(sc, tests)
            if tests.locking_api or tests.ww_mutex or tests.torture:
                record["selftests"] = tests.to_json()
            record["stages"]["parse"] = {"elapsed": t.elapsed}
            record.update(parsed=parsed, verdict=parsed.verdict)
            verdict = parsed.verdict
            problems += ev.problems
            if rres.status is RunStatus.QEMU_FAILED:
                problems += rres.errors
            if problems and parsed.verdict in ("hang", "truncated") and sc.verdict != \
                    parsed.verdict:
                problems += ["last console lines:"] + ["  | " + ln for ln in rres.tail]
    record["verdict"] = verdict
    record["passed"] = not problems
    record["problems"] = problems
    for rep in record.get("parsed").reports if record.get("parsed") else []:
        rep.body = rep.body[:60]
    json_path = out_dir / f"{name}.json"
    json_path.write_text(dumps(record))
    parsed_ = record.get("parsed")
    return BootResult(name, not problems, verdict, problems, json_path,
                      [f"{r.kind}: {r.title}" for r in parsed_.reports] if parsed_ else [],
                      record["stages"].get("run", {}).get("elapsed", 0.0), sc.fragments,
                      {k: v["elapsed"] for k, v in record["stages"].items()})


def in_parallel(jobs: Iterable[Callable[[], BootResult]],
                workers: int = PARALLEL_BOOTS) -> list[BootResult]:
    """Run boot jobs, at most `workers` at once; the results in the jobs' order."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(job) for job in jobs]
        return [f.result() for f in futures]


def boot_test(scenarios: list[Scenario], kernel: Path = DEFAULT_KERNEL, accel: str = "tcg",
              out_dir: Path = BOOTS_DIR, workers: int = PARALLEL_BOOTS,
              arch: str = "x86_64", record: bool = False) -> list[BootResult]:
    """Every scenario; each distinct fragment set is configured and built once for
    arch (x86_64, arm64), all before the first boot, then the boots run `workers` at
    a time.  The locking tests' records go to out_dir/selftest, or with record
    beside the tree's audit (the committed ones for the trees `make setup` unpacks)."""
    try:
        source = prepare_source(kernel)
    except TreeError as err:
        return [BootResult(sc.name, False, "not_booted", [f"source: {err}"])
                for sc in scenarios]
    if not source.series:
        log.warning("kernel-patches/series does not exist yet: booting %s unpatched "
                    "(fragments that need the series will be reported Missing)", kernel)
    initramfs = make_initramfs(request_for(arch))
    kernels: dict[tuple[str, ...], Kernel] = {}
    scenarios = [s.for_arch(arch) for s in scenarios]
    for sc in scenarios:
        if sc.fragments not in kernels:
            kernels[sc.fragments] = build_kernel(source, sc.fragments, arch)
            attach_modules(kernels[sc.fragments], initramfs)
    if accel == "kvm" and arch != "x86_64":
        # the machines here are x86_64: an arm64 guest has no KVM to use
        log.info("kvm: x86_64 only here; %s boots under tcg", arch)
        accel = "tcg"
    if accel == "kvm":
        accel = kvm_or_tcg(list(kernels.values()), initramfs, out_dir)
    version = kernel_version(source.kernel) if any(sc.control for sc in scenarios) else ""
    controls = {sc.name: control.load_control(source.kernel, version, sc.name)
                for sc in scenarios if sc.control}

    def job(sc: Scenario) -> Callable[[], BootResult]:
        def run() -> BootResult:
            # a control scenario's reports are classed against its pristine boot
            ev = {"evaluator": control.evaluator(controls[sc.name])} if sc.control else {}
            r = boot_scenario(sc, kernels[sc.fragments], initramfs, source, accel, out_dir,
                              arch=arch, **ev)
            log.info("%s: %s (%s)", sc.name, "PASS" if r.passed else "FAIL", r.verdict)
            return r
        return run
    # the longest boots (by their timeout) first: the others fill the second worker
    order = sorted(range(len(scenarios)), key=lambda i: -scenarios[i].timeout)
    done = in_parallel([job(scenarios[i]) for i in order], workers)
    results = [r for _, r in sorted(zip(order, done), key=lambda pair: pair[0])]
    if controls and arch == "x86_64":
        dest = (control.selftest_dir(source.kernel, version) if record
                else out_dir / "selftest")
        write_control_records(scenarios, results, out_dir, dest, source, version)
    return results


def write_control_records(scenarios: list[Scenario], results: list[BootResult],
                          out_dir: Path, dest: Path, source: Source, version: str) -> None:
    """The records of the control scenarios' series boots (qemu.control), in dest."""
    for sc, r in zip(scenarios, results):
        log_path = out_dir / f"{sc.name}.log"
        if not sc.control or r.verdict == "not_booted" or not log_path.is_file():
            continue
        rec = control.write_record(log_path, dest, sc.name, version, "series",
                                   control.control_log(source.kernel, version, sc.name))
        r.notes = [f"{control.summary_line(rec)} ({dest / sc.name}.json)"]
        r.notes += [f"report {a.kind}: {a.title}: {control.ORIGIN_WORDS[a.origin]}"
                    for a in rec.reports]


def kvm_or_tcg(kernels: list[Kernel], initramfs: InitramfsResult, out_dir: Path) -> str:
    """kvm when a probe boot of a built kernel proves it works, else tcg."""
    k = next((k for k in kernels if k.ok), None)
    if k is None or not initramfs.image:
        return "tcg"
    assert k.build is not None and k.build.image
    return "kvm" if probe_kvm(k.build.image, initramfs.image, out_dir / "kvm-probe.log") \
        else "tcg"


def result_lines(results: list[BootResult]) -> list[str]:
    """One PASS/FAIL line per boot, then its reports and problems, indented."""
    lines = []
    for r in results:
        lines.append(f"{'PASS' if r.passed else 'FAIL'} {r.scenario} ({r.verdict}, "
                     f"boot {r.run_elapsed:.1f} s, {len(r.reports)} reports)")
        lines += [f"    report {rep}" for rep in r.reports]
        lines += [f"    {n}" for n in r.notes]
        lines += [f"    {p}" for p in r.problems]
    return lines


def summary(results: list[BootResult]) -> str:
    lines = result_lines(results)
    passed = sum(r.passed for r in results)
    lines.append(stage_times(results))
    lines.append(f"boot-test: {passed} passed, {len(results) - passed} failed")
    return "\n".join(lines)


def stage_times(results: list[BootResult]) -> str:
    """One line of per-stage wall time: configure and build count once per kernel."""
    per_kernel = {r.fragments: r.stage_seconds for r in results}
    config = sum(s.get("config", 0.0) for s in per_kernel.values())
    build = sum(s.get("build", 0.0) for s in per_kernel.values())
    boots = sorted(r.stage_seconds["run"] for r in results if "run" in r.stage_seconds)
    parse_ms = 1000 * sum(r.stage_seconds.get("parse", 0.0) for r in results)
    median = boots[len(boots) // 2] if boots else 0.0
    return (f"boot-test: stages: configure {config:.1f} s, build {build:.1f} s "
            f"({len(per_kernel)} kernel(s)), boot {sum(boots):.1f} s for {len(boots)} boots "
            f"(median {median:.1f} s), parse {parse_ms:.0f} ms")


