"""Scenarios: what to build, how to boot, and what the boot must show.

A scenario is a TOML file in qemu/scenarios/:

    description = "..."
    standard = true                # false: only with boot-test --scenario NAME
    fragments = ["base", "mode-full", "kunit", "rule-check"]   # config, in merge order
    cmdline = "mutex_rule_check=abba"                          # kernel command line extra
    steps = []                                                 # /init steps (see init)
    timeout = 120                                              # seconds, from outside
    silence = 0                    # > 0: a console silent that long is a hang (killed)
    smp = 1                        # QEMU vCPUs; 0 = as many as this machine has cores
    [expect]
    verdict = "completed"          # completed | panic | hang
    ktap_all_ok = true             # every KTAP result ok (and at least one KUnit test)
    ktap = { "s2m-init/boot" = "ok" }          # path -> status, for named results
    reports = [ { kind = "circular_locking", title = "circular locking" } ]
    # optional: a report's lock class must contain `lock`; lines the console must show
    # reports = [ { kind = "bad_unlock_balance", title = "...", lock = "partial_md" } ]
    console = ["mutex_rule_check: partial: plain semaphores"]

The kernel's own locking tests (qemu/selftests.py reads them) and the pristine control
(qemu/control.py; `make selftest-control` boots the scenario on the tree without the
series, the same configuration otherwise):

    control = true                 # each report is classed against the pristine boot
    [expect]
    locking_api = "passed"         # the locking API self-tests' summary: passed | failed
    ww_mutex = "passed"            # the ww_mutex self-test ran to its end
    torture = ["mutex_lock"]       # locktorture runs that must end "SUCCESS"
    # a report the pristine control also shows is the tree's: recorded, never a problem;
    # one it does not show is the series' and must be expected, with origin = "series"
    reports = [ { kind = "bad_unlock_balance", origin = "series" } ]

Runtime scenarios (`set = "runtime"`, booted by `boot-test --set runtime`, see runtime.py)
add what the exercised subsystem needs, and which kernel variant they boot:

    set = "runtime"
    variant = "trust"              # or "unmark:<audit id>": that semaphore left unmarked,
                                   # or "convert:<audit id>": its conversion patch applied
    about = ["fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"]     # the ids the boot is for
    disk = "xfs"                   # a fresh virtio disk made on the host (mkfs.TYPE)
    netdev = true                  # a virtio-net NIC on an isolated user network
    usb_keyboard = true            # qemu-xhci + usb-kbd; `keys` presses through QMP
    keys = 16
    devices = ["megasas"]          # more QEMU devices (-device VALUE each)
    firmware = "ovmf"              # boot through OVMF (UEFI) instead of SeaBIOS
    memory = 512
    repeat = 5                     # boot it 5 times: a report that depends on timing

What another architecture's kernel prints differently is said per architecture, with
why (the rest of [expect] still holds):

    [expect.arm64]
    why = "arm64 6.1 does not use the generic entry code: no lockdep_sys_exit()"
    reports = []

evaluate() is pure: every expected report must be matched (kind equal, title
substring), every report must be expected, verdict and KTAP must match.  A negative
control (hang, panic) passes when the harness observes exactly the failure it expects.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from classify.records.boot import Report
from classify.records.selftest import SUCCESS, Selftests
from qemu.arch import ARCHES
from qemu.common import SCENARIOS_DIR
from qemu.parse import ParsedLog


@dataclass(frozen=True)
class ExpectedReport:
    kind: str
    title: str = ""
    lock: str = ""                 # a substring of one of the report's lock classes
    origin: str = ""               # control scenarios: "tree" or "series" (qemu.control)

    def matches(self, report: Report) -> bool:
        return report.kind == self.kind and self.title in report.title and (
            not self.lock or any(self.lock in lk.lock_class for lk in report.locks))


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    fragments: tuple[str, ...]
    cmdline: str = ""
    steps: tuple[str, ...] = ()
    timeout: float = 120.0
    verdict: str = "completed"
    ktap_all_ok: bool = False
    ktap: dict[str, str] = field(default_factory=dict)
    reports: tuple[ExpectedReport, ...] = ()
    console: tuple[str, ...] = ()  # substrings, each of some console line
    standard: bool = True          # part of `boot-test` without --scenario
    smp: int = 1                   # QEMU vCPUs; 0 = the host's cores (vcpus())
    set: str = ""                  # "runtime": a member of `boot-test --set runtime`
    variant: str = "trust"         # runtime: "trust", "unmark:<id>" or "convert:<id>"
    about: tuple[str, ...] = ()    # runtime: the semaphore ids the boot is for
    disk: str = ""                 # runtime: mkfs type of a fresh virtio disk
    netdev: bool = False           # runtime: a virtio-net NIC (isolated user network)
    usb_keyboard: bool = False     # runtime: qemu-xhci + usb-kbd
    keys: int = 0                  # runtime: key presses sent through QMP
    devices: tuple[str, ...] = ()  # runtime: more QEMU devices (-device VALUE each)
    firmware: str = ""             # runtime: "ovmf": UEFI firmware instead of SeaBIOS
    memory: int = 256              # MiB
    silence: float = 0.0           # > 0: so many seconds without console output = hang
    repeat: int = 1                # runtime: boots of the same kernel and workload
    control: bool = False          # its reports classed against a pristine boot
    locking_api: str = ""          # expected locking API self-test summary
    ww_mutex: str = ""             # expected ww_mutex self-test result
    torture: tuple[str, ...] = ()  # locktorture types expected to end SUCCESS
    # arch -> (why, the reports expected there instead)
    arch_reports: dict[str, tuple[str, tuple[ExpectedReport, ...]]] = field(
        default_factory=dict)

    def boot_names(self) -> list[str]:
        """One name per boot: the scenario's, or NAME.1 .. NAME.N when it repeats."""
        if self.repeat <= 1:
            return [self.name]
        return [f"{self.name}.{i}" for i in range(1, self.repeat + 1)]

    def for_arch(self, arch: str) -> "Scenario":
        """The scenario as booted on arch: its [expect.<arch>] reports, if any."""
        if arch not in self.arch_reports:
            return self
        return dataclasses.replace(self, reports=self.arch_reports[arch][1])

    def vcpus(self) -> int:
        return self.smp if self.smp > 0 else len(os.sched_getaffinity(0))

    def append(self) -> str:
        """The kernel command line additions: ours, the scenario, its /init steps."""
        words = [self.cmdline.strip(), f"s2m.scenario={self.name}"]
        if self.set == "runtime":           # which kernel ran: checked by qemu.runrecord
            words.append(f"s2m.variant={self.variant}")
        words += [f"s2m.step={s}" for s in self.steps]
        return " ".join(w for w in words if w)


