"""`boot-test --set runtime`: DEBUG_MUTEX_FULL boots that run real 6.1 subsystems.

Kernel variants, all built from one worktree (work/trees/runtime) into one O= directory
(work/build/runtime, fragments base+mode-full+runtime), each image kept in
work/runtime/images/:

- trust: the series, its own marking of the counting pool (0004) made again by the
  marking mechanism (cocci/sem_to_arch.cocci, which follows pointer aliases) together
  with a marking of every semaphore that has an `unmark:` variant of its own (the
  *isolation*: an unknown-pool semaphore such as xfs_buf.b_sema would otherwise report
  first, and lockdep switches itself off after its first report, so the counting
  semaphores of the same subsystem would go unseen).  A semaphore the script refuses
  to mark stays a debug mutex: the run names it, and so does runtime.json's
  "variants" record;
- unmark:<id>: trust with that one semaphore's marking commit taken back, so that
  DEBUG_MUTEX_FULL makes it a debug mutex: the *challenge* of a counting semaphore, or
  the *probe* of an unknown one;
- convert:<id>: that semaphore's conversion patch, as `make patches` mails it, applied
  to trust (to unmark:<id> when trust marks it): the patch booted with its workload.

qemu/variants.py makes them, as commits (one per semaphore marked, reused from a
stamp); switching the build worktree between variants rewrites only the files that
differ, so each variant after the first is an incremental build.  Scenarios boot the
image of their variant with the devices they need (a fresh disk made by mkfs on the
host, a virtio NIC on an isolated user network, a USB keyboard driven through QMP).
Every boot is then read for its lockdep classes and reports (qemu.parse), and
classify.runtime_records turns the boots into one runtime record per semaphore of the
audit: reports/linux-<version>/runtime.json, which `make audit` shows.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from classify import lockmap
from classify.paths import slug
from classify.records.runtime import STATUSES, RuntimeRecord
from classify.report.runtime import boots_line, summary_line
from classify.tree import TreeError, check_kernel_tree
from classify.versions import build_dir_for
from qemu import parse, runrecord
from qemu.boot import BOOTS_DIR, BootResult, Kernel, boot_scenario, in_parallel, result_lines
from qemu.build import BuildRequest, BuildResult, BuildStatus, build
from qemu.common import DEFAULT_KERNEL, PROJECT_DIR, WORK_DIR, Timer, dumps
from qemu.config import ConfigRequest, ConfigStatus, configure
from qemu.rootfs import InitramfsRequest, InitramfsStatus, make_initramfs
from qemu.scenarios import (Evaluation, Scenario, load_scenario, match_expected,
                             named_set)
from qemu.source import Source, prepare_source
from qemu.variants import (CONVERT, MARK_TREE, TREE, UNMARK, Variant, checkout, for_tree,
                           make_variants, plan_variants, variant_id)

log = logging.getLogger("sem2mutex.qemu.runtime")

FRAGMENTS = ("base", "mode-full", "runtime")
RUNTIME_DIR = WORK_DIR / "runtime"
BUILD = WORK_DIR / "build" / "runtime"
DISK_MB = {"xfs": 320, "btrfs": 256, "bcache": 64}


@dataclass(frozen=True)
class Places:
    """Where a tree's variants are made, built and kept: the default tree's
    own, and those of another with its version in their names, so that each
    tree's builds stay incremental."""
    tree: Path = TREE
    marking: Path = MARK_TREE
    build: Path = BUILD
    images: Path = RUNTIME_DIR / "images"
    patches: Path = RUNTIME_DIR / "patches"     # the convert: variants' patches

    @classmethod
    def of(cls, version: str) -> "Places":
        """As classify.versions.build_dir_for names build directories: the
        default tree's plain, another's with -<major.minor>."""
        build = build_dir_for(BUILD.name, version)
        tail = build.name.removeprefix(BUILD.name)
        return cls(*(p.with_name(p.name + tail) for p in (TREE, MARK_TREE)), build,
                   RUNTIME_DIR / f"images{tail}", RUNTIME_DIR / f"patches{tail}")


