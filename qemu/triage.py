"""`python3 -m qemu triage LOG`: what a console log or dmesg says about the audit.

A tester who booted a DEBUG_MUTEX_FULL kernel sends a log.  Triage reads every report
in it (qemu.parse), maps each lock class to the semaphore of the audit it names
(classify.lockmap, the one mapper) and says what that means for the semaphore's
static verdict:

    confirms counting                  a counting semaphore broke a mutex rule
    contradicts the mutex verdict      a semaphore classed mutex (or completion) did
    not a semaphore of the audit       an ordinary lock
    a semaphore of the unknown pool behaving as a mutex
                                       its lock class ran (the "# lockdep-class:" lines
                                       of our /init) and no report names it

Every semaphore named says its link (classify.lockmap.attributions): its lock class,
a lockdep map the tree acquires beside its down() (--tree), or the caller of the
blocking call of a task hung in down*() or of a mutex-debug report
(classify.lockframes); nothing else names one.  A log of another kernel version than
the audit's is refused unless --other-version, and then the output says so.  A log
of any size is read in bounded memory (qemu.logstream); in one over 8 MiB a report that
repeats an earlier one word for word (but for times and prefixes) is listed once, with
"N further report(s) of the same signature" and the line of each.

With --record OUT it writes the boot's runtime record, in the format of the runtime
set's runtime.json (classify.runtime_records.runtime_record), for `make audit` to
take in.

Which semaphores ran as a debug mutex depends on the kernel: the log's
`s2m.scenario=NAME` names a runtime scenario and so its variant (trust: the counting
pool and the runtime set's isolation marks are struct arch_semaphore; unmark:<id>:
trust but that one; convert:<id>: trust but that one, converted by its patch); any other log is taken as a kernel of the series
(`series`: kernel-patches/0004 marks the audit's counting pool).  --variant says
otherwise.  Which files were compiled in is known only from the build (--built);
without it every semaphore the log does not show is recorded not-exercised.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from classify import lockdepmaps, lockmap, runtime_records
from classify.lockdepmaps import TreeLinks
from classify.paths import SETUP_TREES
from classify.records.boot import Boot
from classify.records.runtime import (STATUSES, BootEntry, RuntimeRecord, SemRuntime,
                                      VariantRecord)
from classify.report.runtime import summary_line
from qemu import logstream, parse, runrecord, runtime
from qemu.common import PROJECT_DIR
from qemu.scenarios import list_scenarios, load_scenario, named_set
from qemu.variants import Variant, marking_pool, variant_id


NOT_OURS = "not a semaphore of the audit"
CONFIRMS = "confirms counting"
UNKNOWN_AS_MUTEX = "a semaphore of the unknown pool behaving as a mutex"


class TriageError(Exception):
    """Bad input that is the user's to fix (exit status 2)."""


# ------------------------------------------------------------------ which kernel

def default_audit(text: str) -> Path:
    """The committed audit of the log's kernel version, else the only one there is."""
    if (version := parse.kernel_version(text)) and runtime.audit_path(version).is_file():
        return runtime.audit_path(version)
    found = sorted((PROJECT_DIR / "reports").glob("linux-*/audit.json"))
    if len(found) == 1:
        return found[0]
    raise FileNotFoundError("no audit for this log's kernel: give --audit PATH")


def version_note(text: str, audit: dict, other: bool) -> str:
    """"" when the log is of the audit's kernel (or does not say); else a note saying
    it is read against another version's audit (other), or TriageError."""
    log, ours = parse.kernel_version(text), audit.get("kernel_version", "")
    if not log or not ours or log == ours:
        return ""
    note = f"the log is of Linux {log}, the audit of {ours}"
    if not other:
        raise TriageError(f"{note}: give the audit of that version (--audit), or "
                          "--other-version to read it against this one")
    return f"{note}: read against it (--other-version); lock classes and frames of code " \
        f"that changed since may name nothing"


