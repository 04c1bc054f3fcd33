"""A series per MAINTAINERS entry: one commit per semaphore in a worktree, then
`git format-patch` (a cover letter for several patches), the reviewer's notes
below each patch's ---, and get_maintainer.pl's recipients of each patch.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from classify.convert.finish import lock_name
from classify.convert.handmade import Handmade, conversions_for
from classify.census.order import order_inversions
from classify.census.waits import lock_findings
from classify.convert.protects import guarded_globals, guarded_members
from classify.convert.maintainers import (add_recipients, on_tree, read_entries, recipients,
                                          routing, section_for, tree_tag, union)
from classify.convert.cover import cover_subject, cover_text, fill_cover, patch_summary
from classify.convert.identity import commit_env, identity, is_placeholder
from classify.convert.message import Converted, commit_message
from classify.convert.notes import evidence, insert_notes, reviewer_notes, sending_notes
from classify.convert.select import Outcome, select, sem_paths, series_subsystem
from classify.convert.subject import (SUBJECT_LIMIT, _named_after, common_prefix, has_history,
                                      patch_prefix, summary)
from classify.convert.transform import convert, files_for, stale_comments
from classify.paths import slug
from classify.records.audit import AuditData
from classify.tree import GIT_ENV, TreeError, git, git_am, make_worktree


log = logging.getLogger("sem2mutex.patches")

# beside a series' patches, for its sender: the audit's full listing for each
# patch, and where the series goes (SENDING)
EVIDENCE_DIR = "evidence"
SENDING_NAME = "sending.txt"
SENDING = f"{EVIDENCE_DIR}/{SENDING_NAME}"


def format_patch(tree: Path, base: str, out: Path, cover: bool, tag: str,
                 with_base: bool, env: dict[str, str] | None = None) -> list[Path]:
    """git format-patch base..HEAD into out: a cover letter only for several
    patches, the tree tag in the subject prefix, base-commit: only for a real
    history (with_base)."""
    args = ["format-patch", "--numbered" if cover else "--no-numbered", "--zero-commit",
            "--no-signature", f"--subject-prefix=PATCH{' ' + tag if tag else ''}",
            "-o", str(out)]
    args += ["--cover-letter"] if cover else ["--no-cover-letter"]
    args += [f"--base={base}"] if with_base else ["--no-base"]
    # env: the commits' identity and date, which the cover letter takes too
    return [Path(p) for p in git(tree, *args, f"{base}..HEAD", env=env).split()]


@dataclass
class Series:
    slug: str
    subsystem: str
    dir: Path
    patches: list[Path]
    outcomes: list[Outcome]


@dataclass
class Plan:
    """One series to make: its name (the MAINTAINERS entry, else the audit's
    subsystem), the tree its MAINTAINERS entries name, its semaphores, and the
    files they touch (for the notes on where the series goes)."""
    name: str
    tag: str
    sems: list[dict]
    paths: list[str] = field(default_factory=list)


def plan_series(kernel: Path, sems: list[dict], hand: dict[str, Handmade] | None = None
                ) -> list[Plan]:
    """The semaphores grouped by the MAINTAINERS entry of their files (a tree
    without MAINTAINERS, or files no entry names: the audit's subsystem); those
    of one hand-written conversion by the files it changes, so they stay together."""
    entries = read_entries(kernel)
    hand = hand or {}
    groups: dict[str, list[dict]] = {}
    tags: dict[str, list[str]] = {}
    paths: dict[str, set[str]] = {}
    for sem in sems:
        files = list(hand[sem["id"]].files) if sem["id"] in hand else sem_paths(sem)
        entry = section_for(entries, files)
        name = entry.name if entry else series_subsystem(sem)
        groups.setdefault(name, []).append(sem)
        tags.setdefault(name, []).append(tree_tag(entries, files))
        paths.setdefault(name, set()).update(files)
    return [Plan(name, min(tags[name], key=lambda t: (-tags[name].count(t), t)),
                 groups[name], sorted(paths[name])) for name in sorted(groups)]


def driver_of(kernel: Path, sem: dict, tree: Path) -> str:
    """The subject prefix of the driver a semaphore belongs to: the semaphores of
    one driver go into one patch."""
    files = files_for(sem, tree)
    return patch_prefix(kernel, [f for f in files if f.endswith(".c")] or files)


@dataclass
class Commit:
    """One patch of a series: its outcomes, its subject (without [PATCH]), the
    semaphores it converts (none for a hand-written one, which brings its own
    notes), and the sentence the cover letter gives it."""
    outcomes: list[Outcome]
    subject: str
    items: list[Converted]
    summary: str
    cls: set[str]
    hand_notes: str = ""

    def notes(self) -> str:
        """Below the ---: what the reviewer should check."""
        return reviewer_notes(self.items) if self.items else self.hand_notes


def _convert_one(tree: Path, kernel: Path, sem: dict, name: str
                 ) -> tuple[Outcome, Converted | None]:
    """One semaphore converted and committed (a commit of its own, squashed
    with the others of its driver later)."""
    files = files_for(sem, tree)
    # what it protects, read where the audit read (its line numbers)
    read = _reader(kernel)
    sem = {**sem, "guards": guarded_members(sem, read) or guarded_globals(sem, read)}
    log.info("%s: converting %s to a %s (%d file(s))", name, sem["id"],
             sem["class"], len(files))
    conv = convert(tree, sem, files)
    if conv.refusals or conv.errors:
        return (Outcome(sem["id"], "refused", conv.refusals + conv.errors,
                        cls=sem["class"], series=name, files=files), None)
    git(tree, "add", "-u", "--", *conv.changed)
    commit_with_message(tree, f"convert {sem['id']}\n", GIT_ENV)
    # whether a wait's value is passed on: the conversion maps it back to -EINTR
    mapped = any(ln.startswith("+") and "-EINTR" in ln
                 for ln in git(tree, "show", "--format=", "HEAD").splitlines())
    item = Converted(sem, conv.new_name, conv.name_kept, list(conv.notes),
                     waits_of(kernel, sem), mapped)
    return (Outcome(sem["id"], "converted", [], cls=sem["class"], series=name,
                    files=conv.changed), item)


def waits_of(kernel: Path, sem: dict) -> list[str]:
    """What the conversion makes lockdep see (classify.census.waits, .order): a
    wait under the lock for work that takes it, several instances held at once,
    a framework lock (RTNL, the wiphy mutex) taken in both orders; sentences
    for the message, read where the audit read (its line numbers)."""
    if sem["class"] != "mutex":
        return []
    read = _reader(kernel)
    return [f.sentence() for f in (*lock_findings(sem, read), *order_inversions(sem, read))]


def _reader(tree: Path):
    def source(rel: str) -> str:
        try:
            return (tree / rel).read_text(errors="replace")
        except OSError:
            return ""
    return source


def _first_word(path: str) -> str:
    return re.split(r"[_-]", posixpath.splitext(posixpath.basename(path))[0])[0]


def driver_others(audit_sems: list[dict], items: list[Converted],
                  files: list[str]) -> list[dict]:
    """The semaphores declared beside the converted ones (in the directories of
    their files, and of their declarations outside include/) that are no
    mutex or completion: the ones a reviewer asks about.  A directory that
    gathers components (infiniband/core: iwpm_util.c beside user_mad.c) is
    the driver's only in the files that share its files' first word."""
    # include/ holds every subsystem's headers: no driver's directory
    ours = [f for f in files + [i.sem["declared"]["path"] for i in items]
            if not f.startswith("include/")]
    dirs: dict[str, set[str] | None] = {}
    for f in ours:
        d = posixpath.dirname(f)
        if _named_after(posixpath.basename(d), posixpath.splitext(posixpath.basename(f))[0]):
            dirs[d] = None                                  # the whole directory
        elif dirs.get(d, set()) is not None:
            dirs.setdefault(d, set()).add(_first_word(f))

    def beside(path: str) -> bool:
        d = posixpath.dirname(path)
        return d in dirs and (dirs[d] is None or _first_word(path) in dirs[d])
    mine = {i.sem["id"] for i in items}
    return [s for s in audit_sems if s["id"] not in mine
            and s["class"] not in ("mutex", "completion") and beside(s["declared"]["path"])]


def _convert_driver(tree: Path, kernel: Path, sems: list[dict], name: str,
                    me: str | None, env: dict[str, str],
                    audit_sems: list[dict] = ()) -> tuple[list[Outcome], Commit | None]:
    """The semaphores of one driver, converted one after another, as one commit."""
    start = git(tree, "rev-parse", "HEAD").strip()
    outcomes, items = [], []
    for sem in sems:
        outcome, item = _convert_one(tree, kernel, sem, name)
        outcomes.append(outcome)
        if item is not None:
            items.append(item)
    if not items:
        return outcomes, None
    changed = sorted({f for o in outcomes for f in o.files if o.status == "converted"})
    prefix = patch_prefix(kernel, [f for f in changed if f.endswith(".c")] or changed)
    git(tree, "reset", "-q", "--soft", start)
    subj = summary([i.sem for i in items], SUBJECT_LIMIT - len(prefix))
    commit_with_message(tree, commit_message(prefix, subj, items, me,
                                             driver_others(list(audit_sems), items, changed)),
                        env)
    for lock in sorted({lock_name(i.sem) for i in items}):
        for stale in stale_comments(tree, name=lock):
            items[0].notes.append(stale)
    done = [o for o in outcomes if o.status == "converted"]
    return outcomes, Commit(done, prefix + subj, items, patch_summary(items),
                            {i.sem["class"] for i in items})


def _apply_handmade(tree: Path, sem: dict, hand: Handmade, name: str,
                    signoff: str | None, env: dict[str, str]) -> tuple[Outcome, Commit | None]:
    """A hand-written conversion committed with git am; refused, with git's
    reason, when it does not apply.  A patch written under sem2mutex's own
    placeholder identity is mailed as the signer's (the author must be the one
    who signs off)."""
    log.info("%s: applying %s (written by hand) for %s", name, hand.path.name, sem["id"])
    failed = git_am(tree, hand.path, signoff=bool(signoff), env=env)
    if failed:
        return (Outcome(sem["id"], "refused", [f"{hand.name} does not apply: {failed}"],
                        cls=sem["class"], series=name, hand=hand.name), None)
    if signoff:
        author = git(tree, "log", "-1", "--format=%an%x00%ae").strip().split("\0")
        if is_placeholder(*author):
            git(tree, "commit", "-q", "--amend", "--no-edit", "--reset-author", env=env)
    outcome = Outcome(sem["id"], "converted", [], cls=sem["class"], series=name,
                      files=list(hand.files), hand=hand.name)
    what = re.split(r": | - ", hand.subject)[-1]
    return outcome, Commit([outcome], hand.subject, [],
                           f"was written by hand: {what[:1].lower() + what[1:]}.",
                           {sem["class"]}, hand.notes)


def make_series(kernel: Path, worktree: Path, out_root: Path, plan: Plan,
                version: str, signoff: tuple[str, str] | None,
                hand: dict[str, Handmade] | None = None,
                audit_sems: list[dict] = ()) -> Series:
    """Convert the plan's semaphores, one commit per driver (a hand-written
    conversion is a commit of its own), then write the series: notes below each
    patch's ---, each patch's own recipients, their union on the cover letter
    (there is one only for several patches)."""
    name = slug(plan.name.lower())
    tree = fresh_worktree(kernel, worktree)
    base = git(tree, "rev-parse", "HEAD").strip()
    env = commit_env(*(signoff or (GIT_ENV["GIT_AUTHOR_NAME"], GIT_ENV["GIT_AUTHOR_EMAIL"])))
    me = f"{signoff[0]} <{signoff[1]}>" if signoff else None
    hand = hand or {}
    entries = read_entries(kernel)
    tagged = on_tree(kernel, plan.tag)
    routes = routing(entries, plan.paths, plan.tag, tagged, version)
    outcomes: list[Outcome] = []
    commits: list[Commit] = []
    applied: dict[Path, Commit] = {}     # hand-written patch -> its commit
    drivers: dict[str, list[dict]] = {}
    for sem in plan.sems:
        h = hand.get(sem["id"])
        if h is None:
            drivers.setdefault(driver_of(kernel, sem, tree), []).append(sem)
            continue
        if h.path in applied:                     # one patch, several semaphores
            outcome = Outcome(sem["id"], "converted", [], cls=sem["class"], series=name,
                              files=list(h.files), hand=h.name)
            applied[h.path].outcomes.append(outcome)
            outcomes.append(outcome)
            continue
        outcome, commit = _apply_handmade(tree, sem, h, name, me, env)
        outcomes.append(outcome)
        if commit is not None:
            commits.append(commit)
            applied[h.path] = commit
    for sems in drivers.values():
        done, commit = _convert_driver(tree, kernel, sems, name, me, env, audit_sems)
        outcomes += done
        if commit is not None:
            commits.append(commit)
    out = out_root / name
    shutil.rmtree(out, ignore_errors=True)
    patches: list[Path] = []
    if commits:
        out.mkdir(parents=True)
        several = len(commits) > 1
        patches = format_patch(tree, base, out, several, plan.tag if tagged else "",
                               has_history(kernel), env)
        own = patches[1:] if several else patches
        lists = []
        shown = []
        for patch, commit in zip(own, commits):
            if commit.items:
                shown.append(write_sender_file(out, f"{patch.stem}.txt",
                                               evidence(commit.items, version)))
            insert_notes(patch, commit.notes())
            # the sender (the From: get_maintainer.pl reads) is no recipient
            lists.append(recipients(tree, patch, env["GIT_AUTHOR_EMAIL"]))
            add_recipients(patch, *lists[-1])
            for o in commit.outcomes:
                o.patch = patch.name
        write_sender_file(out, SENDING_NAME, sending_notes(routes, shown))
        if several:
            refused = [o for o in outcomes if o.status == "refused"]
            prefix = common_prefix([c.subject.rsplit(": ", 1)[0] + ": " for c in commits],
                                   plan.name)
            classes = set().union(*(c.cls for c in commits))
            fill_cover(patches[0], cover_subject(prefix, classes),
                       cover_text([(c.subject, c.summary) for c in commits], refused,
                                  version, classes))
            add_recipients(patches[0], union([t for t, _ in lists]),
                           union([c for _, c in lists]))
    result = Series(name, plan.name, out, patches, outcomes)
    write_series_index(result, version)
    return result


def write_sender_file(series_dir: Path, name: str, text: str) -> str:
    """A file for the sender in the series' EVIDENCE_DIR (a directory of its own:
    `git send-email <series dir>` sends the files of the directory, not those of
    its subdirectories); its path from the series' directory."""
    (series_dir / EVIDENCE_DIR).mkdir(exist_ok=True)
    (series_dir / EVIDENCE_DIR / name).write_text(text)
    return f"{EVIDENCE_DIR}/{name}"


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