def build_variant(source: Source, v: Variant, places: Places = Places()) -> Variant:
    tree = checkout(source, v.commit, places.tree)
    build_dir, images = places.build, places.images
    # an option no Kconfig of the tree defines (a driver another version
    # removed) is left out, and said: its scenarios are left out too (for_tree)
    cres = configure(ConfigRequest(tree, build_dir, FRAGMENTS, drop_undefined=True))
    for opt in cres.dropped:
        log.warning("runtime: variant %s: %s left out: no Kconfig of this tree defines it",
                    v.name, opt)
    if cres.status is not ConfigStatus.SUCCESS:
        v.errors = [f"config {cres.status.value}: {e}" for e in cres.errors]
        return v
    v.build = build(BuildRequest(tree, build_dir, jobs=2))   # -j2: a shared machine
    if v.build.status is not BuildStatus.SUCCESS:
        # the whole log: gcc's "in expansion of macro" notes name the semaphore's site
        text = v.build.log.read_text(errors="replace") if v.build.log else ""
        v.errors = [ln for ln in text.splitlines()
                    if "error:" in ln or "note: in expansion of macro" in ln][:200] or \
            v.build.errors
        return v
    images.mkdir(parents=True, exist_ok=True)
    assert v.build.image is not None
    v.image = images / f"{slug(v.name)}.bzImage"
    shutil.copyfile(v.build.image, v.image)
    return v


def built_sources(build_dir: Path = BUILD) -> set[str]:
    """The .c files compiled into the build (one .o each, the path relative to O=)."""
    out = set()
    for o in build_dir.rglob("*.o"):
        rel = o.relative_to(build_dir)
        if not rel.name.endswith((".mod.o", ".lds.o")):
            out.add(str(rel.with_suffix(".c")))
    return out


# ------------------------------------------------------------------ devices

def make_disks(kind: str, path: Path) -> tuple[list[Path], list[str]]:
    """Fresh sparse images for a scenario's `disk` (made on the host): one with a kind
    filesystem (mkfs.KIND), or for "bcache" a cache and a backing device formatted
    together by make-bcache (the backing device attached to the cache set, in writeback
    mode).  (images, []) or ([], errors)."""
    if kind == "bcache":
        images = [path.with_suffix(".cache.img"), path.with_suffix(".backing.img")]
        # 64 KiB buckets: a cache needs more than 512 of them (cache_alloc())
        cmd = ["make-bcache", "--writeback", "--bucket", "64k", "-C", str(images[0]),
               "-B", str(images[1])]
        pkg = "bcache-tools"
    else:
        images = [path]
        cmd = [f"mkfs.{kind}", "-q", "-f", str(path)]
        pkg = {"xfs": "xfsprogs", "btrfs": "btrfs-progs"}.get(kind, kind)
    tool = next((found for d in ("", "/usr/sbin/", "/sbin/")
                 if (found := shutil.which(d + cmd[0]))), None)
    if tool is None:
        return [], [f"{cmd[0]} not found: apt-get install {pkg}"]
    for image in images:
        image.parent.mkdir(parents=True, exist_ok=True)
        image.unlink(missing_ok=True)
        with image.open("wb") as f:
            f.truncate(DISK_MB.get(kind, 256) << 20)
    res = subprocess.run([tool, *cmd[1:]], capture_output=True, text=True)
    if res.returncode != 0:
        return [], [f"{cmd[0]} failed: {(res.stderr or res.stdout).strip()}"]
    return images, []


# OVMF (Debian's ovmf): the code read only, a copy of the variable store per boot
OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE.fd")
OVMF_VARS = Path("/usr/share/OVMF/OVMF_VARS.fd")