def tree_links(tree: Path | None, audit: dict) -> TreeLinks | None:
    """What the tree of the audit's version (--tree, else the setup's pristine tree of
    that version, if there is one) adds to the audit; None without a tree."""
    version = ".".join(str(audit.get("kernel_version", "")).split(".")[:2])
    tree = tree or SETUP_TREES.get(version)
    if tree is None or not tree.is_dir():
        return None
    return lockdepmaps.scan(tree, [(o["path"], int(o["line"]), s["id"])
                                   for s in audit["semaphores"] for o in s.get("ops", [])])


def boot_of(text: str, stem: str) -> tuple[str, str]:
    """(boot name, variant): a runtime scenario the command line names, else the
    log's name on a kernel of the series."""
    name = parse.scenario_of(text)
    if name and name in list_scenarios():
        sc = load_scenario(name)
        if sc.set == "runtime":
            return sc.name, sc.variant
    return stem, "series"


def trust_marks(sems: dict[str, dict]) -> list[str]:
    """The runtime set's extra marks (its isolation), as runtime.plan_variants plans."""
    scenarios = [load_scenario(n) for n in named_set("runtime")]
    return sorted(runtime.plan_variants(scenarios, sems)[1]) if scenarios else []


def variant_marked(sems: dict[str, dict], variant: str, marks: list[str],
                   refused: set[str] = frozenset()) -> frozenset[str]:
    """The ids declared struct arch_semaphore in the variant's kernel."""
    counting = [i for i, s in sems.items() if s.get("class") == "counting"]
    if variant == "series":
        return frozenset(counting)
    trust = {s["id"] for s in marking_pool(sems, marks)} - set(refused)
    if variant == "trust":
        return frozenset(trust)
    sid = variant_id(variant)
    if sid in sems:
        return frozenset(trust - {sid})
    raise TriageError(f"variant {variant!r}: not series, trust, unmark:<an audit id> or "
                      "convert:<an audit id>")


def run_variants(audit_path: Path) -> dict[str, VariantRecord]:
    """What the runtime set's variants mark, or convert with which patch, from its
    runtime.json beside the audit ({} when there is none)."""
    path = audit_path.parent / "runtime.json"
    if not path.is_file():
        return {}
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _VARIANTS:
        _VARIANTS[key] = RuntimeRecord.load(path).variants
    return _VARIANTS[key]


def refused_marks(audit_path: Path) -> set[str]:
    """The ids the runtime set's marking refused, from its runtime.json (if it says)."""
    trust = run_variants(audit_path).get("trust")
    return set(trust.not_marked or {}) if trust else set()


# (runtime.json, its mtime and size) -> its variants: read once
_VARIANTS: dict[tuple[str, int, int], dict[str, VariantRecord]] = {}


def read_built(path: Path) -> set[str]:
    """The .c files compiled in: an O= build directory (its .o files, as the runtime
    set reads them) or a file naming one source path a line."""
    if path.is_dir():
        return runtime.built_sources(path)
    return {ln.strip() for ln in path.read_text().splitlines() if ln.strip()}


# ------------------------------------------------------------------ what it says

def reading(sid: str | None, sem: dict | None, entry: BootEntry | None) -> str:
    """What the log says about one semaphore's static class, in words."""
    if sid is None or sem is None:
        return NOT_OURS
    cls = sem.get("class", "?")
    if entry is None:
        return f"{cls}: the log shows no use of it"
    if entry.ran_as == "semaphore":
        if entry.result == "violated":
            return f"{cls}, reported while it was a semaphore: the report is not about " \
                "mutex semantics"
        return f"{cls}, ran as a semaphore (marked): says nothing about mutex use"
    if entry.result == "violated":
        if cls == "counting":
            return CONFIRMS
        if cls in ("mutex", "completion"):
            return f"contradicts the {cls} verdict"
        return "a semaphore of the unknown pool breaking a mutex rule: not a mutex"
    if cls == "unknown":
        return UNKNOWN_AS_MUTEX
    if cls == "mutex":
        return "behaving as a mutex, as the mutex verdict says"
    return f"classed {cls}, but behaving as a mutex (no report while it ran)"


def _entry(records: dict[str, SemRuntime], sid: str | None, boot: str) -> BootEntry | None:
    rec = records.get(sid or "")
    return next((e for e in rec.boots or [] if e.boot == boot), None) if rec else None