@dataclass
class Evaluation:
    passed: bool
    problems: list[str]


def scenario_from_dict(name: str, data: dict) -> Scenario:
    exp = data.get("expect", {})
    return Scenario(
        name=name, description=data.get("description", ""),
        fragments=tuple(data.get("fragments", ["base"])), cmdline=data.get("cmdline", ""),
        steps=tuple(data.get("steps", [])), timeout=float(data.get("timeout", 120)),
        verdict=exp.get("verdict", "completed"), ktap_all_ok=bool(exp.get("ktap_all_ok")),
        ktap=dict(exp.get("ktap", {})),
        reports=_reports(exp.get("reports", [])),
        console=tuple(exp.get("console", [])),
        standard=bool(data.get("standard", True)), smp=int(data.get("smp", 1)),
        set=str(data.get("set", "")), variant=str(data.get("variant", "trust")),
        about=tuple(data.get("about", [])), disk=str(data.get("disk", "")),
        netdev=bool(data.get("netdev", False)),
        usb_keyboard=bool(data.get("usb_keyboard", False)), keys=int(data.get("keys", 0)),
        devices=tuple(data.get("devices", [])), firmware=str(data.get("firmware", "")),
        memory=int(data.get("memory", 256)), silence=float(data.get("silence", 0)),
        repeat=int(data.get("repeat", 1)), control=bool(data.get("control", False)),
        locking_api=str(exp.get("locking_api", "")), ww_mutex=str(exp.get("ww_mutex", "")),
        torture=tuple(exp.get("torture", [])),
        arch_reports={arch: (str(over.get("why", "")), _reports(over.get("reports", [])))
                      for arch, over in exp.items() if arch in ARCHES})


def _reports(items: list[dict]) -> tuple[ExpectedReport, ...]:
    return tuple(ExpectedReport(r["kind"], r.get("title", ""), r.get("lock", ""),
                                r.get("origin", "")) for r in items)


# path -> ((mtime_ns, size), Scenario): a scenario file is read again only once it
# changed (the sets are the scenarios' own fields: each set asks for every file)
_LOADED: dict[Path, tuple[tuple[int, int], Scenario]] = {}


