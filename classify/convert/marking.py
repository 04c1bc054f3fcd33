"""The arch_semaphore marking of the counting pool, generated from the audit.

With CONFIG_DEBUG_MUTEX_FULL (kernel-patches 0003) every struct semaphore that is
not declared struct arch_semaphore becomes a debug mutex.  This writes the series'
marking patch (kernel-patches/<major.minor>/0004-…, the series of the
tree's version) from the audit: every semaphore it classes
`counting` (less any --exclude, e.g. for a runtime challenge boot) is marked with
cocci/sem_to_arch.cocci, one semaphore at a time, in a worktree of the kernel with
the series patches before the marking applied; the result is one commit, written
with `git format-patch` under the series' own numbering, author and date, so the
same audit always gives the same file.

`--check` then compiles, on x86_64 allmodconfig with DEBUG_MUTEX_FULL, every .c file
the marking is about (the marked ones and those using a marked semaphore), without
the marking and with it: with it, each must build (one type per semaphore; a counting
semaphore left a mutex_debug does not build when its count is a constant above 1).
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from classify.convert.message import wrap
from classify.convert.select import PatchError, load_audit
from classify.convert.series import commit_with_message, fresh_worktree
from classify.convert.transform import convert, files_for
from classify.crossbuild import Builds
from classify.paths import REPORTS_DIR, WORK_DIR
from classify.records.audit import AuditData, SemOrFamily
from classify.tree import GIT_ENV, git, git_am
from classify.versions import build_dir_for, series_file as series_of

log = logging.getLogger("sem2mutex.marking")

# the series entry this module writes
MARKING_NAME = "0004-locking-semaphore-Keep-the-counting-semaphores-struc.patch"
SUBJECT = "locking: semaphore: Keep the counting semaphores struct arch_semaphore"
SCRIPT = "sem_to_arch"
# a semaphore allocated at run time: its family of pointers, casts and sizeof
ALLOCATED_SCRIPT = "sem_alloc_to_arch"
# allmodconfig leaves the mutex debugging choice at its default (None)
FULL_OPTIONS = {"CONFIG_DEBUG_MUTEXES": "y", "CONFIG_DEBUG_MUTEX_NONE": "n",
                "CONFIG_DEBUG_MUTEX_PARTIAL": "n", "CONFIG_DEBUG_MUTEX_FULL": "y"}
CHECK_CONFIG = "allmodconfig + DEBUG_MUTEX_FULL: x86_64, or the architecture named"


class MarkingError(PatchError):
    """The marking cannot be written (bad --exclude, series without its entry…)."""


@dataclass
class Mark:
    id: str
    status: str                     # marked | refused | error
    files: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    commit: str = ""                # marked: the commit that marks it, and only it


# ------------------------------------------------------------------ choice

def counting_pool(audit: AuditData, exclude: list[str] = ()) -> list[SemOrFamily]:
    """The semaphores the audit classes counting, declared or allocated at run
    time (classify.allocated), by id, less exclude (each of which must be one of
    them)."""
    pool = sorted((s for s in audit["semaphores"] + audit.get("allocated", [])
                   if s["class"] == "counting"), key=lambda s: s["id"])
    ids = {s["id"] for s in pool}
    stray = [i for i in exclude if i not in ids]
    if stray:
        raise MarkingError("not in the counting pool, cannot be excluded: "
                           + ", ".join(stray))
    return [s for s in pool if s["id"] not in set(exclude)]


def series_entries(series_file: Path) -> list[str]:
    return [ln.split()[0] for ln in series_file.read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def place_in_series(entries: list[str]) -> tuple[list[str], int, int]:
    """(the patches before the marking, its number, the series length)."""
    if MARKING_NAME not in entries:
        raise MarkingError(f"the series has no {MARKING_NAME}")
    i = entries.index(MARKING_NAME)
    return entries[:i], i + 1, len(entries)


def patch_date(patch: Path) -> str:
    """The Date: of a patch file: the marking takes the one of the patch before it,
    so that its own date (and so the file) does not change from run to run."""
    m = re.search(r"^Date: (.+)$", patch.read_text(), re.M)
    if not m:
        raise MarkingError(f"{patch}: no Date: header")
    return m.group(1).strip()


# ------------------------------------------------------------------ message

def declared_at(sem: SemOrFamily) -> str:
    d = sem["declared"]
    return f"{d['path']}:{d['line']}"


def short_name(sem: SemOrFamily) -> str:
    name = sem["id"].rsplit(":", 1)[-1]
    if allocated(sem):
        pointer, _, func = name.lstrip("*").partition("@")
        return f"the semaphores {func}() allocates" if func else \
            f"the semaphores allocated into {pointer}"
    return name


def allocated(sem: SemOrFamily) -> bool:
    return sem["declared"]["kind"] == "allocated"


def commit_message(marks: list[Mark], sems: dict[str, SemOrFamily], version: str,
                   excluded: list[str], unknown: int, unknown_allocated: int = 0) -> str:
    marked = [m for m in marks if m.status == "marked"]
    lines = wrap(
        "With CONFIG_DEBUG_MUTEX_FULL every struct semaphore becomes a mutex. "
        "Declare as struct arch_semaphore the semaphores that are not mutexes, so "
        "that they stay counting semaphores.") + [""]
    lines += wrap(
        f"This marking is generated by sem2mutex (cocci/sem_to_arch.cocci) from its "
        f"audit of Linux {version}: the {len(marked)} semaphores it classes as "
        "counting, each with the audit's reason (file:line of the declaration, or "
        "of the sema_init() of one allocated at run time). "
        "Only declarations change, and the local pointers that hold a marked "
        "semaphore's address; a semaphore allocated at run time has no declaration: "
        "the struct semaphore of the functions that allocate and use it changes "
        "(pointers, casts, sizeof; cocci/sem_alloc_to_arch.cocci).") + [""]
    for m in marked:
        sem = sems[m.id]
        reason = (sem.get("reasons") or ["classed counting"])[0]
        lines += wrap(f"{short_name(sem)} ({declared_at(sem)}): {reason}",
                         indent="- ")
    not_marked = [m for m in marks if m.status != "marked"]
    if not_marked or excluded:
        lines += [""] + wrap("Not marked here, though classed counting:")
        for m in not_marked:
            lines += wrap(f"{m.id}: {'; '.join(m.why)}", indent="- ")
        for i in excluded:
            lines += wrap(f"{i}: left out on request (--exclude)", indent="- ")
    also = (f" (and {unknown_allocated} allocated at run time)"
            if unknown_allocated else "")
    lines += [""] + wrap(
        f"The {unknown} semaphores the audit could not class{also} are not marked: under "
        "CONFIG_DEBUG_MUTEX_FULL they become debug mutexes, which is how a boot "
        "test checks them.") + [""]
    lines += ["No change unless CONFIG_DEBUG_MUTEX_FULL=y."]
    return SUBJECT + "\n\n" + "\n".join(lines) + "\n"


# ------------------------------------------------------------------ marking

def prepare_tree(kernel: Path, worktree: Path, before: list[Path]) -> Path:
    """A worktree of kernel at its HEAD with the series patches before the marking."""
    tree = fresh_worktree(kernel, worktree)
    for patch in before:
        why = git_am(tree, patch)
        if why:
            raise MarkingError(f"{patch.name} does not apply to {kernel}: {why}")
    return tree


def refusal(sem: SemOrFamily) -> str:
    """Why the script cannot mark sem, known before it runs ("" when it can)."""
    through = [f for f in sem.get("followed", []) if f["kind"] != "local"]
    if through:
        # its address sits in a struct semaphore * member or parameter of other
        # code (hp_sdc's act.semaphore), which the script does not change; local
        # pointers it follows itself
        f = through[0]
        return (f"{f['at']}: its address is stored in the {f['kind']} pointer "
                f"{f['pointer']}, which would have to become a struct arch_semaphore * "
                "too; mark them together by hand")
    if sem.get("conflicts"):
        # a semaphore allocated at run time whose functions hold others too
        return (f"{sem['conflicts'][0]}: the types of its functions cannot all "
                "change; mark it by hand")
    return ""


def mark_all(tree: Path, pool: list[SemOrFamily]) -> list[Mark]:
    """Mark each semaphore in turn; each one's change is committed on its own, so
    that a refusal (which resets the worktree) loses no other."""
    marks = []
    for n, sem in enumerate(pool, 1):
        why = refusal(sem)
        if why:
            marks.append(Mark(sem["id"], "refused", [], [why]))
            log.warning("%s not marked: %s", sem["id"], why)
            continue
        files = files_for(sem, tree)
        conv = convert(tree, sem, files,
                       script=ALLOCATED_SCRIPT if allocated(sem) else SCRIPT,
                       must_change=[sem["declared"]["path"]])
        if conv.refusals or conv.errors:
            status = "refused" if conv.refusals else "error"
            marks.append(Mark(sem["id"], status, [], conv.refusals + conv.errors))
            log.warning("%s not marked: %s", sem["id"], "; ".join(marks[-1].why))
            continue
        git(tree, "add", "-u", "--", *conv.changed)
        git(tree, "commit", "-q", "--no-verify", "-m", f"mark {sem['id']}", env=GIT_ENV)
        marks.append(Mark(sem["id"], "marked", conv.changed,
                          commit=git(tree, "rev-parse", "HEAD").strip()))
        log.info("[%d/%d] marked %s (%s)", n, len(pool), sem["id"],
                 ", ".join(conv.changed))
    return marks


def mark_commits(tree: Path, sems: list[SemOrFamily]) -> dict[str, Mark]:
    """Each of sems marked in turn on top of tree's HEAD, one commit each (made with
    the fixed identity and date of GIT_ENV, so the same tree and audit give the same
    commits): id -> its Mark, with the commit that marks it (whose `git revert` is the
    exact inverse, the pointers that follow it included), or the refusal or error
    (status, why) and no commit."""
    return {m.id: m for m in mark_all(tree, sems)}


def write_patch(tree: Path, base: str, message: str, number: int, total: int,
                date: str, out: Path) -> Path:
    """Squash the per-semaphore commits into one and write it as patch number/total."""
    env = {**GIT_ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    git(tree, "reset", "-q", "--soft", base)
    signoff = f"{GIT_ENV['GIT_AUTHOR_NAME']} <{GIT_ENV['GIT_AUTHOR_EMAIL']}>"
    commit_with_message(tree, f"{message}\nSigned-off-by: {signoff}\n", env)
    text = git(tree, "format-patch", "-1", "--stdout", "--zero-commit",
               f"--subject-prefix=PATCH {number}/{total}", "HEAD", env=env)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


@dataclass
class Marking:
    patch: Path
    marks: list[Mark]
    files: list[str]            # the .c files a FULL build must compile
    elapsed: float


def c_files(tree: Path, pool: list[SemOrFamily], marks: list[Mark]) -> list[str]:
    """Every .c file a marked semaphore is declared or used in."""
    by_id = {s["id"]: s for s in pool}
    files = {f for m in marks if m.status == "marked"
             for f in files_for(by_id[m.id], tree) if f.endswith(".c")}
    return sorted(files)


def generate(kernel: Path, audit: AuditData, out: Path, worktree: Path,
             exclude: list[str] = (), series_file: Path | None = None) -> Marking:
    """series_file: default the series of kernel's version."""
    started = time.monotonic()
    series_file = series_file or series_of(kernel)
    pool = counting_pool(audit, list(exclude))
    before, number, total = place_in_series(series_entries(series_file))
    before_paths = [series_file.parent / b for b in before]
    tree = prepare_tree(kernel, worktree, before_paths)
    base = git(tree, "rev-parse", "HEAD").strip()
    marks = mark_all(tree, pool)
    if not any(m.status == "marked" for m in marks):
        raise MarkingError("no semaphore could be marked")
    unknown = [sum(1 for s in audit.get(key, []) if s["class"] == "unknown")
               for key in ("semaphores", "allocated")]
    message = commit_message(marks, {s["id"]: s for s in pool},
                             audit.get("kernel_version", "?"), list(exclude), *unknown)
    date = patch_date(before_paths[-1]) if before_paths else "@0 +0000"
    patch = write_patch(tree, base, message, number, total, date, out)
    return Marking(patch, marks, c_files(tree, pool, marks), time.monotonic() - started)


