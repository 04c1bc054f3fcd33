"""Runtime evidence: what DEBUG_MUTEX_FULL boots said about each semaphore.  Pure.

`make boot-test SCENARIOS=runtime` boots kernels in which the counting pool is marked
struct arch_semaphore (a *trust* variant) or one semaphore is left unmarked, so that
DEBUG_MUTEX_FULL makes it a debug mutex (a *challenge* of a counting semaphore, or a
*probe* of one from the unknown pool).  Each boot leaves:

- the lock classes the kernel used, read by /init from /proc/lockdep at the end of the
  workload ("# lockdep-class:" lines, with CONFIG_DEBUG_LOCKDEP's per-class operation
  count), and
- the lockdep / mutex-debug reports of its console.

This module maps lockdep names back to audit ids and turns the boots into one
`runtime` record per semaphore:

    exercised-clean            it ran (its lock class has operations) and no report
                               names it
    violated                   a report names it (kind, title, boot)
    does-not-build-as-a-mutex  the kernel that leaves it a debug mutex does not compile
                               (the compiler's line)
    not-exercised              compiled into the runtime kernel, never used by a workload
    not-built                  none of its files was compiled into the runtime kernel

A scenario booted several times (`repeat`, for a report that depends on timing) gives
one entry per boot; the record then lists every outcome seen and in how many of the
boots (`repeats`).

A lockdep name is mapped by where the semaphore was initialised, as the audit records
it: "EXPR@file:line" (a sema_init() site, kernel-patches 0002 and 0008) by file and line
(falling back to file and the last identifier of EXPR when the series moved the line),
"name.lock" (a static mutex_debug) and "(name).lock" (a static arch_semaphore) by the
name of a file-scope semaphore, when exactly one has that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SCHEMA = "sem2mutex-runtime-1"
STATUSES = ("exercised-clean", "violated", "does-not-build-as-a-mutex", "not-exercised",
            "not-built")
CLEAN, VIOLATED, NO_BUILD = STATUSES[0], STATUSES[1], STATUSES[2]

_SUFFIX = re.compile(r"(?:#\d+)?(?:/\d+)?$")
_SITE = re.compile(r"^(?P<expr>.+?)@(?P<file>[\w./+-]+\.[ch]):(?P<line>\d+)$")
_STATIC = re.compile(r"^(?:\((?P<arch>[A-Za-z_]\w*)\)|(?P<mutex>[A-Za-z_]\w*))\.lock$")
_IDENT = re.compile(r"[A-Za-z_]\w*")
# "net/rxrpc/call_object.c:43:9: error: ..." in a build log
_BUILD_ERROR = re.compile(r"^(?P<file>[^\s:]+\.[ch]):(?P<line>\d+):(?:\d+:)? "
                          r"(?:error: (?P<msg>.*)|note: in expansion of macro .*)$")


@dataclass(frozen=True)
class SemIndex:
    """Where each semaphore of an audit is initialised, to map lockdep names back."""
    by_site: dict[tuple[str, int], str]
    by_name: dict[tuple[str, str], list[str]]     # (init file, member/var name) -> ids
    by_static: dict[str, list[str]]               # file-scope name -> ids
    by_function: dict[str, list[str]]             # function with an op -> ids
    files: dict[str, tuple[str, ...]]             # id -> its .c files (declared, init, ops)


def _name(sem_id: str) -> str:
    """The name a sema_init() site's expression ends with: a member's or a
    variable's, or the pointer's of a family allocated at run time (*sem@func)."""
    return sem_id.rsplit(":", 1)[1].split(".")[-1].lstrip("*").split("@")[0]


def build_index(sems: list[dict]) -> SemIndex:
    by_site: dict[tuple[str, int], str] = {}
    by_name: dict[tuple[str, str], list[str]] = {}
    by_static: dict[str, list[str]] = {}
    by_function: dict[str, list[str]] = {}
    files: dict[str, tuple[str, ...]] = {}
    for s in sems:
        sid = s["id"]
        for i in s.get("init", []):
            by_site.setdefault((i["path"], int(i["line"])), sid)
            by_name.setdefault((i["path"], _name(sid)), [])
            if sid not in by_name[(i["path"], _name(sid))]:
                by_name[(i["path"], _name(sid))].append(sid)
        if s["declared"]["kind"] in ("static", "global"):
            by_static.setdefault(_name(sid), []).append(sid)
        for o in s.get("ops", []):
            if o.get("function"):
                lst = by_function.setdefault(o["function"], [])
                if sid not in lst:
                    lst.append(sid)
        paths = {s["declared"]["path"]} | {i["path"] for i in s.get("init", [])} | {
            o["path"] for o in s.get("ops", [])}
        files[sid] = tuple(sorted(p for p in paths if p.endswith(".c")))
    return SemIndex(by_site, by_name, by_static, by_function, files)


def lock_to_id(name: str, index: SemIndex) -> str | None:
    """A lockdep class name -> the audit id of its semaphore, or None."""
    name = _SUFFIX.sub("", name.strip()) or name.strip()
    if m := _SITE.match(name):
        site = (m["file"], int(m["line"]))
        if site in index.by_site:
            return index.by_site[site]
        idents = _IDENT.findall(m["expr"])
        ids = index.by_name.get((m["file"], idents[-1]), []) if idents else []
        return ids[0] if len(ids) == 1 else None
    if m := _STATIC.match(name):
        ids = index.by_static.get(m["arch"] or m["mutex"], [])
        return ids[0] if len(ids) == 1 else None
    return None


def report_ids(report: dict, index: SemIndex) -> list[str]:
    """The semaphores a report names: by its locks' names, else (a DEBUG_LOCKS_WARN_ON or
    WARNING names no lock) by a call-trace frame that is one of a single semaphore's
    functions."""
    ids: list[str] = []
    for lk in report.get("locks", []):
        sid = lock_to_id(lk.get("lock_class") or lk.get("name", ""), index)
        if sid and sid not in ids:
            ids.append(sid)
    for line in report.get("body", []):     # "mutex_debug X@f.c:1 initialized with count N"
        if m := re.match(r"^mutex_debug (\S+) initialized with count", line.strip()):
            sid = lock_to_id(m[1], index)
            if sid and sid not in ids:
                ids.append(sid)
    if not ids:
        for func in report.get("frames", []):
            cands = index.by_function.get(func, [])
            if len(cands) == 1:
                ids.append(cands[0])
                break
    return ids


def build_error_ids(errors: list[str], index: SemIndex) -> list[tuple[str, str]]:
    """(id, "file:line: error: message") for each compiler error at a semaphore's
    initialisation site, or in a macro expanded there (the note gcc gives then points
    at the site, the error at the macro's definition)."""
    out: list[tuple[str, str]] = []
    last = ""
    for line in errors:
        m = _BUILD_ERROR.match(line.strip())
        if not m:
            continue
        if m["msg"] is not None:
            last = m["msg"]
        parts = m["file"].split("/")       # absolute or ../ paths of an O= build
        for k in range(len(parts)):
            path = "/".join(parts[k:])
            sid = index.by_site.get((path, int(m["line"])))
            if sid:
                if sid not in [i for i, _ in out]:
                    out.append((sid, f"{path}:{m['line']}: error: {last}"))
                break
    return out


def first_error(errors: list[str]) -> str:
    """The first compiler error, its path relative to the tree ("fs/xfs/x.h:1: error: …")."""
    for line in errors:
        if m := _BUILD_ERROR.match(line.strip()):
            if m["msg"] is not None:
                path = re.sub(r"^.*?/(?=(?:arch|block|crypto|drivers|fs|include|init|ipc|kernel|"
                              r"lib|mm|net|security|sound|virt)/)", "", m["file"])
                return f"{path.replace('/./', '/')}:{m['line']}: error: {m['msg']}"
    return errors[0].strip() if errors else "build failed"


_CLASS_LINE = re.compile(r"^# lockdep-class: \S+(?: OPS:\s*(?P<ops>\d+))?(?: FD:\s*\d+ BD:\s*\d+"
                         r" (?P<usage>[^:]*))?: (?P<name>.+?)\s*$")


def lockdep_classes(lines: list[str]) -> list[dict]:
    """The "# lockdep-class:" lines /init prints: name, ops (None without
    CONFIG_DEBUG_LOCKDEP) and usage bits."""
    out = []
    for line in lines:
        if m := _CLASS_LINE.match(line.strip()):
            out.append({"name": m["name"], "ops": int(m["ops"]) if m["ops"] else None,
                        "usage": (m["usage"] or "").strip()})
    return out


@dataclass
class Boot:
    """One runtime boot, as runtime_records() needs it."""
    name: str
    variant: str                      # "trust" | "unmark:<id>"
    marked: frozenset[str]            # ids declared struct arch_semaphore in its kernel
    classes: list[dict] = field(default_factory=list)    # lockdep_classes()
    reports: list[dict] = field(default_factory=list)    # {kind, title, locks, frames, body}
    build_errors: list[str] = field(default_factory=list)   # a variant that did not build
    verdict: str = "completed"
    scenario: str = ""                # the scenario (several boots when it repeats)

    @property
    def unmarked(self) -> str:
        return self.variant.split(":", 1)[1] if self.variant.startswith("unmark:") else ""


def exercised(boot: Boot, index: SemIndex) -> dict[str, dict]:
    """id -> {"ops", "class", "usage"} for every semaphore whose class has operations."""
    out: dict[str, dict] = {}
    for c in boot.classes:
        sid = lock_to_id(c["name"], index)
        if sid is None or (c["ops"] is not None and c["ops"] <= 0):
            continue
        prev = out.get(sid)
        ops = c["ops"] if c["ops"] is not None else 1
        if prev is None:
            out[sid] = {"ops": ops, "class": c["name"], "usage": c["usage"]}
        else:
            prev["ops"] += ops
    return out


def build_failures(boot: Boot, index: SemIndex) -> list[tuple[str, str]]:
    """(id, the compiler's line) for a variant that did not build: each semaphore whose
    initialisation site an error names, and the one the variant leaves unmarked (the
    variant differs from trust, which built, by that one declaration only).  The same
    lines go into the boot's record and the semaphore's."""
    out = build_error_ids(boot.build_errors, index)
    if boot.build_errors and boot.unmarked and boot.unmarked not in [i for i, _ in out]:
        out.append((boot.unmarked, first_error(boot.build_errors)))
    return out


_COUNT_LINE = re.compile(r"^mutex_debug \S+ initialized with count .*")


def report_detail(report: dict) -> str:
    """What a report's body says beyond its title: the mutex_debug count warning."""
    for line in report.get("body", []):
        if m := _COUNT_LINE.match(line.strip()):
            return m[0]
    return ""


def boot_entry(b: Boot, sid: str, ex: dict, reps: dict, failed: dict) -> dict | None:
    """What one boot says about one semaphore, or None when it says nothing."""
    if sid not in ex and sid not in reps and sid not in failed:
        return None
    e = {"boot": b.name, "ran_as": "semaphore" if sid in b.marked else "mutex"}
    if sid in failed:
        e.update(result="does-not-build", error=failed[sid])
        return e
    if sid in ex:
        e.update(ops=ex[sid]["ops"], lock_class=ex[sid]["class"])
    if sid in reps:
        r = reps[sid][0]
        e.update(result="violated", kind=r["kind"], title=r["title"])
        if report_detail(r):
            e["detail"] = report_detail(r)
    else:
        e["result"] = "clean"
    return e


def runtime_records(sems: list[dict], boots: list[Boot], built: set[str]) -> dict[str, dict]:
    """One record per semaphore of the audit (sems: its "semaphores" list); built: the
    .c files compiled into the runtime kernel(s)."""
    index = build_index(sems)
    per_boot = []
    for b in boots:
        reps: dict[str, list[dict]] = {}
        for r in b.reports:
            for sid in report_ids(r, index):
                reps.setdefault(sid, []).append(r)
        per_boot.append((b, exercised(b, index), reps, dict(build_failures(b, index))))
    records: dict[str, dict] = {}
    for s in sorted(sems, key=lambda s: s["id"]):
        sid = s["id"]
        if not any(f in built for f in index.files.get(sid, ())):
            records[sid] = {"status": "not-built", "files": list(index.files.get(sid, ()))}
            continue
        entries = [e for b, ex, reps, failed in per_boot
                   if (e := boot_entry(b, sid, ex, reps, failed)) is not None]
        rec = status_of(entries)
        if reps_ := repeats(sid, entries, boots):
            rec["repeats"] = reps_
        if why := finding(s["class"], entries):
            rec["finding"] = why
        records[sid] = rec
    return records


def status_of(entries: list[dict]) -> dict:
    """The record's status from its boots: a report first, then a kernel that does not
    build with it as a mutex, then a clean run."""
    rec: dict = {"boots": entries}
    by = {r: [e for e in entries if e["result"] == r]
          for r in ("violated", "does-not-build", "clean")}
    if by["violated"]:
        v = by["violated"][0]
        rec.update(status=VIOLATED, boot=v["boot"], kind=v["kind"], title=v["title"])
        if v.get("detail"):
            rec["detail"] = v["detail"]
    elif by["does-not-build"]:
        v = by["does-not-build"][0]
        rec.update(status=NO_BUILD, boot=v["boot"], compiler=v["error"])
    elif by["clean"]:
        c = by["clean"][0]
        rec.update(status=CLEAN, boot=c["boot"], evidence=f"{c['lock_class']}: OPS {c['ops']}")
    else:
        rec["status"] = "not-exercised"
    return rec


def outcome(e: dict | None) -> str:
    if e is None:
        return "not exercised"
    if e["result"] == "violated":
        return f"{e['kind']}: {e['title']}"
    return {"clean": "clean", "does-not-build": "does not build"}[e["result"]]


def repeats(sid: str, entries: list[dict], boots: list[Boot]) -> list[dict]:
    """For each scenario booted more than once whose boots say something about sid
    as a debug mutex: every outcome seen and in how many of its boots, first seen
    first.  Boots where sid stayed a semaphore (marked) say nothing of it as a mutex."""
    by_name = {e["boot"]: e for e in entries}
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
        out.append({"scenario": scenario, "boots": len(group),
                    "outcomes": [{"outcome": o, "seen": n} for o, n in seen.items()]})
    return out


def finding(cls: str, entries: list[dict]) -> str:
    """What the boots say against the static class, or ""."""
    as_mutex_clean = [e for e in entries if e["ran_as"] == "mutex" and e["result"] == "clean"]
    as_sem_violated = [e for e in entries if e["ran_as"] == "semaphore"
                       and e["result"] == "violated"]
    if as_sem_violated:
        e = as_sem_violated[0]
        return (f"reported while it was a semaphore ({e['boot']}: {e['kind']}): the report "
                "is not about mutex semantics")
    if cls == "counting" and as_mutex_clean:
        e = as_mutex_clean[0]
        return (f"classed counting, but it ran as a debug mutex in {e['boot']} "
                f"(OPS {e.get('ops', '?')}) without any report")
    if cls in ("mutex", "completion") and any(e["result"] == "violated" and e["ran_as"] ==
                                              "mutex" for e in entries):
        return f"classed {cls}, but it broke a mutex rule as a debug mutex"
    return ""


def counts(records: dict[str, dict]) -> dict[str, int]:
    out = {st: 0 for st in STATUSES}
    for r in records.values():
        out[r["status"]] = out.get(r["status"], 0) + 1
    return out


def repeat_text(rec: dict) -> str:
    """"over 5 boots of runtime-btrfs-challenge: A 3, B 2 (depends on timing)"."""
    parts = []
    for r in rec.get("repeats", []):
        seen = ", ".join(f"{o['outcome']} {o['seen']}" for o in r["outcomes"])
        timing = " (depends on timing)" if len(r["outcomes"]) > 1 else " (every time)"
        parts.append(f"over {r['boots']} boots of {r['scenario']}: {seen}{timing}")
    return "; ".join(parts)


def summary_line(rec: dict) -> str:
    """One line for the report tables."""
    st = rec.get("status", "?")
    if st == VIOLATED:
        text = f"violated: {rec['kind']}: {rec['title']} ({rec['boot']})"
        if rec.get("detail"):
            text += f" [{rec['detail']}]"
    elif st == NO_BUILD:
        text = f"does not build as a mutex: {rec['compiler']} ({rec['boot']})"
    elif st == CLEAN:
        text = f"exercised, clean: {rec.get('evidence', '')} ({rec['boot']})"
    elif st == "not-built":
        text = "not-built: " + ", ".join(rec.get("files", [])[:3])
    else:
        text = st
    if rep := repeat_text(rec):
        text += f"; {rep}"
    shown = {rec.get("boot")} | {b["boot"] for b in rec.get("boots", [])
                                 if any(b["boot"] != rec.get("boot") and b["boot"].rsplit(
                                     ".", 1)[0] == r["scenario"]
                                     for r in rec.get("repeats", []))}
    others = [e for e in rec.get("boots", []) if e["boot"] not in shown]
    more = len(others) - 3
    for e in others[:3]:
        text += f"; {e['boot']} (as {e['ran_as']}): {e['result']}"
        if e["result"] == "violated":
            text += f": {e['kind']}: {e['title']}"
        elif "ops" in e:
            text += f", OPS {e['ops']}"
    if more > 0:
        text += f"; {more} more boot(s)"
    if rec.get("finding"):
        text += f"; FINDING: {rec['finding']}"
    return text


def boots_line(boots: dict[str, dict]) -> str:
    """How many kernels booted how many times, and which were never booted (the
    "boots" of a runtime record)."""
    booted = [b for b in boots.values() if b.get("verdict") not in ("not_built", "not_made")]
    kernels = {b.get("variant") for b in booted}
    failed = sorted({b.get("variant", "?") for b in boots.values()
                     if b.get("verdict") == "not_built"})
    not_made = sorted({b.get("variant", "?") for b in boots.values()
                       if b.get("verdict") == "not_made"})
    text = f"{len(booted)} boots of {len(kernels)} kernels"
    if failed:
        text += f"; {len(failed)} kernel(s) did not build, not booted: " + ", ".join(failed)
    if not_made:
        text += f"; {len(not_made)} variant(s) not made: " + ", ".join(not_made)
    return text