def load_scenario(name: str, directory: Path = SCENARIOS_DIR) -> Scenario:
    path = directory / f"{name}.toml"
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is None or not path.is_file():
        known = ", ".join(list_scenarios(directory))
        raise FileNotFoundError(f"no scenario {name!r} in {directory} (known: {known})")
    stamp = (st.st_mtime_ns, st.st_size)
    kept = _LOADED.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    with path.open("rb") as f:
        sc = scenario_from_dict(name, tomllib.load(f))
    _LOADED[path] = (stamp, sc)
    return sc


def list_scenarios(directory: Path = SCENARIOS_DIR) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.toml"))


def standard_set(directory: Path = SCENARIOS_DIR) -> list[str]:
    """What `boot-test` boots without --scenario (every scenario not marked standard=false)."""
    return [n for n in list_scenarios(directory) if load_scenario(n, directory).standard]


def named_set(name: str, directory: Path = SCENARIOS_DIR) -> list[str]:
    """The scenarios of a set (`set = "runtime"`), in name order."""
    return [n for n in list_scenarios(directory) if load_scenario(n, directory).set == name]


def control_set(directory: Path = SCENARIOS_DIR) -> list[str]:
    """The scenarios `make selftest-control` boots on the pristine tree (control = true)."""
    return [n for n in list_scenarios(directory) if load_scenario(n, directory).control]


def console_problems(sc: Scenario, lines: list[str]) -> list[str]:
    """The console lines the scenario expects that the log does not show (pure)."""
    return [f"console line missing: {want!r}" for want in sc.console
            if not any(want in ln for ln in lines)]


def selftest_problems(sc: Scenario, tests: Selftests) -> list[str]:
    """What the scenario expects of the kernel's locking tests that the log does not
    show (pure; tests: qemu.selftests.read_selftests of the log)."""
    problems = []
    api = tests.locking_api
    if sc.locking_api and (api is None or api.status != sc.locking_api):
        got = "absent" if api is None else f"{api.status} ({api.passed}/{api.total})"
        problems.append(f"locking API self-tests: {got}, expected {sc.locking_api}")
    ww = tests.ww_mutex
    if sc.ww_mutex and (ww is None or ww.status != sc.ww_mutex):
        got = "absent" if ww is None else ww.status + "".join(f"; {e}" for e in ww.errors[:3])
        problems.append(f"ww_mutex self-test: {got}, expected {sc.ww_mutex}")
    for kind in sc.torture:
        runs = [t for t in tests.torture if t.torture_type == kind]
        if not runs or any(t.status != SUCCESS for t in runs):
            got = ", ".join(t.status for t in runs) or "absent"
            problems.append(f"locktorture {kind}: {got}, expected {SUCCESS}")
    return problems


def match_expected(sc: Scenario, reports: list[Report]) -> tuple[list[str], list[Report]]:
    """(a problem per expected report that is missing, the reports no expected one
    matches).  A report the scenario expects may repeat (e.g. one per CPU); only other
    kinds are unexpected."""
    missing: list[str] = []
    unmatched = list(reports)
    for exp in sc.reports:
        hit = next((r for r in unmatched if exp.matches(r)), None)
        if hit is None:
            missing.append(f"missing expected report: {exp.kind} {exp.title!r}")
        else:
            unmatched.remove(hit)
    return missing, [r for r in unmatched if not any(e.matches(r) for e in sc.reports)]


def evaluate(sc: Scenario, parsed: ParsedLog) -> Evaluation:
    problems: list[str] = []
    if parsed.verdict != sc.verdict:
        problems.append(f"verdict {parsed.verdict}, expected {sc.verdict}")
    missing, unexpected = match_expected(sc, parsed.reports)
    problems += missing
    for r in unexpected:
        problems.append(f"unexpected report: {r.kind}: {r.title} (line {r.line})")
    leaves = {path: st for doc in parsed.ktap for path, st in doc.leaves()}
    for path, want in sorted(sc.ktap.items()):
        got = leaves.get(path)
        if got != want:
            problems.append(f"KTAP {path}: {got or 'absent'}, expected {want}")
    if sc.ktap_all_ok:
        bad = sorted(f"{p}: {s}" for p, s in leaves.items() if s not in ("ok", "skip"))
        if bad:
            problems.append("KTAP not all ok: " + "; ".join(bad[:10]))
        if not any(doc.name == "kunit" and doc.children for doc in parsed.ktap):
            problems.append("KTAP: no KUnit results in the log")
    return Evaluation(not problems, problems)