# ------------------------------------------------------------------ check

def check_full(kernel: Path, worktree: Path, build_dir: Path, marking: Path,
               files: list[str], series_file: Path | None = None) -> dict:
    """Compile files on allmodconfig + DEBUG_MUTEX_FULL with the series, without
    the marking (before) and with it (after): on x86_64, or, for a file x86_64
    leaves out, on the architecture that builds it (classify.crossbuild); a file
    none builds is compiled on x86_64 all the same (a type error shows even in a
    file the configuration leaves out) and keeps the reasons."""
    series_file = series_file or series_of(kernel)
    entries = series_entries(series_file)
    without = [series_file.parent / e for e in entries if e != MARKING_NAME]
    tree = prepare_tree(kernel, worktree, without)
    builds = Builds(tree, build_dir, FULL_OPTIONS)
    builds.native()
    record: dict = {"config": CHECK_CONFIG, "files": {}}
    for kind in ("before", "after"):
        if kind == "after":
            why = git_am(tree, marking)
            if why:
                raise MarkingError(f"{marking.name} does not apply after the series: {why}")
        got = builds.compile(files, WORK_DIR / "marking-check" / f"{kind}.log",
                             sparse=False, unplaced_native=True)
        for n, rel in enumerate(files, 1):
            c = got[rel]
            log.info("[%s %d/%d] %s: %s on %s", kind, n, len(files), rel, c.status, c.arch)
            place = builds.place(rel)
            record["files"].setdefault(rel, {})[kind] = {
                "status": c.status, "why": c.why or place.why, "errors": c.errors[:5],
                "arch": c.arch}
    record["prepare_seconds"] = builds.seconds
    return record