def make_firmware(kind: str, vars_copy: Path) -> tuple[list[str], list[str]]:
    """QEMU arguments for a scenario's `firmware` ("ovmf": UEFI, its variables in a
    fresh copy of the store): (args, []) or ([], errors)."""
    if kind != "ovmf":
        return [], [f"unknown firmware {kind!r} (known: ovmf)"]
    if not (OVMF_CODE.is_file() and OVMF_VARS.is_file()):
        return [], [f"{OVMF_CODE} not found: apt-get install ovmf"]
    vars_copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(OVMF_VARS, vars_copy)
    return ["-drive", f"if=pflash,format=raw,readonly=on,file={OVMF_CODE}",
            "-drive", f"if=pflash,format=raw,file={vars_copy}"], []


def device_args(sc: Scenario, disks: list[Path]) -> list[str]:
    args: list[str] = []
    for device in sc.devices:
        args += ["-device", device]
    for disk in disks:
        args += ["-drive", f"file={disk},format=raw,if=virtio"]
    if sc.netdev:
        # restrict=on: the guest reaches nothing outside QEMU's own user network
        args += ["-netdev", "user,id=n0,restrict=on", "-device", "virtio-net-pci,netdev=n0"]
    if sc.usb_keyboard:
        # i8042=off: the USB keyboard is the only one, QMP's key events go to it
        args += ["-machine", "i8042=off", "-device", "qemu-xhci,id=xhci",
                 "-device", "usb-kbd,bus=xhci.0,id=kbd0"]
    return args


# ------------------------------------------------------------------ evaluation

def evaluate_runtime(sc: Scenario, parsed: parse.ParsedLog, index: lockmap.SemIndex,
                     marked: frozenset[str]) -> Evaluation:
    """A runtime boot passes when it completed, its workload succeeded, and every report
    names a semaphore that ran as a debug mutex in it (evidence, not a failure) or is
    one the scenario declares (a report about no semaphore, said why in the scenario);
    the boot of a conversion patch (convert:<id>) passes only without any report.
    A challenge whose debug mutex deadlocks the kernel expects the harness's "hang" (or
    a workload step that fails), and passes only when a report naming its semaphore
    comes first (named_first).  A challenge that stays clean is a finding, reported by
    the runtime records."""
    problems: list[str] = []
    if parsed.verdict != sc.verdict:
        problems.append(f"verdict {parsed.verdict}, expected {sc.verdict}")
    leaves = {path: st for doc in parsed.ktap for path, st in doc.leaves()}
    for step in sc.steps:
        # a challenge may break its own workload ([expect] ktap says how)
        want = sc.ktap.get(f"s2m-init/{step}", "ok")
        got = leaves.get(f"s2m-init/{step}")
        if got != want:
            problems.append(f"workload step {step}: {got or 'absent'}"
                            + ("" if want == "ok" else f", expected {want}"))
    missing, undeclared = match_expected(sc, parsed.reports)
    problems += missing
    for r in undeclared:
        ids = lockmap.report_ids(r, index)
        # a conversion patch's boot is clean or broken: its completion has no
        # lock class a report could name, so any report may be about it
        if not ids or any(i in marked for i in ids) or sc.variant.startswith(CONVERT):
            problems.append(f"report not about a debug-mutex semaphore: {r.kind}: {r.title}"
                            f" (line {r.line}; {', '.join(ids) or 'no semaphore named'})")
    problems += named_first(sc, parsed, index)
    return Evaluation(not problems, problems)


def declared_failures(sc: Scenario, parsed: parse.ParsedLog,
                      names: list[list[str]]) -> list[tuple[str, int]]:
    """(what, its line) of each failure the scenario declares and the boot shows: the
    hang (the first hung task that names no semaphore, or the harness's timeout) and
    each workload step it expects to fail.  names: the ids each report names."""
    out = []
    if sc.verdict == "hang" and parsed.verdict == "hang":
        first = next((r for r, ids in zip(parsed.reports, names)
                      if r.kind == "hang" or (r.kind == "hung_task" and not ids)), None)
        if first is not None:
            out.append((f"the declared hang ({first.kind}: {first.title})", first.line))
    results = {path: node for doc in parsed.ktap for path, node in doc.leaf_nodes()}
    for step in sc.steps:
        want = sc.ktap.get(f"s2m-init/{step}", "ok")
        node = results.get(f"s2m-init/{step}")
        if want != "ok" and node is not None and node.status == want:
            out.append((f"the declared {want!r} of workload step {step}", node.line))
    return out


