"""Conversion patches: the audit's mutex and completion pools as `git format-patch` series.

``python3 -m classify patches --kernel K [--subsys PREFIX] [--id ID]``:

1. select: the semaphores of the audit of K (its audit.json) whose declaration lies
   under PREFIX, or whose id is ID; each one not classed mutex/completion, and each
   unknown id, is skipped with the reason;
2. convert: in a git worktree of K under the work area (never K itself), run
   cocci/sem_to_mutex.cocci or cocci/sem_to_completion.cocci with ``-D sem=ID`` on
   every file the census ties to the semaphore (its declaration, incl. a header, its
   ``extern`` declarations, the files with its operations); all or nothing per
   semaphore: one refused file, or a file with its operations left unchanged,
   refuses the whole semaphore and the worktree is reset;
3. commit: one commit per semaphore, the message saying why (the audit's reasons and
   file:line evidence) and what a reviewer should look at;
4. series: ``git format-patch --cover-letter`` per subsystem (the audit's subsystem,
   e.g. drivers/net) into work/patches/<slug>/, addressed with get_maintainer.pl.

Subject prefixes: the pristine tree has no history, so the prefix is derived from
the path of the converted .c files (see ``subject_prefix``): the subsystem's label
(``net``, ``scsi``, ``usb: gadget``, ``xen``, ``wifi``, ``RDMA/…``,
``platform/x86/…``; a directory of drivers/char names its own subsystem) then the
component: the common directory of several files, the directory of one file named
after it (hinic/hinic_hw_wq.c -> hinic), else the file's name (micrel/ksz884x.c ->
ksz884x); a component equal to the label is said once.  Examples: "net: ksz884x: ",
"net: hinic: ", "scsi: esas2r: ", "xen: pvcalls-back: ", "RDMA/hns: ", "parport: ".
It is a heuristic: a maintainer with a different habit edits the subject.

Determinism: the worktree starts from the same base, spatch and git are run in a
fixed order, patches carry a zero commit hash (``--zero-commit``) and a fixed
signature; only the Date: lines differ between two runs (and not even those with
SOURCE_DATE_EPOCH set).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import textwrap
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from .tree import GIT_ENV, TreeError, git, make_worktree

log = logging.getLogger("sem2mutex.patches")

REPO = Path(__file__).resolve().parent.parent
COCCI_DIR = REPO / "cocci"
SCRIPTS = {"mutex": "sem_to_mutex", "completion": "sem_to_completion"}
SIGNATURE = "sem2mutex"
_REFUSAL = re.compile(r"^(sem_to_\w+): (?:(\S+?):(\d+): )?(semaphore .* not (?:converted|marked): .*)$")


class PatchError(Exception):
    """Bad arguments or a missing input: nothing can be done."""


@dataclass
class Outcome:
    """What became of one selected (or asked-for) semaphore."""
    id: str
    status: str                 # converted | refused | skipped
    why: list[str] = field(default_factory=list)
    cls: str = ""
    series: str = ""            # slug of work/patches/<slug>
    patch: str = ""             # file name of its patch in the series
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"id": self.id, "status": self.status, "why": self.why, "class": self.cls,
                "series": self.series, "patch": self.patch, "files": self.files}


# ------------------------------------------------------------------ selection

def in_prefix(path: str, prefix: str) -> bool:
    """path lies under the directory (or is the file) prefix names."""
    prefix = prefix.strip().rstrip("/")
    return not prefix or prefix == "." or path == prefix or path.startswith(prefix + "/")


def sem_paths(sem: dict) -> list[str]:
    """The declaration's file and the files of its operations."""
    return sorted({sem["declared"]["path"]} | {o["path"] for o in sem.get("ops", [])} |
                  {i["path"] for i in sem.get("init", [])})


def under(sem: dict, prefix: str) -> bool:
    """sem belongs to the subsystem at prefix: declared there, or used there (a
    member declared in include/linux/parport.h belongs to drivers/parport too)."""
    return any(in_prefix(p, prefix) for p in sem_paths(sem))


def series_subsystem(sem: dict) -> str:
    """The subsystem whose series a semaphore's patch goes to: the audit's, except
    for a declaration in a shared header, which goes with the code using it."""
    from .census import subsystem
    if sem["declared"]["path"].startswith(("include/", "arch/")):
        users = sorted({p for p in sem_paths(sem) if p.endswith(".c")})
        if users:
            return subsystem(users[0])
    return sem["subsystem"]