def check_verdict(record: dict) -> tuple[list[str], list[str]]:
    """(broken, unbuildable): the files the marking breaks (they build without it,
    not with it: empty when the check passed), and those that build neither way
    here (another architecture's headers, a driver of a config it does not set)."""
    broken, unbuildable = [], []
    for rel, r in sorted(record["files"].items()):
        if r.get("after", {}).get("status") != "failed":
            continue
        (unbuildable if r.get("before", {}).get("status") == "failed" else broken).append(rel)
    return broken, unbuildable


# ------------------------------------------------------------------ command

def _generate(args, tree, work: Path) -> dict:
    """Write the marking patch; its record (what marking.json keeps)."""
    audit_path = args.audit or (REPORTS_DIR / f"linux-{tree.version}" / "audit.json")
    audit = load_audit(audit_path)
    out = args.out or (series_of(tree.path).parent / MARKING_NAME)
    m = generate(args.kernel, audit, out, work / "trees" / "marking", args.exclude)
    marked = [x for x in m.marks if x.status == "marked"]
    print(f"marking: {len(marked)} of {len(m.marks)} counting semaphores marked in "
          f"{m.elapsed:.0f} s; wrote {m.patch}")
    for x in m.marks:
        if x.status != "marked":
            print(f"marking: {x.id} not marked ({x.status}): {'; '.join(x.why)}")
    return {"patch": m.patch.name, "kernel_version": tree.version,
            "marked": [x.id for x in marked],
            "not_marked": {x.id: x.why for x in m.marks if x.status != "marked"},
            "excluded": sorted(args.exclude), "files": m.files}