def named_first(sc: Scenario, parsed: parse.ParsedLog, index: lockmap.SemIndex) -> list[str]:
    """A declared hang or broken workload passes only after a report that names the
    semaphore the scenario challenges (its variant leaves it a debug mutex): a hang
    or failure of the harness's own would otherwise pass the same way."""
    sid = variant_id(sc.variant) if sc.variant.startswith(UNMARK) else ""
    names = [lockmap.report_ids(r, index) for r in parsed.reports]
    problems = []
    for what, line in declared_failures(sc, parsed, names):
        if not sid:
            problems.append(f"{what} at line {line}, but the scenario challenges no "
                            "semaphore (a trust kernel)")
        elif not any(sid in ids and r.line < line for r, ids in zip(parsed.reports, names)):
            problems.append(f"{what} at line {line}, but no report before it names {sid}")
    return problems


# ------------------------------------------------------------------ the whole set

def audit_path(version: str) -> Path:
    return PROJECT_DIR / "reports" / f"linux-{version}" / "audit.json"


def record_path(kernel: Path, version: str, apath: Path) -> Path:
    """runtime.json: beside the committed audit for the default tree, else in work/."""
    if kernel == DEFAULT_KERNEL.resolve():
        return apath.parent / "runtime.json"
    return WORK_DIR / "reports" / f"{kernel.name}-{version}" / "runtime.json"