def select(sems: list[dict], subsys: str | None, ids: list[str]
           ) -> tuple[list[dict], list[Outcome]]:
    """The convertible semaphores chosen by SUBSYS and/or ID, and the skipped ones.

    No SUBSYS and no ID chooses every semaphore; with both, either chooses.
    """
    by_id = {s["id"]: s for s in sems}
    skipped = [Outcome(i, "skipped", ["no semaphore with this id in the audit"])
               for i in ids if i not in by_id]
    chosen = []
    for s in sorted(sems, key=lambda s: s["id"]):
        by_path = subsys is not None and under(s, subsys)
        if not (by_path or s["id"] in ids or (subsys is None and not ids)):
            continue
        if s["class"] not in SCRIPTS:
            if s["id"] in ids:   # asked for by name: say why not
                skipped.append(Outcome(s["id"], "skipped", [
                    f"classed {s['class']}, only mutex and completion are converted"],
                    cls=s["class"]))
            continue
        chosen.append(s)
    if subsys is not None and not any(under(s, subsys) for s in chosen):
        there = [s for s in sems if under(s, subsys)]
        why = (f"{len(there)} semaphore(s) there, none classed mutex or completion"
               if there else "no semaphore is declared or used there")
        skipped.append(Outcome(f"SUBSYS={subsys}", "skipped", [why]))
    return chosen, skipped