def _last_record(args, dest: Path, series: Path | None = None, version: str = "") -> dict:
    """--check-only: the record of the last `make marking` (its files) and the
    patch it wrote (in series, the tree's series directory).  The record is one
    for all trees: one made for another version (`make marking TREE=6.12` before
    a 6.1 check) names another tree's files, and is refused."""
    try:
        record = json.loads(dest.read_text())
    except (OSError, json.JSONDecodeError):
        raise MarkingError(f"{dest}: no marking record: run `make marking` first") from None
    if version and record.get("kernel_version") != version:
        made = record.get("kernel_version") or "an unrecorded version"
        raise MarkingError(f"{dest}: the last marking was made for Linux {made}, not "
                           f"{version}: run `make marking` on this tree first")
    patch = args.out or ((series or Path(".")) / record.get("patch", MARKING_NAME))
    if not patch.is_file():
        raise MarkingError(f"{patch}: no such marking patch")
    return {**record, "patch_path": str(patch)}


def print_check(check: dict, seconds: float) -> list[str]:
    """The check's summary lines; returns the files the marking breaks."""
    files = check["files"]
    bad, unbuildable = check_verdict(check)
    fixed = [rel for rel, r in files.items()
             if r["before"]["status"] == "failed" and r["after"]["status"] == "ok"]
    built = [rel for rel, r in files.items() if r["after"]["status"] == "ok"]
    print(f"marking: DEBUG_MUTEX_FULL allmodconfig: {len(built)} of {len(files)} "
          f"files build with the marking, {len(fixed)} of them only with it; "
          f"{len(bad)} broken by it; {len(unbuildable)} build neither way here; "
          f"{seconds:.0f} s")
    for rel in bad:
        print(f"marking: {rel} builds without the marking, not with it: "
              + " | ".join(files[rel]["after"]["errors"][:2]))
    for rel, r in sorted(files.items()):
        if r["after"]["arch"] != "x86_64":
            print(f"marking: {rel}: {r['after']['status']} on {r['after']['arch']} "
                  f"(before: {r['before']['status']})")
    for rel in unbuildable:
        said = files[rel]["after"]["errors"][:1] + [files[rel]["after"]["why"]]
        print(f"marking: {rel} does not build here, with or without the marking: "
              + "; ".join(x for x in said if x))
    for rel, r in sorted(files.items()):
        if r["after"]["status"] == "not built":
            print(f"marking: {rel} not built here: {r['after']['why']}")
    return bad


def run_marking(args) -> int:
    from classify.tree import check_kernel_tree
    tree = check_kernel_tree(args.kernel)
    work = WORK_DIR
    dest = work / "marking.json"
    if getattr(args, "check_only", False):
        record = _last_record(args, dest, series_of(tree.path).parent, tree.version)
        patch = Path(record.pop("patch_path"))
    else:
        record = _generate(args, tree, work)
        patch = args.out or (series_of(tree.path).parent / MARKING_NAME)
    status = 0
    if args.check or getattr(args, "check_only", False):
        started = time.monotonic()
        record["check"] = check_full(args.kernel, work / "trees" / "marking-check",
                                     args.build_dir or build_dir_for(
                                         "allmodconfig-full", tree.version),
                                     patch, record["files"])
        status = 1 if print_check(record["check"], time.monotonic() - started) else 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"marking: wrote {dest}")
    return status