def _lock_item(lock_class: str | None, sid: str | None, by: str, sems: dict,
               records: dict[str, SemRuntime], boot: str, link: str | None = None) -> dict:
    sem = sems.get(sid or "")
    return {"lock_class": lock_class, "id": sid, "by": by,
            "link": link or (f"{by} {lock_class}" if sid and lock_class else None),
            "class": sem.get("class") if sem else None,
            "reading": reading(sid, sem, _entry(records, sid, boot)) if sid or not link
            else "no semaphore named"}


def report_items(boot: Boot, index: lockmap.SemIndex, sems: dict,
                 records: dict[str, SemRuntime],
                 allocated: list[dict] | None = None) -> list[dict]:
    """One item per report: kind, title, task, line, its lock classes read and the
    semaphores its trace names (classify.lockframes), each with its link; a family
    allocated at run time (the audit's "allocated") by its helper's frame."""
    families = lockmap.build_index(allocated or [])
    fclass = {f["id"]: f.get("class") for f in allocated or []}
    out = []
    for rep in boot.reports:
        classes = list(dict.fromkeys(lk.lock_class for lk in rep.locks))
        atts = lockmap.attributions(rep, index)
        by_class = {a.lock_class: a for a in atts if a.lock_class}
        locks = [_lock_item(lc, by_class[lc].id if lc in by_class else lockmap.lock_to_id(
            lc, index), "lock class", sems, records, boot.name,
            by_class[lc].link if lc in by_class else None) for lc in classes]
        named = {lk["id"] for lk in locks}
        locks += [_lock_item(None, a.id, a.by, sems, records, boot.name, a.link)
                  for a in atts if a.by != "lock class" and (a.id is None or a.id not in named)]
        if allocated and not any(lk["id"] for lk in locks):
            locks += [{"lock_class": None, "id": a.id, "by": a.by, "link": a.link,
                       "class": fclass[a.id], "reading": "a semaphore allocated at run time: "
                       "no record of its own"}
                      for a in lockmap.attributions(rep, families) if a.id]
        out.append({"kind": rep.kind, "title": rep.title, "task": rep.task,
                    "line": rep.line, "locks": locks,
                    **({"blocker": rep.blocker} if rep.blocker else {})})
    return out


def exercised_items(boot: Boot, index: lockmap.SemIndex, sems: dict,
                    records: dict[str, SemRuntime], reported: set[str]) -> list[dict]:
    """The semaphores whose lock classes ran (lockdep-class lines) and no report names."""
    ex = runtime_records.exercised(boot, index)
    return [{**_lock_item(ex[sid].name, sid, "lockdep class", sems, records, boot.name),
             "ops": ex[sid].ops} for sid in sorted(ex) if sid not in reported]


def triage(text: str, audit: dict, name: str, variant: str, marked: frozenset[str],
           marks: list[str], built: set[str] | None, scenario: str = "",
           links: TreeLinks | None = None, file_line=None, patch: str = "") -> dict:
    """Everything triage says about one log (pure): the reports read, the semaphores
    that ran without a report, and the runtime record of the boot.  links: what the
    tree adds to the audit (lockdep maps, macro helpers: classify.lockdepmaps);
    file_line: a line of text -> the line of the file (qemu.logstream.Log)."""
    sems = {s["id"]: s for s in audit["semaphores"]}
    index = lockmap.build_index(audit["semaphores"], links)
    boot = runrecord.log_boot(name, variant, marked, text, scenario)
    for rep in boot.reports if file_line else ():
        rep.line = file_line(rep.line)
    if built is None:           # unknown: whatever the log does not show is not-exercised
        built = {f for files in index.files.values() for f in files}
    record = runtime_records.runtime_record(
        audit, audit.get("kernel_version", "?"), marks, [boot], built,
        runrecord.variant_records([Variant(variant, marked=marked,
                                           patch=Path(patch) if patch else None)]),
        "+".join(runtime.FRAGMENTS))
    reports = report_items(boot, index, sems, record.semaphores, audit.get("allocated"))
    reported = {lk["id"] for r in reports for lk in r["locks"] if lk["id"]}
    return {"boot": name, "variant": variant, "verdict": boot.verdict,
            "lockdep_classes": len(boot.classes), "reports": reports,
            "exercised": exercised_items(boot, index, sems, record.semaphores, reported),
            "allocated": allocated_items(boot, audit.get("allocated", [])),
            "record": record}