def slug(subsystem: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", subsystem).strip("-") or "top"


# ------------------------------------------------------------------ subject

# the first directory under drivers/ (or the top) -> the label its maintainers use
_LABELS = {"infiniband": "RDMA", "net": "net", "gpu": "drm", "md": "md", "mmc": "mmc",
           "ata": "ata", "block": "block", "hid": "HID", "input": "Input",
           "media": "media", "mtd": "mtd", "scsi": "scsi", "target": "scsi: target",
           "tty": "tty", "usb": "usb", "xen": "xen", "staging": "staging",
           "platform": "platform", "sound": "ALSA", "fs": "fs"}
# directories that only gather unrelated drivers: the next directory is the subsystem
_GATHER = {"char", "misc"}


def _component(paths: list[str]) -> str:
    """The driver: the deepest common directory of several files; for one file,
    its directory when the file is named after it (hinic/hinic_hw_wq.c,
    esas2r/esas2r_ioctl.c: a driver of several files), else the file's own name
    (micrel/ksz884x.c, xen/pvcalls-back.c: one driver among others)."""
    if len(set(paths)) > 1:
        return Path(os.path.commonpath(paths)).name
    path = Path(paths[0])
    if path.parent.name and path.parent.name.replace("-", "_") in path.stem.replace("-", "_"):
        return path.parent.name
    return path.stem


def subject_prefix(paths: list[str]) -> str:
    """"net: ksz884x: " for drivers/net/ethernet/micrel/ksz884x.c, and so on.

    paths: the .c files a patch touches (or all its files when it touches none).
    """
    paths = sorted(set(paths))
    common = os.path.commonpath(paths) if len(paths) > 1 else str(Path(paths[0]).parent)
    parts = common.split("/")
    if parts[0] == "drivers" and len(parts) > 1:
        parts = parts[1:]
    elif parts[0] in ("include", "arch") and len(parts) > 2:
        parts = parts[1:]
    top, rest = parts[0], parts[1:]
    comp = _component(paths)
    if top in _GATHER and rest:
        top, rest = rest[0], rest[1:]
    if top == "infiniband":
        return f"RDMA/{comp}: " if comp != top else "RDMA: "
    if top == "platform":
        return "platform/" + "/".join(rest + ([comp] if comp not in rest else [])) + ": "
    if top == "net" and rest[:1] == ["wireless"]:
        label = "wifi"
    else:
        label = _LABELS.get(top, top)
    if top == "usb" and rest[:1] == ["gadget"]:
        label = "usb: gadget"
    if comp in (top, *label.split(": ")) and len(paths) == 1:
        comp = Path(paths[0]).stem     # a driver named after its subsystem's directory
    if comp in (top, *label.split(": ")):
        return f"{label}: "
    return f"{label}: {comp}: "


def summary(sem: dict) -> str:
    name = sem["id"].rsplit(":", 1)[-1].split(".")[-1].split("@")[0]
    what = {"mutex": "a mutex", "completion": "a completion"}[sem["class"]]
    return f"convert {name} from a semaphore to {what}"


# ------------------------------------------------------------------ files

def cocci_id(sem: dict) -> str:
    """The -D sem= argument: a member is recognised by its struct type and a global
    is used through `extern` in other files, so both go without their path; a
    static or a local keeps it."""
    sid = sem["id"]
    if sem["declared"]["kind"] in ("member", "global"):
        return sid.rsplit(":", 1)[-1]
    return sid


def extern_files(tree: Path, name: str) -> list[str]:
    """Files declaring `extern struct semaphore name;` (the census does not tie
    them to the semaphore, yet they must change with it)."""
    res = subprocess.run(["git", "-C", str(tree), "grep", "-l", "-P",
                          rf"extern\s+struct\s+semaphore\s+{re.escape(name)}\s*;", "--",
                          "*.h", "*.c"], capture_output=True, text=True)
    return sorted(res.stdout.split()) if res.returncode == 0 else []


def files_for(sem: dict, tree: Path | None = None) -> list[str]:
    """Every file the conversion of sem must touch, sorted."""
    files = {sem["declared"]["path"]}
    files |= {o["path"] for o in sem.get("ops", [])}
    files |= {i["path"] for i in sem.get("init", [])}
    if tree is not None and sem["declared"]["kind"] == "global":
        files |= set(extern_files(tree, sem["declared"].get("name")
                                  or sem["id"].rsplit(":", 1)[-1]))
    return sorted(files)


# ------------------------------------------------------------------ convert

@dataclass
class Conversion:
    changed: list[str]
    refusals: list[str]
    errors: list[str]


def parse_refusals(stderr: str, tree: Path | None = None) -> list[str]:
    """The "semaphore X not converted: why" lines patch mode writes on stderr,
    as "path:line: why" (spatch's temporary copies named back to the file)."""
    out = []
    for line in stderr.splitlines():
        m = _REFUSAL.match(line.strip())
        if not m:
            continue
        path = re.sub(r"^.*/cocci_small_output-\d+-[0-9a-f]+-", "", m.group(2) or "")
        if tree is not None and path.startswith(str(tree) + "/"):
            path = path[len(str(tree)) + 1:]
        out.append(f"{path}:{m.group(3)}: {m.group(4)}" if path else m.group(4))
    return out


# A member reached through another struct declared in a header (hr_dev->cmd.poll_sem,
# struct hns_roce_dev in hns_roce_device.h) has no type spatch can infer with
# --no-includes: such a file is tried again with its local headers read for types,
# then with the kernel's include directories too (port->physport->ieee1284, struct
# parport in include/linux/parport.h).  Headers are only read for types, never changed.
NO_INCLUDES = ["--no-includes", "--include-headers"]
TYPE_HEADERS = [["--local-includes", "--include-headers-for-types"],
                ["--all-includes", "--include-headers-for-types", "-I", "include",
                 "-I", "arch/x86/include", "-I", "include/uapi",
                 "-I", "arch/x86/include/uapi"]]
NO_TYPE = "cannot infer the type"


def run_spatch(tree: Path, script: str, sem_arg: str, rel: str, timeout: float = 300.0,
               includes: list[str] = NO_INCLUDES) -> subprocess.CompletedProcess:
    cmd = ["spatch", "--very-quiet", *includes, "-D", "patch",
           "-D", f"sem={sem_arg}", "--sp-file", str(COCCI_DIR / f"{script}.cocci"),
           "--in-place", rel]
    env = {k: v for k, v in os.environ.items() if k not in ("SEM2MUTEX_SEM",
                                                             "SEM2MUTEX_NAMES")}
    return subprocess.run(cmd, cwd=tree, capture_output=True, text=True,
                          timeout=timeout, env=env)


def changed_files(tree: Path) -> list[str]:
    return sorted(git(tree, "diff", "--name-only").split())


def convert(tree: Path, sem: dict, files: list[str], script: str | None = None,
            must_change: list[str] | None = None) -> Conversion:
    """Run the semaphore's script (by default the one of its class) on each of its
    files; all or nothing: on any refusal or error, the worktree is reset and
    nothing of it stays.  Each file of must_change (by default: those holding its
    operations) must have been changed."""
    script = script or SCRIPTS[sem["class"]]
    refusals: list[str] = []
    errors: list[str] = []
    for rel in files:
        if not (tree / rel).is_file():
            errors.append(f"{rel}: not in the tree")
            continue
        try:
            res = run_spatch(tree, script, cocci_id(sem), rel)
            refused = parse_refusals(res.stderr, tree)
            for includes in TYPE_HEADERS:
                if not (refused and rel.endswith(".c")
                        and all(NO_TYPE in r for r in refused)):
                    break
                git(tree, "checkout", "-q", "--", rel)
                res = run_spatch(tree, script, cocci_id(sem), rel, includes=includes)
                refused = parse_refusals(res.stderr, tree)
        except subprocess.TimeoutExpired:
            errors.append(f"{rel}: spatch timed out")
            continue
        refusals += refused
        if res.returncode != 0:
            errors.append(f"{rel}: spatch failed: "
                          + " | ".join(res.stderr.strip().splitlines()[-2:]))
    changed = changed_files(tree)
    if must_change is None:
        must_change = sorted({o["path"] for o in sem.get("ops", [])} |
                             {i["path"] for i in sem.get("init", [])})
    if not refusals and not errors:
        for rel in must_change:
            if rel not in changed:
                errors.append(f"{rel}: the script left it unchanged (a declaration or "
                              "function spatch could not parse?)")
    if refusals or errors:
        git(tree, "checkout", "-q", "--", ".")
        changed = []
    return Conversion(changed, refusals, errors)


# ------------------------------------------------------------------ message

def _ops_named(sem: dict) -> set[str]:
    return {o["op"] for o in sem.get("ops", [])}


def risks(sem: dict) -> list[str]:
    """What a reviewer should look at, from the operations the semaphore has."""
    ops = _ops_named(sem)
    out = []
    if sem["class"] == "mutex":
        out.append("A mutex must be released by the task that took it, never from "
                   "interrupt context. The audit found every up() in the function that "
                   "took the semaphore and none in atomic context; that proof covers "
                   "this source only, not callers reached through function pointers.")
        if ops & {"down_interruptible", "down_killable"}:
            out.append("mutex_lock_interruptible() and mutex_lock_killable() return "
                       "-EINTR like down_interruptible() and down_killable(): the "
                       "values passed on are unchanged.")
        if "down_trylock" in ops:
            out.append("down_trylock() returns 0 on success, mutex_trylock() 1: the "
                       "tests are inverted, check each one.")
        out.append("A mutex may not be taken recursively, nor freed while held "
                   "(CONFIG_DEBUG_MUTEXES and lockdep now check both).")
    else:
        out.append("A completion counts complete() calls as the semaphore counted up() "
                   "calls, so a signal sent before the wait is not lost.")
        if ops & {"down_interruptible", "down_killable"}:
            out.append("wait_for_completion_interruptible()/_killable() return "
                       "-ERESTARTSYS where down_interruptible()/down_killable() "
                       "returned -EINTR: where the value is passed on, the patch keeps "
                       "-EINTR explicitly; switching to -ERESTARTSYS is left to the "
                       "maintainer.")
        if "down_timeout" in ops:
            out.append("wait_for_completion_timeout() returns 0 on timeout, "
                       "down_timeout() 0 on success: the tests are inverted.")
        if "down_trylock" in ops:
            out.append("down_trylock() returns 0 on success, try_wait_for_completion() "
                       "true: the tests are inverted.")
        if len(sem.get("init", [])) > 1:
            out.append("The semaphore is initialised more than once: check that each "
                       "init_completion() runs while nobody waits.")
    if sem["declared"]["path"].endswith(".h"):
        out.append(f"The declaration is in {sem['declared']['path']}: only the files "
                   "the audit ties to the semaphore were converted and compiled.")
    return out


def _wrap(text: str, indent: str = "", width: int = 72) -> list[str]:
    """text as lines of at most width columns; a "- " indent hangs."""
    return textwrap.wrap(" ".join(text.split()), width, initial_indent=indent,
                         subsequent_indent=" " * len(indent), break_long_words=False,
                         break_on_hyphens=False)


def commit_message(sem: dict, prefix: str, version: str, signoff: str) -> str:
    d = sem["declared"]
    name = sem["id"].rsplit(":", 1)[-1]
    where = (f"struct {d['struct']} member {name.split('.')[-1]}" if d["kind"] == "member"
             else f"{d['kind']} {name.split('@')[0]}")
    target = {"mutex": "a mutex", "completion": "a completion"}[sem["class"]]
    body = _wrap(f"The semaphore {where} ({d['path']}:{d['line']}) is used as {target}:")
    body += [line for r in sem["reasons"] for line in _wrap(r, "- ")]
    body += [""]
    body += _wrap(
        {"mutex": "A mutex states that intent: it has an owner, lockdep and "
                  "CONFIG_DEBUG_MUTEXES check how it is used, and it spins "
                  "optimistically instead of sleeping at once.",
         "completion": "A completion states that intent (one side waits for an event "
                       "the other signals) and is what the kernel uses for it; "
                       "struct semaphore is left to real counting uses."}[sem["class"]])
    body += ["", f"Evidence (sem2mutex audit of Linux {version}):"]
    # checkpatch wants commit description lines of at most 75 columns
    body += [line for e in sem["evidence"] for line in _wrap(e, "  ", 75)]
    body += ["", "For the reviewer:"]
    body += [line for r in risks(sem) for line in _wrap(r, "- ")]
    # the short id: the script matches a path by its end, and checkpatch wants
    # lines of at most 75 columns
    short = re.sub(r"^.*/", "", cocci_id(sem))
    body += [""] + _wrap(f"Generated with sem2mutex: spatch --sp-file "
                         f"{SCRIPTS[sem['class']]}.cocci -D patch -D sem={short}")
    body += ["", f"Signed-off-by: {signoff}"]
    return f"{prefix}{summary(sem)}\n\n" + "\n".join(body) + "\n"


def identity(repo: Path = REPO) -> tuple[str, str, bool]:
    """(name, email, from_config): git config user.name/email of this repository,
    else the fixed GIT_ENV identity (from_config False)."""
    def cfg(key: str) -> str:
        res = subprocess.run(["git", "-C", str(repo), "config", key],
                             capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else ""
    name, email = cfg("user.name"), cfg("user.email")
    if name and email:
        return name, email, True
    return GIT_ENV["GIT_AUTHOR_NAME"], GIT_ENV["GIT_AUTHOR_EMAIL"], False


def commit_env(name: str, email: str) -> dict[str, str]:
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
    if os.environ.get("SOURCE_DATE_EPOCH"):
        date = f"@{os.environ['SOURCE_DATE_EPOCH']} +0000"
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


# ------------------------------------------------------------------ series

def maintainers(tree: Path, patch_files: list[Path], me: str = ""
                ) -> tuple[list[str], list[str]]:
    """(To, Cc) from the tree's get_maintainer.pl: people To, mailing lists Cc;
    me (the sender's address, which it finds in the Signed-off-by) left out."""
    script = tree / "scripts" / "get_maintainer.pl"
    if not script.is_file() or not patch_files:
        return [], []
    res = subprocess.run(["perl", str(script), "--no-git", "--no-rolestats",
                          *[str(p) for p in patch_files]],
                         cwd=tree, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        log.warning("get_maintainer.pl failed: %s", res.stderr.strip()[-200:])
        return [], []
    to, cc = split_addresses(res.stdout)
    return ([a for a in to if not me or f"<{me}>" not in a],
            [a for a in cc if not me or a != me])


def split_addresses(output: str) -> tuple[list[str], list[str]]:
    to, cc = [], []
    for line in output.splitlines():
        line = line.strip()
        if not line or "@" not in line:
            continue
        (to if "<" in line else cc).append(line)
    return list(OrderedDict.fromkeys(to)), list(OrderedDict.fromkeys(cc))


def format_patch(tree: Path, base: str, out: Path, to: list[str], cc: list[str],
                 env: dict[str, str] | None = None) -> list[Path]:
    args = ["format-patch", "--cover-letter", "--numbered", "--zero-commit",
            f"--base={base}", f"--signature={SIGNATURE}", "-o", str(out)]
    args += [f"--to={a}" for a in to] + [f"--cc={a}" for a in cc]
    # env: the commits' identity and date, which the cover letter takes too
    return [Path(p) for p in git(tree, *args, f"{base}..HEAD", env=env).split()]


def common_prefix(prefixes: list[str], fallback: str) -> str:
    """The prefix every patch of a series shares ("net: hinic: " and "net: ksz884x: "
    share "net: "), else fallback: the subsystem's path."""
    split = [p.rstrip().rstrip(":").split(": ") for p in prefixes]
    shared: list[str] = []
    for words in zip(*split):
        if len(set(words)) != 1:
            break
        shared.append(words[0])
    return (": ".join(shared) if shared else fallback) + ": "


def cover_text(subsystem: str, outcomes: list[Outcome], version: str,
               prefixes: list[str] | None = None) -> tuple[str, str]:
    """(subject, blurb) of a series' cover letter: the counts, what was refused and why."""
    done = [o for o in outcomes if o.status == "converted"]
    refused = [o for o in outcomes if o.status == "refused"]
    kinds = sorted({o.cls for o in done})
    plural = {"mutex": ("a mutex", "mutexes"), "completion": ("a completion", "completions")}
    subject = (common_prefix(prefixes or [], subsystem)
               + (f"convert {len(done)} semaphores to " if len(done) > 1
                  else "convert a semaphore to ")
               + " and ".join(plural[k][len(done) > 1] for k in kinds))
    lines = _wrap(f"These patches convert the struct semaphores of {subsystem} that the "
                  f"sem2mutex audit of Linux {version} classes as a mutex or a "
                  "completion. Each patch converts one semaphore, says why it is one "
                  "(with file:line evidence) and what to check.")
    lines += ["", f"Converted: {len(done)} "
              f"({sum(o.cls == 'mutex' for o in done)} to a mutex, "
              f"{sum(o.cls == 'completion' for o in done)} to a completion)",
              f"Refused: {len(refused)}"]
    for o in refused:
        lines += _wrap(f"{o.id}: {'; '.join(o.why)}", "- ")
    lines += ["", "Every patch was generated by a semantic patch from sem2mutex and "
              "checked with git am,", "an x86_64 allmodconfig build of the touched "
              "files, sparse (C=2) and", "checkpatch.pl --strict before sending."]
    return subject, "\n".join(lines)


def fill_cover(cover: Path, subject: str, blurb: str) -> None:
    text = cover.read_text()
    text = text.replace("*** SUBJECT HERE ***", subject, 1)
    text = text.replace("*** BLURB HERE ***", blurb, 1)
    cover.write_text(text)


# ------------------------------------------------------------------ run

@dataclass
class Series:
    slug: str
    subsystem: str
    dir: Path
    patches: list[Path]
    outcomes: list[Outcome]


def make_series(kernel: Path, worktree: Path, out_root: Path, subsystem: str,
                sems: list[dict], version: str, signoff: tuple[str, str]
                ) -> Series:
    """Convert sems (one subsystem) one commit each, then format the series."""
    name = slug(subsystem)
    tree = fresh_worktree(kernel, worktree)
    base = git(tree, "rev-parse", "HEAD").strip()
    env = commit_env(*signoff)
    outcomes: list[Outcome] = []
    prefixes: list[str] = []
    for sem in sems:
        files = files_for(sem, tree)
        log.info("%s: converting %s to a %s (%d file(s))", name, sem["id"],
                 sem["class"], len(files))
        conv = convert(tree, sem, files)
        if conv.refusals or conv.errors:
            outcomes.append(Outcome(sem["id"], "refused", conv.refusals + conv.errors,
                                    cls=sem["class"], series=name, files=files))
            continue
        cfiles = [f for f in conv.changed if f.endswith(".c")] or conv.changed
        prefixes.append(subject_prefix(cfiles))
        msg = commit_message(sem, prefixes[-1], version,
                             f"{signoff[0]} <{signoff[1]}>")
        git(tree, "add", "-u", "--", *conv.changed)
        _commit(tree, msg, env)
        outcomes.append(Outcome(sem["id"], "converted", [], cls=sem["class"], series=name,
                                files=conv.changed))
    out = out_root / name
    shutil.rmtree(out, ignore_errors=True)
    patches: list[Path] = []
    if any(o.status == "converted" for o in outcomes):
        out.mkdir(parents=True)
        first = format_patch(tree, base, out, [], [], env)
        to, cc = maintainers(tree, [p for p in first if "0000-" not in p.name], signoff[1])
        shutil.rmtree(out)
        out.mkdir(parents=True)
        patches = format_patch(tree, base, out, to, cc, env)
        subject, blurb = cover_text(subsystem, outcomes, version, prefixes)
        fill_cover(patches[0], subject, blurb)
        numbered = iter(patches[1:])
        for o in outcomes:
            if o.status == "converted":
                o.patch = next(numbered).name
    result = Series(name, subsystem, out, patches, outcomes)
    write_series_index(result)
    return result


def fresh_worktree(kernel: Path, worktree: Path) -> Path:
    """A worktree of kernel at kernel's HEAD.  (make_worktree resets an existing
    worktree to "HEAD" as the worktree sees it, i.e. keeps our earlier commits:
    name the kernel's commit explicitly.)"""
    ref = "HEAD"
    if (Path(kernel) / ".git").exists():
        ref = git(Path(kernel), "rev-parse", "HEAD").strip()
    tree = make_worktree(kernel, worktree, ref)
    git(tree, "checkout", "-q", "--detach", ref)
    return tree


def _commit(tree: Path, message: str, env: dict[str, str]) -> None:
    res = subprocess.run(["git", "-C", str(tree), "commit", "-q", "--no-verify", "-F", "-"],
                         input=message, capture_output=True, text=True,
                         env={**os.environ, **env})
    if res.returncode != 0:
        raise TreeError(f"git commit in {tree} failed: {res.stderr.strip()[-200:]}")


def load_audit(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise PatchError(f"{path}: no audit: run `make audit` (KERNEL=...) first") from None
    except json.JSONDecodeError as err:
        raise PatchError(f"{path}: not an audit.json: {err}") from None


@dataclass
class RunResult:
    series: list[Series]
    skipped: list[Outcome]
    elapsed: float

    @property
    def outcomes(self) -> list[Outcome]:
        return [o for s in self.series for o in s.outcomes] + self.skipped


def generate(kernel: Path, audit: dict, out_root: Path, worktree: Path,
             subsys: str | None = None, ids: list[str] | None = None,
             signoff: tuple[str, str] | None = None) -> RunResult:
    started = time.monotonic()
    kernel, out_root, worktree = (Path(p).resolve() for p in (kernel, out_root, worktree))
    chosen, skipped = select(audit["semaphores"], subsys, list(ids or []))
    if signoff is None:
        name, email, from_config = identity()
        if not from_config:
            log.warning("no git config user.name/user.email: signing off as %s <%s>",
                        name, email)
        signoff = (name, email)
    groups: dict[str, list[dict]] = {}
    for sem in chosen:
        groups.setdefault(series_subsystem(sem), []).append(sem)
    series = [make_series(kernel, worktree, out_root, sub, groups[sub],
                          audit.get("kernel_version", "?"), signoff)
              for sub in sorted(groups)]
    return RunResult(series, skipped, time.monotonic() - started)


# ------------------------------------------------------------------ records

def write_series_index(series: Series) -> None:
    """work/patches/<slug>/series.json: which patch converts which semaphore, and
    what was refused (read by the verification)."""
    if not series.dir.is_dir():
        return
    data = {"subsystem": series.subsystem,
            "patches": [{"patch": o.patch, "id": o.id} for o in series.outcomes
                        if o.status == "converted"],
            "refused": [{"id": o.id, "why": o.why} for o in series.outcomes
                        if o.status == "refused"]}
    (series.dir / "series.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def stable_record(outcome: Outcome, verified: dict | None) -> dict:
    """What the audit report shows for a semaphore: no times, no dates."""
    from .verify import status_of
    rec = {"status": outcome.status, "why": outcome.why, "series": outcome.series,
           "patch": outcome.patch}
    if verified is not None:
        rec["verify"] = status_of(verified)
        rec["apply"] = verified.get("apply", "")
        rec["build"] = {f: (b["after"]["status"] + (f": {b['after']['why']}"
                                                    if b["after"]["why"] else ""))
                        for f, b in sorted(verified.get("build", {}).items())}
        cp = verified.get("checkpatch") or {}
        rec["checkpatch"] = {k: cp[k] for k in ("errors", "warnings", "checks") if k in cp}
        rec["new_sparse"] = verified.get("new_sparse", [])
        rec["problems"] = verified.get("problems", [])
    return rec


def merge_json(path: Path, updates: dict[str, dict], extra: dict) -> dict:
    """Update the per-semaphore records of a JSON file (earlier runs' records of
    other semaphores are kept)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        data = {}
    data.update(extra)
    sems = data.setdefault("semaphores", {})
    sems.update(updates)
    data["semaphores"] = dict(sorted(sems.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


# ------------------------------------------------------------------ command

def read_series(out: Path) -> list[Series]:
    """The series already in out (for --verify-only), from their series.json."""
    found = []
    for index in sorted(out.glob("*/series.json")):
        data = json.loads(index.read_text())
        outcomes = [Outcome(p["id"], "converted", series=index.parent.name, patch=p["patch"])
                    for p in data.get("patches", [])]
        outcomes += [Outcome(r["id"], "refused", r["why"], series=index.parent.name)
                     for r in data.get("refused", [])]
        found.append(Series(index.parent.name, data.get("subsystem", ""), index.parent,
                            sorted(index.parent.glob("*.patch")), outcomes))
    return found


def verify_all(kernel: Path, series: list[Series], build_dir: Path, vtree: Path,
               logs: Path) -> tuple[dict[str, dict], dict]:
    """Verify every series (each from the kernel's HEAD); ({id: record}, timings)."""
    from .verify import ensure_config, verify_series
    records: dict[str, dict] = {}
    timings = {"prepare_seconds": 0.0, "verify_seconds": 0.0}
    todo = [s for s in series if any(o.status == "converted" for o in s.outcomes)]
    if not todo:
        return records, timings
    started = time.monotonic()
    tree = fresh_worktree(kernel, vtree)
    timings["prepare_seconds"] = round(ensure_config(tree, build_dir), 1)
    for s in todo:
        tree = fresh_worktree(kernel, vtree)
        records.update(verify_series(tree, build_dir, s.dir, logs))
    timings["verify_seconds"] = round(time.monotonic() - started, 1)
    return records, timings


def _print_outcomes(outcomes: list[Outcome], records: dict[str, dict]) -> None:
    from .verify import status_of
    for o in outcomes:
        if o.status == "converted":
            rec = records.get(o.id)
            extra = ""
            if rec is not None:
                extra = f"; {status_of(rec)}"
                if rec.get("problems"):
                    extra += ": " + "; ".join(rec["problems"])
                builds = rec.get("build", {})
                nb = [f"{f} ({b['after']['why']})" for f, b in builds.items()
                      if b["after"]["status"] == "not built"]
                if nb:
                    extra += "; not built here: " + ", ".join(nb)
            print(f"patches: {o.id}: {o.cls or 'converted'} -> {o.series}/{o.patch}{extra}")
        else:
            print(f"patches: {o.id}: {o.status}: " + "; ".join(o.why[:3])
                  + (f" (+{len(o.why) - 3} more)" if len(o.why) > 3 else ""))


def run_patches(args) -> int:
    from .__main__ import DEFAULT_CACHE, default_out
    from .tree import check_kernel_tree
    tree = check_kernel_tree(args.kernel)
    audit_path = args.audit or default_out(tree.path, tree.version) / "audit.json"
    audit = load_audit(audit_path)
    out = Path(args.out).resolve()
    work = out.parent
    timings: dict[str, float] = {}
    if args.verify_only:
        series = read_series(out)
        skipped: list[Outcome] = []
        if not series:
            raise PatchError(f"{out}: no series to verify: run `make patches` first")
    else:
        result = generate(tree.path, audit, out, work / "trees" / "patches",
                          args.subsys, args.id)
        series, skipped = result.series, result.skipped
        timings["generate_seconds"] = round(result.elapsed, 1)
    outcomes = [o for s in series for o in s.outcomes] + skipped
    records: dict[str, dict] = {}
    if not args.no_verify:
        records, vt = verify_all(tree.path, series, Path(args.build_dir).resolve(),
                                 work / "trees" / "verify", out / "logs")
        timings.update(vt)
    _print_outcomes(outcomes, records)
    full = {o.id: {**o.to_json(), "verification": records.get(o.id)} for o in outcomes}
    merge_json(out / "verify.json", full, {"kernel_version": audit.get("kernel_version"),
                                           "kernel": str(tree.path), "timings": timings,
                                           "config": "x86_64 allmodconfig"})
    stable = {o.id: stable_record(o, records.get(o.id)) for o in outcomes
              if not o.id.startswith("SUBSYS=")}
    data = merge_json(audit_path.parent / "patches.json", stable,
                      {"schema": "sem2mutex-patches-1",
                       "kernel_version": audit.get("kernel_version"),
                       "config": "x86_64 allmodconfig"})
    n_conv = sum(o.status == "converted" for o in outcomes)
    n_ref = sum(o.status == "refused" for o in outcomes)
    print(f"patches: {n_conv} patch(es) in {sum(bool(s.patches) for s in series)} "
          f"series under {out}; {n_ref} refused; {len(skipped)} skipped")
    if records:
        from .verify import status_of
        counts: dict[str, int] = {}
        for r in records.values():
            counts[status_of(r)] = counts.get(status_of(r), 0) + 1
        print("patches: verification: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
              + f" (records in {out / 'verify.json'})")
    print("patches: " + ", ".join(f"{k} {v}" for k, v in timings.items()))
    if not args.no_report and (audit_path.parent / "audit.json").is_file():
        rerender_report(tree.path, tree.version, audit_path.parent, data, DEFAULT_CACHE)
    return 0 if n_conv else 1


def rerender_report(kernel: Path, version: str, out_dir: Path, patches: dict,
                    cache: Path) -> None:
    """audit.json/.md/.html again, now with each semaphore's patch status (the
    audit comes from the warm cache: seconds)."""
    from .audit import run_audit
    from .report import load_runtime, write_all
    audit = run_audit(kernel, cache, version=version)
    for p in write_all(audit, out_dir, patches, load_runtime(out_dir / "runtime.json")):
        print(f"patches: wrote {p}")
