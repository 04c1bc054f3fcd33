"""The runtime records: what DEBUG_MUTEX_FULL boots said about each semaphore.  Pure.

`make boot-test SCENARIOS=runtime` boots kernels in which the counting pool is marked
struct arch_semaphore (a *trust* variant) or one semaphore is left unmarked, so that
DEBUG_MUTEX_FULL makes it a debug mutex (a *challenge* of a counting semaphore, or a
*probe* of one from the unknown pool).  Each boot (classify.records.boot.Boot, read by
qemu.parse) brings the lock classes the kernel used, with their operation counts, and
the reports of its console; a variant that did not build brings its compiler errors.

runtime_record() turns the boots into one record per semaphore of the audit
(classify.records.runtime), its status one of:

    exercised-clean            it ran (its lock class has operations) and no report
                               names it
    violated                   a report names it (kind, title, boot)
    does-not-build-as-a-mutex  the kernel that leaves it a debug mutex does not compile
                               (the compiler's line)
    not-exercised              compiled into the runtime kernel, never used by a workload
    not-built                  none of its files was compiled into the runtime kernel

A boot of a kernel with a semaphore's conversion patch applied (a *convert:<id>*
variant) says nothing of the semaphore's status: the semaphore is gone from that
kernel (a completion has no lock class).  Its record lists such boots apart
(`converted`): clean when the boot completed with no report and no failed step,
else broken, with the first report or the steps that failed.

A semaphore's entry for a boot holds the first report that names it and how many
other reports that boot printed; the boot's own record (BootRecord) keeps every report
of its log in order, with its lock classes, function and line (report_record()).

A scenario booted several times (`repeat`, for a report that depends on timing) gives
one entry per boot; the record then lists every outcome seen and in how many of the
boots (`repeats`).  Names are mapped to ids by classify.lockmap.
"""

from __future__ import annotations

from dataclasses import dataclass

from classify import lockmap
from classify.records.audit import AuditData, AuditSem
from classify.records.boot import Boot, Report
from classify.records.runtime import (CLEAN, NO_BUILD, NOT_BUILT, NOT_EXERCISED, STATUSES,
                                      VIOLATED, BootEntry, BootRecord, Converted, Outcome,
                                      Repeat, ReportIds, RuntimeRecord, SemRuntime,
                                      VariantRecord)


@dataclass(frozen=True)
class Ran:
    """A semaphore whose lock class ran in a boot."""
    ops: int                  # its operations (1 without CONFIG_DEBUG_LOCKDEP's count)
    name: str                 # the class, as the boot listed it
    usage: str


def exercised(boot: Boot, index: lockmap.SemIndex) -> dict[str, Ran]:
    """id -> how it ran, for every semaphore whose class has operations."""
    out: dict[str, Ran] = {}
    for c in boot.classes:
        sid = lockmap.class_id(c, index)
        if sid is None or (c.ops is not None and c.ops <= 0):
            continue
        ops = c.ops if c.ops is not None else 1
        prev = out.get(sid)
        out[sid] = Ran(ops, c.name, c.usage) if prev is None else \
            Ran(prev.ops + ops, prev.name, prev.usage)
    return out


def build_failures(boot: Boot, index: lockmap.SemIndex) -> list[tuple[str, str]]:
    """(id, the compiler's line) for a variant that did not build: each semaphore whose
    initialisation site an error names, and the one the variant leaves unmarked (the
    variant differs from trust, which built, by that one declaration only).  The same
    lines go into the boot's record and the semaphore's."""
    out = lockmap.build_error_ids(boot.build_errors, index)
    if boot.build_errors and boot.unmarked and boot.unmarked not in [i for i, _ in out]:
        out.append((boot.unmarked, lockmap.first_error(boot.build_errors)))
    return out


def boot_entry(b: Boot, sid: str, ex: dict[str, Ran], reps: dict[str, list[Report]],
               failed: dict[str, str]) -> BootEntry | None:
    """What one boot says about one semaphore, or None when it says nothing."""
    if sid not in ex and sid not in reps and sid not in failed:
        return None
    e = BootEntry(b.name, "semaphore" if sid in b.marked else "mutex", "")
    if sid in failed:
        e.result, e.error = "does-not-build", failed[sid]
        return e
    if sid in ex:
        e.ops, e.lock_class = ex[sid].ops, ex[sid].name
    if sid in reps:
        r = reps[sid][0]
        e.result, e.kind, e.title = "violated", r.kind, r.title
        e.detail = r.detail or None
        e.more = len(b.reports) - 1 or None
    else:
        e.result = "clean"
    return e


def converted_boot(b: Boot, patch: str) -> Converted:
    """What a boot of a kernel with the conversion patch says: clean, or what broke."""
    c = Converted(b.name, patch, "clean", b.verdict, list(b.failed))
    if b.reports:
        c.kind, c.title = b.reports[0].kind, b.reports[0].title
        c.more = len(b.reports) - 1 or None
    if b.reports or b.failed or b.verdict != "completed":
        c.result = "broken"
    return c