def commit_with_message(tree: Path, message: str, env: dict[str, str]) -> None:
    res = subprocess.run(["git", "-C", str(tree), "commit", "-q", "--no-verify", "-F", "-"],
                         input=message, capture_output=True, text=True,
                         env={**os.environ, **env})
    if res.returncode != 0:
        raise TreeError(f"git commit in {tree} failed: {res.stderr.strip()[-200:]}")


@dataclass
class RunResult:
    series: list[Series]
    skipped: list[Outcome]
    elapsed: float

    @property
    def outcomes(self) -> list[Outcome]:
        return [o for s in self.series for o in s.outcomes] + self.skipped


def generate(kernel: Path, audit: AuditData, out_root: Path, worktree: Path,
             subsys: str | None = None, ids: list[str] | None = None,
             signoff: tuple[str, str] | None | bool = True,
             hand: dict[str, Handmade] | None = None) -> RunResult:
    """signoff: (name, email), True for identity() (an IdentityError when there
    is none), or None/False for patches without Signed-off-by.  hand: the
    hand-written conversions (default: kernel-patches/<version>/conversions/)."""
    started = time.monotonic()
    kernel, out_root, worktree = (Path(p).resolve() for p in (kernel, out_root, worktree))
    hand = conversions_for(kernel) if hand is None else hand
    chosen, skipped = select(audit["semaphores"], subsys, list(ids or []), hand)
    if signoff is True and chosen:
        signoff = identity()
    version = audit.get("kernel_version", "?")
    series = [make_series(kernel, worktree, out_root, plan, version, signoff or None, hand,
                          audit["semaphores"])
              for plan in plan_series(kernel, chosen, hand)]
    drop_stale_series(out_root, version, {s.dir for s in series},
                      whole=subsys is None and not ids)
    return RunResult(series, skipped, time.monotonic() - started)


