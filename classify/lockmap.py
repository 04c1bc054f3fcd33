"""Lock names and compiler errors -> the audit ids of their semaphores.  Pure.

A lockdep name is mapped by where the semaphore was initialised, as the audit records
it: "EXPR@file:line" (a sema_init() site, kernel-patches 0002 and 0008) by file and line
(falling back to file and the last identifier of EXPR when the series moved the line),
"name.lock" (a static mutex_debug) and "(name).lock" (a static arch_semaphore) by the
name of a file-scope semaphore, when exactly one has that name.  A report that names no
lock of the audit is mapped by its call trace only when a semaphore can be its subject
(classify.lockframes: a task blocked in down(), a mutex-debug report) and only through
the caller of the blocking call; a compiler error by the initialisation site it (or
gcc's "in expansion of macro" note) points at.  Each attribution says its link.

The one mapper: the runtime records (classify.runtime_records), the runtime set's
evaluation (qemu.runtime) and triage (qemu.triage) all map through it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from classify.lockdepmaps import TreeLinks
from classify.lockframes import Attribution, frame_attribution
from classify.records.audit import AllocatedFamily, AuditSem
from classify.records.boot import LockClass, Report, lock_class_of

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
    takes: dict[str, frozenset[str]] = field(default_factory=dict)  # function -> ops in it
    # from the tree (classify.lockdepmaps), when it was read
    by_map: dict[str, tuple[str, str]] = field(default_factory=dict)  # map name -> id, where
    helpers: dict[str, str] = field(default_factory=dict)   # macro helper -> how


def _name(sem_id: str) -> str:
    """The name a sema_init() site's expression ends with: a member's or a
    variable's, or the pointer's of a family allocated at run time (*sem@func)."""
    return sem_id.rsplit(":", 1)[1].split(".")[-1].lstrip("*").split("@")[0]


def build_index(sems: Sequence[AuditSem | AllocatedFamily],
                links: TreeLinks | None = None) -> SemIndex:
    """The index of the audit's semaphores (audit.json's "semaphores", or its
    "allocated" families); links: what the tree adds (classify.lockdepmaps.scan)."""
    by_site: dict[tuple[str, int], str] = {}
    by_name: dict[tuple[str, str], list[str]] = {}
    by_static: dict[str, list[str]] = {}
    by_function: dict[str, list[str]] = {}
    ops: dict[str, set[str]] = {}
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
                ops.setdefault(o["function"], set()).add(o.get("op", ""))
        paths = {s["declared"]["path"]} | {i["path"] for i in s.get("init", [])} | {
            o["path"] for o in s.get("ops", [])}
        files[sid] = tuple(sorted(p for p in paths if p.endswith(".c")))
    helpers = {}
    for func, (sid, how) in (links.helpers if links else {}).items():
        if by_function.setdefault(func, [sid]) == [sid]:
            ops.setdefault(func, set()).add("down")
            helpers[func] = how
    return SemIndex(by_site, by_name, by_static, by_function, files,
                    {f: frozenset(v) for f, v in ops.items()},
                    dict(links.maps) if links else {}, helpers)


def lock_to_id(name: str, index: SemIndex) -> str | None:
    """A lockdep name (or its class) -> the audit id of its semaphore, or None."""
    name = lock_class_of(name.strip())
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


def class_id(lock_class: LockClass, index: SemIndex) -> str | None:
    """The audit id of a lock class a boot listed, or None."""
    return lock_to_id(lock_class.lock_class, index)


def attributions(report: Report, index: SemIndex) -> list[Attribution]:
    """The semaphores a report names, each with its link: by its locks' classes (the
    count warning's lock among them), else (a report about no lock of the audit) by the
    call trace where classify.lockframes allows it."""
    out: list[Attribution] = []
    for lk in report.locks:
        lock_class = lk.lock_class or lk.name
        sid, link = lock_to_id(lock_class, index), f"lock class {lock_class}"
        if not sid and lock_class in index.by_map:
            sid, where = index.by_map[lock_class]
            link += f": the lockdep map acquired beside the semaphore's take at {where}"
        if sid and sid not in [a.id for a in out]:
            out.append(Attribution(sid, "lock class", link, lock_class))
    if not out and (att := frame_attribution(report, index.by_function, index.takes,
                                             index.files)):
        how = index.helpers.get(att.link.split("(")[0].removeprefix("frame "))
        out.append(Attribution(att.id, att.by, f"{att.link} ({how})" if how else att.link))
    return out


def report_ids(report: Report, index: SemIndex) -> list[str]:
    """The ids of attributions(): what the runtime records and evaluation count."""
    return [a.id for a in attributions(report, index) if a.id]


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