def allocated_items(boot: Boot, families: list[dict]) -> list[dict]:
    """The semaphores allocated at run time (classify.allocated) whose class ran: they
    have no runtime record (not one of the audit's declared semaphores), only a name."""
    ran = runtime_records.exercised(boot, lockmap.build_index(families))
    cls = {f["id"]: f["class"] for f in families}
    return [{"lock_class": ran[fid].name, "id": fid, "by": "lockdep class",
             "link": f"lockdep class {ran[fid].name}", "class": cls[fid], "ops": ran[fid].ops,
             "reading": "marked struct arch_semaphore by the series (0004)"
             if cls[fid] == "counting" else "a debug mutex under DEBUG_MUTEX_FULL"}
            for fid in sorted(ran)]


def _lock_line(lk: dict) -> str:
    what = lk["lock_class"] or f"(by {lk['by']})"
    sem = f"{lk['id']} [{lk['class']}]" if lk["id"] else "no semaphore"
    extra = f", OPS {lk['ops']}" if "ops" in lk else ""
    link = f"\n       link: {lk['link']}" if lk.get("link") and not lk["lock_class"] else ""
    return f"     {what} -> {sem}{extra}: {lk['reading']}{link}"


def _shown(path: Path) -> str:
    """A path as a person gave it, or relative to the working directory."""
    try:
        return str(path.resolve().relative_to(Path.cwd())) if path.is_absolute() else str(path)
    except ValueError:
        return str(path)


def render(result: dict, log_path: Path, audit_path: Path) -> str:
    """The text for a person."""
    out = [f"triage: {log_path}: boot {result['boot']} (variant {result['variant']}), "
           f"verdict {result['verdict']}; audit {_shown(audit_path)}"]
    if result.get("version"):
        out.append(f"note: {result['version']}")
    out.append(f"{len(result['reports'])} report(s)" + (
        f", and {result['repeated']} further report(s) of the same signature as one of "
        "them (under it)" if result.get("repeated") else ""))
    for n, r in enumerate(result["reports"], 1):
        task = f", task {r['task']}" if r["task"] else ""
        out.append(f"  {n}. {r['kind']}: {r['title']} (line {r['line']}{task})")
        if r.get("blocker"):
            out.append(f"     blocked on a {r['blocker']}")
        out += [_lock_line(lk) for lk in r["locks"]] or ["     no lock class named"]
        if r.get("repeats"):
            out.append(_repeats_line(r["repeats"]))
    if not result["lockdep_classes"]:
        out.append("no \"# lockdep-class:\" lines: which semaphores ran without a report "
                   "is not known")
    else:
        out.append(f"ran without a report ({result['lockdep_classes']} lockdep classes "
                   "listed):")
        out += [_lock_line(lk) for lk in result["exercised"]] or ["     none of the audit"]
        if result["allocated"]:
            out.append("allocated at run time, no record of their own:")
            out += [_lock_line(lk) for lk in result["allocated"]]
    recs = result["record"].semaphores
    out += [f"record: {sid}: {summary_line(recs[sid])}" for sid in named_ids(result)]
    c = result["record"].counts
    out.append("record: " + ", ".join(f"{k} {c[k]}" for k in STATUSES))
    return "\n".join(out)


SHOWN_REPEATS = 8


def attach_repeats(reports: list[dict], repeats: dict[int, logstream.Repeats]) -> int:
    """Each report's further reports of the same signature (qemu.logstream: in a
    large log, the same text but for times and prefixes, read once), by the line of
    its headline; their number in all."""
    total = 0
    for r in reports:
        if rep := repeats.get(r["line"]):
            r["repeats"] = {"count": rep.count, "lines": rep.lines}
            total += rep.count
    return total