def runtime_test(scenarios: list[Scenario], kernel: Path = DEFAULT_KERNEL,
                 out_dir: Path = BOOTS_DIR, record: Path | None = None,
                 accel: str = "tcg") -> tuple[list[BootResult], RuntimeRecord | None]:
    """Build each variant, boot its scenarios (two at a time, each as often as it
    repeats), keep every boot's log or build error in the artifacts directory and
    derive runtime.json from it (runrecord.derive), after every variant."""
    kernel = Path(kernel).resolve()
    version = check_kernel_tree(kernel).version
    apath = audit_path(version)
    if not apath.is_file():
        raise TreeError(f"{apath} missing: run `make audit KERNEL={kernel}` first")
    audit = json.loads(apath.read_text())
    # what the series' marking marks: declared semaphores and allocated families
    sems = {s["id"]: s for s in audit["semaphores"] + audit.get("allocated", [])}
    index = lockmap.build_index(audit["semaphores"])
    scenarios, left_out = for_tree(scenarios, sems)
    for name, why in left_out.items():
        log.warning("runtime: scenario %s LEFT OUT: %s", name, why)
    if not scenarios:
        raise TreeError(f"no runtime scenario applies to {kernel}: " + "; ".join(
            f"{n}: {w}" for n, w in left_out.items()))
    source = prepare_source(kernel)
    names, marks = plan_variants(scenarios, sems)
    # the trust kernel of the whole set, also for a trial of a few scenarios:
    # its isolation marks keep an unknown-pool semaphore (xfs_buf.b_sema) from
    # breaking the build, and its marking is the one the stamp keeps
    whole = for_tree([load_scenario(n) for n in named_set("runtime")], sems)[0]
    marks = list(dict.fromkeys(plan_variants(whole, sems)[1] + marks))
    log.info("runtime: %d variants; trust marks %s", len(names), ", ".join(marks))
    places = Places.of(version)
    variants = {v.name: v for v in make_variants(source, sems, names, marks, places.marking,
                                                 patches=places.patches)}
    initramfs = make_initramfs(InitramfsRequest())
    if initramfs.status is not InitramfsStatus.SUCCESS:
        raise TreeError("initramfs: " + "; ".join(initramfs.errors))
    record = record or record_path(kernel, version, apath)
    arts = runrecord.Artifacts(runrecord.artifacts_dir(record), version, "+".join(FRAGMENTS),
                               marks)
    arts.start()
    ours = {f for files in index.files.values() for f in files}
    results: list[BootResult] = []
    built: set[str] = set()
    times: dict[str, float] = {}
    data: RuntimeRecord | None = None
    for name in names:
        v = variants[name]
        if not v.refused:
            with Timer() as t:
                build_variant(source, v, places)
            times[f"build {name}"] = t.elapsed
            log.info("runtime: variant %s: %s in %.0f s", name,
                     "built" if v.image else "NOT BUILT", t.elapsed)
        if v.image is not None and name == "trust":
            built = built_sources(places.build) & ours
        if v.patch is not None:
            arts.add_patch(v.patch)
        mine = [s for s in scenarios if s.variant == name]
        with Timer() as t:
            results += boot_variant(mine, v, source, index, initramfs, out_dir, accel)
        times[f"boots {name}"] = t.elapsed
        for sc in mine:
            keep_artifacts(arts, sc, v, out_dir)
        # after every variant: a run cut short still leaves its evidence
        arts.write(runrecord.variant_records(list(variants.values())), built)
        data = runrecord.derive(audit, arts.directory)
        save_record(data, record)
    missing = unchallenged(data, scenarios, sems)
    if missing:
        log.warning("runtime: ran, but no scenario boots it unmarked (a challenge or a "
                    "probe): %s", ", ".join(missing))
    times["boots"] = round(sum(v for k, v in times.items() if k.startswith("boots ")), 1)
    RUNTIME_DIR.mkdir(parents=True, exist_ok=True)
    (RUNTIME_DIR / "times.json").write_text(dumps(times))
    log.info("runtime: builds %.0f s (%s), boots %.0f s wall", sum(
        v for k, v in times.items() if k.startswith("build ")), ", ".join(
        f"{k[6:]} {v:.0f} s" for k, v in times.items() if k.startswith("build ")),
        times["boots"])
    return results, data


def boot_variant(scs: list[Scenario], v: Variant, source: Source, index: lockmap.SemIndex,
                 initramfs, out_dir: Path, accel: str) -> list[BootResult]:
    """Every boot of the scenarios of one variant, PARALLEL_BOOTS at a time."""
    def job(sc: Scenario, name: str):
        if v.refused:
            return lambda: BootResult(name, False, "not_built", [
                f"variant {v.name} not made: {v.refused}"], fragments=FRAGMENTS)
        return lambda: boot_one(sc, v, source, index, initramfs, out_dir, accel, name)
    return in_parallel([job(sc, n) for sc in scs for n in sc.boot_names()])


def keep_artifacts(arts: runrecord.Artifacts, sc: Scenario, v: Variant,
                   out_dir: Path) -> None:
    """Each boot's evidence into the artifacts: its console log, the variant's compiler
    errors when it did not build, or nothing when it was not made."""
    for name in sc.boot_names():
        if v.refused:
            arts.add_not_made(name, sc.name, v.name)
        elif v.image is None:
            arts.add_build_errors(name, sc.name, v.name, slug(v.name), v.errors, TREE)
        else:
            arts.add_log(name, sc.name, v.name, out_dir / f"{name}.log")


def save_record(data: RuntimeRecord, record: Path) -> None:
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(data.dumps())
    log.info("runtime: wrote %s (run `make audit` to show it in the report)", record)