def drop_stale_series(out_root: Path, version: str, made: set[Path], whole: bool) -> None:
    """Remove the series a later --verify-only must not take for this run's: every
    other one after a whole run, and those of another kernel version after any run
    (a SUBSYS= or ID= run keeps the rest of its own tree's series)."""
    for index in out_root.glob("*/series.json"):
        if index.parent in made:
            continue
        theirs = json.loads(index.read_text()).get("kernel_version")
        if whole or theirs != version:
            log.info("removing the series %s (%s)", index.parent.name,
                     "not made by this run" if theirs == version else
                     f"of Linux {theirs or 'an unknown version'}")
            shutil.rmtree(index.parent)


def write_series_index(series: Series, version: str) -> None:
    """work/patches/<slug>/series.json: the kernel version, which patch converts
    which semaphore, and what was refused (read by the verification)."""
    if not series.dir.is_dir():
        return
    data = {"subsystem": series.subsystem, "kernel_version": version,
            "patches": [{"patch": o.patch, "id": o.id, **({"hand": o.hand} if o.hand else {})}
                        for o in series.outcomes if o.status == "converted"],
            "refused": [{"id": o.id, "why": o.why} for o in series.outcomes
                        if o.status == "refused"]}
    (series.dir / "series.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_series(out: Path, version: str | None = None) -> list[Series]:
    """The series already in out (for --verify-only), from their series.json; with
    version, only those made for a tree of that version."""
    found = []
    for index in sorted(out.glob("*/series.json")):
        data = json.loads(index.read_text())
        if version and data.get("kernel_version", version) != version:
            log.warning("%s: made for Linux %s, not %s: not verified", index.parent.name,
                        data["kernel_version"], version)
            continue
        outcomes = [Outcome(p["id"], "converted", series=index.parent.name, patch=p["patch"],
                            hand=p.get("hand", "")) for p in data.get("patches", [])]
        outcomes += [Outcome(r["id"], "refused", r["why"], series=index.parent.name)
                     for r in data.get("refused", [])]
        found.append(Series(index.parent.name, data.get("subsystem", ""), index.parent,
                            sorted(index.parent.glob("*.patch")), outcomes))
    return found