def runtime_records(sems: list[AuditSem], boots: list[Boot], built: set[str],
                    patches: dict[str, str] | None = None) -> dict[str, SemRuntime]:
    """One record per semaphore of the audit (sems: its "semaphores" list); built: the
    .c files compiled into the runtime kernel(s); patches: a convert: variant's name
    -> the patch it applied."""
    index = lockmap.build_index(sems)
    per_boot = []
    for b in boots:
        reps: dict[str, list[Report]] = {}
        for r in b.reports:
            for sid in lockmap.report_ids(r, index):
                reps.setdefault(sid, []).append(r)
        per_boot.append((b, exercised(b, index), reps, dict(build_failures(b, index))))
    records: dict[str, SemRuntime] = {}
    for s in sorted(sems, key=lambda s: s["id"]):
        sid = s["id"]
        if not any(f in built for f in index.files.get(sid, ())):
            records[sid] = SemRuntime(NOT_BUILT, files=list(index.files.get(sid, ())))
            continue
        entries = [e for b, ex, reps, failed in per_boot if b.converted != sid
                   and (e := boot_entry(b, sid, ex, reps, failed)) is not None]
        rec = status_of(entries)
        rec.repeats = repeats(sid, entries, [b for b in boots if b.converted != sid]) or None
        rec.finding = finding(s["class"], entries) or None
        rec.converted = [converted_boot(b, (patches or {}).get(b.variant, ""))
                         for b in boots if b.converted == sid] or None
        records[sid] = rec
    return records


def status_of(entries: list[BootEntry]) -> SemRuntime:
    """The record's status from its boots: a report first, then a kernel that does not
    build with it as a mutex, then a clean run."""
    by = {r: [e for e in entries if e.result == r]
          for r in ("violated", "does-not-build", "clean")}
    if by["violated"]:
        v = by["violated"][0]
        return SemRuntime(VIOLATED, entries, boot=v.boot, kind=v.kind, title=v.title,
                          detail=v.detail or None)
    if by["does-not-build"]:
        v = by["does-not-build"][0]
        return SemRuntime(NO_BUILD, entries, boot=v.boot, compiler=v.error)
    if by["clean"]:
        c = by["clean"][0]
        return SemRuntime(CLEAN, entries, boot=c.boot,
                          evidence=f"{c.lock_class}: OPS {c.ops}")
    return SemRuntime(NOT_EXERCISED, entries)


def outcome(e: BootEntry | None) -> str:
    if e is None:
        return "not exercised"
    if e.result == "violated":
        return f"{e.kind}: {e.title}"
    return {"clean": "clean", "does-not-build": "does not build"}[e.result]


def repeats(sid: str, entries: list[BootEntry], boots: list[Boot]) -> list[Repeat]:
    """For each scenario booted more than once whose boots say something about sid
    as a debug mutex: every outcome seen and in how many of its boots, first seen
    first.  Boots where sid stayed a semaphore (marked) say nothing of it as a mutex."""
    by_name = {e.boot: e for e in entries}
    groups: dict[str, list[Boot]] = {}
    for b in boots:
        if sid in b.marked:
            continue
        groups.setdefault(b.scenario or b.name, []).append(b)
    out = []
    for scenario, group in groups.items():
        if len(group) < 2 or not any(b.name in by_name for b in group):
            continue
        seen: dict[str, int] = {}
        for b in group:
            o = outcome(by_name.get(b.name))
            seen[o] = seen.get(o, 0) + 1
        out.append(Repeat(scenario, len(group), [Outcome(o, n) for o, n in seen.items()]))
    return out


def finding(cls: str, entries: list[BootEntry]) -> str:
    """What the boots say against the static class, or ""."""
    as_mutex_clean = [e for e in entries if e.ran_as == "mutex" and e.result == "clean"]
    as_sem_violated = [e for e in entries if e.ran_as == "semaphore"
                       and e.result == "violated"]
    if as_sem_violated:
        e = as_sem_violated[0]
        return (f"reported while it was a semaphore ({e.boot}: {e.kind}): the report "
                "is not about mutex semantics")
    if cls == "counting" and as_mutex_clean:
        e = as_mutex_clean[0]
        return (f"classed counting, but it ran as a debug mutex in {e.boot} "
                f"(OPS {e.ops if e.ops is not None else '?'}) without any report")
    if cls in ("mutex", "completion") and any(e.result == "violated" and e.ran_as ==
                                              "mutex" for e in entries):
        return f"classed {cls}, but it broke a mutex rule as a debug mutex"
    return ""


def counts(records: dict[str, SemRuntime]) -> dict[str, int]:
    out = {st: 0 for st in STATUSES}
    for r in records.values():
        out[r.status] = out.get(r.status, 0) + 1
    return out


def report_record(r: Report, index: lockmap.SemIndex) -> ReportIds:
    """A boot's report in its record: what it is, where the log has it, what it names."""
    classes = list(dict.fromkeys(lk.lock_class for lk in r.locks))
    return ReportIds(r.kind, r.title, lockmap.report_ids(r, index), classes, r.function,
                     r.line)


def runtime_record(audit: AuditData, version: str, marks: list[str], boots: list[Boot],
                   built: set[str], variants: dict[str, VariantRecord],
                   config: str) -> RuntimeRecord:
    """The stable record of the boots (no times): what runtime.json holds, and what
    `python3 -m qemu triage --record` writes for one log.  audit: audit.json's data."""
    index = lockmap.build_index(audit["semaphores"])
    records = runtime_records(audit["semaphores"], boots, built,
                              {n: v.patch or "" for n, v in variants.items() if v.converts})
    out_boots = {
        b.name: BootRecord(b.scenario or b.name, b.variant, b.verdict,
                           [report_record(r, index) for r in b.reports],
                           [ln for _, ln in build_failures(b, index)])
        for b in boots}
    return RuntimeRecord(version, config, sorted(marks), out_boots, counts(records),
                         records, variants)