def boot_one(sc: Scenario, v: Variant, source: Source, index: lockmap.SemIndex, initramfs,
             out_dir: Path, accel: str, name: str = "") -> BootResult:
    name = name or sc.name
    if v.image is None:
        # an unmark: variant that fails is about its semaphore; the trust one about none
        named = lockmap.build_error_ids(v.errors, index) or [
            (sid, lockmap.first_error(v.errors)) for sid in v.name.split(":", 1)[1:]]
        if sc.verdict == "not_built" and any(sid in sc.about for sid, _ in named):
            return BootResult(name, True, "not_built", [], fragments=FRAGMENTS,
                              reports=[f"does not build as a mutex: {ln}" for _, ln in named])
        return BootResult(name, False, "not_built", [f"variant {v.name} did not build:"]
                          + v.errors[:20], fragments=FRAGMENTS)
    disks: list[Path] = []
    errors: list[str] = []
    firmware: list[str] = []
    if sc.disk:
        disks, errors = make_disks(sc.disk, RUNTIME_DIR / "disks" / f"{name}.img")
    if sc.firmware and not errors:
        firmware, errors = make_firmware(sc.firmware, RUNTIME_DIR / "firmware" / f"{name}.fd")
    if errors:
        return BootResult(name, False, "not_booted", errors, fragments=FRAGMENTS)
    assert v.build is not None
    kernel = Kernel(FRAGMENTS, _config_ok(), BuildResult(BuildStatus.SUCCESS, v.build.elapsed,
                                                         v.image))
    qmp = (RUNTIME_DIR / f"{name}.qmp") if sc.keys else None
    return boot_scenario(sc, kernel, initramfs, source, accel, out_dir,
                         extra_args=tuple(firmware + device_args(sc, disks)), qmp=qmp,
                         evaluator=lambda s, p: evaluate_runtime(s, p, index, v.marked),
                         name=name)


def _config_ok():
    from qemu.config import ConfigResult
    return ConfigResult(ConfigStatus.SUCCESS, 0.0, skipped=True)


def unchallenged(data: RuntimeRecord | None, scenarios: list[Scenario],
                 sems: dict[str, dict]) -> list[str]:
    """The semaphores the record says ran (a lock operation, a report, or a kernel that
    did not build without them) and that no scenario boots unmarked: a counting or
    completion one without its challenge, an unknown one without its probe.  A mutex
    needs none: every kernel already runs it as a debug mutex."""
    unmarked = {variant_id(sc.variant) for sc in scenarios if sc.variant.startswith(UNMARK)}
    if data is None:
        return []
    ran = {sid for sid, rec in data.semaphores.items()
           if rec.status in ("violated", "does-not-build-as-a-mutex")
           or any((b.ops or 0) > 0 for b in rec.boots or [])}
    return sorted(sid for sid in ran - unmarked
                  if sems.get(sid, {}).get("class") != "mutex")


def summary(results: list[BootResult], data: RuntimeRecord | None,
            about: dict[str, list[str]]) -> str:
    """The boots, then one line per semaphore a scenario is about, then the counts."""
    lines = result_lines(results)
    if data is not None:
        lines += record_lines(data, about)
    passed = sum(r.passed for r in results)
    lines.append(f"boot-test: {passed} passed, {len(results) - passed} failed")
    return "\n".join(lines)


def record_lines(data: RuntimeRecord, about: dict[str, list[str]]) -> list[str]:
    """What the record says: the variants' marks, the semaphores the scenarios are
    about, the boots and the counts."""
    lines = []
    for name, var in data.variants.items():
        for sid, why in (var.not_marked or {}).items():
            lines.append(f"runtime: {name}: {sid} NOT MARKED, runs as a debug mutex: {why}")
        if var.not_made:
            lines.append(f"runtime: variant {name} NOT MADE: {var.not_made}")
    for sid in sorted({i for ids in about.values() for i in ids}):
        rec = data.semaphores.get(sid)
        # a scenario's id another tree does not have (qemu.variants.for_tree)
        lines.append(f"runtime: {sid}: " + (summary_line(rec) if rec else
                                            "not in this tree's audit"))
    c = data.counts
    lines.append("runtime: " + boots_line(data.boots))
    lines.append("runtime: " + ", ".join(f"{k} {c[k]}" for k in STATUSES))
    return lines