def _repeats_line(rp: dict) -> str:
    listed = rp["lines"][:SHOWN_REPEATS]
    rest = rp["count"] - len(listed)
    more = f", and {rest} more" + (f" (--json lists {len(rp['lines'])})" if len(
        rp["lines"]) > len(listed) else "") if rest else ""
    return (f"     {rp['count']} further report(s) of the same signature (the same text "
            f"but for times and prefixes: the same triage), at line(s) "
            f"{', '.join(map(str, listed))}{more}")


def named_ids(result: dict) -> list[str]:
    return sorted({lk["id"] for r in result["reports"] for lk in r["locks"] if lk["id"]}
                  | {lk["id"] for lk in result["exercised"]})


def as_json(result: dict, log_path: Path, audit_path: Path) -> dict:
    """For machines: the reading, and the records of the semaphores the log names (the
    whole record is what --record writes)."""
    record = result["record"]
    return {**{k: v for k, v in result.items() if k != "record"},
            "log": str(log_path), "audit": str(audit_path),
            "counts": record.counts,
            "records": {sid: record.semaphores[sid].to_json() for sid in named_ids(result)}}


# ------------------------------------------------------------------ command line

def add_parser(sub) -> None:
    sp = sub.add_parser("triage", help="read a tester's console log or dmesg: each report, "
                        "the semaphores its lock classes name and what that says about "
                        "the audit's verdict", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("log", type=Path, help="console log or dmesg output")
    sp.add_argument("--audit", type=Path, default=None,
                    help="audit.json (default: reports/linux-<the log's version>/audit.json)")
    sp.add_argument("--json", action="store_true", help="print JSON instead of text")
    sp.add_argument("--record", type=Path, default=None, metavar="OUT",
                    help="write the boot's runtime record (runtime.json format) to OUT")
    sp.add_argument("--variant", default=None,
                    help="series | trust | unmark:<id> | convert:<id> (default: from the log's "
                    "s2m.scenario=, else series)")
    sp.add_argument("--boot", default=None, help="the boot's name in the record "
                    "(default: the runtime scenario, else the log's file name)")
    sp.add_argument("--tree", type=Path, default=None, help="the kernel tree of the audit, "
                    "for the lockdep maps and macro helpers of its semaphores (default: "
                    "work/linux-<version> when it is there)")
    sp.add_argument("--other-version", action="store_true", help="read a log of another "
                    "kernel version than the audit's (it says so) instead of refusing it")
    sp.add_argument("--built", type=Path, default=None, help="O= build directory, or a "
                    "file listing the .c files compiled in (default: every file counts)")


def run(args: argparse.Namespace) -> int:
    try:
        data = getattr(args, "log_data", None) or logstream.read_log(args.log)
    except logstream.LogError as err:
        print(f"triage: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"triage: error: cannot read {args.log}: {err.strerror or err}", file=sys.stderr)
        return 1
    text = data.text
    try:
        apath = args.audit or default_audit(text)
        audit = json.loads(apath.read_text())
    except (OSError, ValueError) as err:
        print(f"triage: error: audit: {err}", file=sys.stderr)
        return 1
    sems = {s["id"]: s for s in audit["semaphores"]}
    name, variant = boot_of(text, args.log.stem)
    scenario = name
    name, variant = args.boot or name, args.variant or variant
    try:
        note = version_note(text, audit, args.other_version)
        marks = trust_marks(sems) if variant != "series" else []
        marked = variant_marked(sems, variant, marks, refused_marks(apath))
    except TriageError as err:
        print(f"triage: error: {err}", file=sys.stderr)
        return 2
    built = read_built(args.built) if args.built else None
    # a conversion patch's boot: the patch the run applied, as its record names it
    ran = run_variants(apath).get(variant)
    patch = (ran.patch or "") if ran else ""
    result = {**triage(text, audit, name, variant, marked, marks, built, scenario,
                       tree_links(args.tree, audit), data.file_line, patch),
              **({"version": note} if note else {})}
    if repeated := attach_repeats(result["reports"], data.repeats):
        result["repeated"] = repeated
    if args.record:
        runtime.save_record(result["record"], args.record)
    if args.json:
        print(json.dumps(as_json(result, args.log, apath), indent=1, sort_keys=True))
    else:
        print(render(result, args.log, apath))
    return 0
