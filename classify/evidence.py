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

    clean          it ran (its lock class has operations) and no report names it
    violated       a report names it (kind, title, boot)
    not-exercised  compiled into the runtime kernel, never used by a workload
    not-built      none of its files was compiled into the runtime kernel

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
STATUSES = ("clean", "violated", "not-exercised", "not-built")

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
    return sem_id.rsplit(":", 1)[1].split(".")[-1]


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


def runtime_records(sems: list[dict], boots: list[Boot], built: set[str]) -> dict[str, dict]:
    """One record per semaphore of the audit (sems: its "semaphores" list); built: the
    .c files compiled into the runtime kernel(s)."""
    index = build_index(sems)
    per_boot = []
    for b in boots:
        ex = exercised(b, index)
        reps: dict[str, list[dict]] = {}
        for r in b.reports:
            for sid in report_ids(r, index):
                reps.setdefault(sid, []).append(r)
        for sid, line in build_error_ids(b.build_errors, index):
            reps.setdefault(sid, []).append({"kind": "build_error", "title": line})
        if b.build_errors and b.unmarked and b.unmarked not in reps:
            # the variant differs from trust (which built) by that one declaration only
            reps[b.unmarked] = [{"kind": "build_error",
                                 "title": first_error(b.build_errors)}]
        per_boot.append((b, ex, reps))
    records: dict[str, dict] = {}
    for s in sorted(sems, key=lambda s: s["id"]):
        sid = s["id"]
        if not any(f in built for f in index.files.get(sid, ())):
            records[sid] = {"status": "not-built",
                            "files": list(index.files.get(sid, ()))}
            continue
        entries = []
        for b, ex, reps in per_boot:
            if sid not in ex and sid not in reps:
                continue
            ran_as = "semaphore" if sid in b.marked else "mutex"
            e = {"boot": b.name, "ran_as": ran_as}
            if sid in ex:
                e.update(ops=ex[sid]["ops"], lock_class=ex[sid]["class"])
            if sid in reps:
                r = reps[sid][0]
                e.update(result="violated", kind=r["kind"], title=r["title"])
            else:
                e["result"] = "clean"
            entries.append(e)
        rec: dict = {"boots": entries}
        violated = [e for e in entries if e["result"] == "violated"]
        clean = [e for e in entries if e["result"] == "clean"]
        if violated:
            v = violated[0]
            rec.update(status="violated", boot=v["boot"], kind=v["kind"], title=v["title"])
        elif clean:
            rec.update(status="clean", boot=clean[0]["boot"],
                       evidence=f"{clean[0]['lock_class']}: OPS {clean[0]['ops']}")
        else:
            rec["status"] = "not-exercised"
        rec["finding"] = finding(s["class"], entries)
        if not rec["finding"]:
            del rec["finding"]
        records[sid] = rec
    return records


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


def summary_line(rec: dict) -> str:
    """One line for the report tables."""
    st = rec.get("status", "?")
    if st == "violated":
        text = f"violated: {rec['kind']}: {rec['title']} ({rec['boot']})"
    elif st == "clean":
        text = f"clean: {rec.get('evidence', '')} ({rec['boot']})"
    elif st == "not-built":
        text = "not-built: " + ", ".join(rec.get("files", [])[:3])
    else:
        text = st
    others = [e for e in rec.get("boots", []) if e["boot"] != rec.get("boot")]
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
