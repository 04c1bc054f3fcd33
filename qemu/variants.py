"""The runtime set's kernel variants (qemu/runtime.py): trust and unmark:<id>, as commits.

- trust: the series, its own marking patch (0004) replaced by the marking mechanism
  itself (classify.convert.marking.mark_commits: cocci/sem_to_arch.cocci, which follows
  the local pointers that hold a semaphore's address, one commit per semaphore) run on
  (a) the audit's counting pool, what 0004 marks, and (b) the ids of plan_variants'
  marks (the isolation, see qemu/runtime.py); the series patches after 0004 then go
  back on top with `git am`.  A semaphore the script refuses to mark (its address goes
  where a struct arch_semaphore * is not taken) stays a debug mutex, and is named;
- unmark:<id>: trust with that id's marking commit taken back (its exact inverse, the
  pointers included).  An id the marking refused has no such variant: it is named as
  not made;
- convert:<id>: that id's conversion patch, as `make patches` mails it (generated
  again here, classify.convert.series.generate), applied with `git am` to trust
  (to its unmark:<id> when trust marks it): the patch booted with its workload.  A
  patch that is refused or does not apply leaves the variant not made, and says why.

The marking commits are made in a private worktree (work/trees/runtime-marking) and
recorded in its stamp, keyed by the tree before 0004, the semaphores and the script,
so a second run reuses them (the marking takes minutes); the patches after 0004 are
keyed apart, and a change of them only puts them back on the marking with `git am`.  Each
variant's marked ids are the ones whose marking commit it holds.  All commits have a
fixed identity and date: the same inputs give the same commits, so switching the build
worktree (work/trees/runtime) between variants rewrites only the files that differ.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from classify import spatch
from classify.convert.marking import (ALLOCATED_SCRIPT, MARKING_NAME, SCRIPT, SUBJECT, Mark,
                                      MarkingError, mark_commits, place_in_series)
from classify.tree import GIT_ENV, TreeError, git, git_am, kernel_version
from qemu.build import BuildResult
from classify.versions import series_dir as series_dir_of
from qemu.common import WORK_DIR
from qemu.scenarios import Scenario
from qemu.source import Source

log = logging.getLogger("sem2mutex.qemu.variants")

TREE = WORK_DIR / "trees" / "runtime"                   # the build worktree
MARK_TREE = WORK_DIR / "trees" / "runtime-marking"     # where the variants are made


UNMARK, CONVERT = "unmark:", "convert:"


def variant_id(name: str) -> str:
    """The semaphore a variant is about: unmark:<id> and convert:<id>'s id, or ""."""
    return name.split(":", 1)[1] if name.startswith((UNMARK, CONVERT)) else ""


@dataclass
class Variant:
    name: str                                 # "trust" | "unmark:<id>" | "convert:<id>"
    commit: str = ""
    marked: frozenset[str] = frozenset()
    image: Path | None = None
    build: BuildResult | None = None
    errors: list[str] = field(default_factory=list)
    refused: str = ""                         # why the variant could not be made
    not_marked: dict[str, str] = field(default_factory=dict)  # trust: id -> why
    patch: Path | None = None                 # convert: the patch file applied


def series_split(source: Source) -> tuple[str, list[str]]:
    """(the commit of source.tree just before the series' own marking patch, the
    series entries after it).  The runtime set marks with the marking mechanism
    itself, in place of that patch."""
    try:
        _, number, _ = place_in_series(source.series)
    except MarkingError as err:
        raise TreeError(f"the runtime set needs the series with its marking: {err}") from None
    after = source.series[number:]
    own = git(source.tree, "rev-parse", f"HEAD~{len(after)}").strip()
    subject = git(source.tree, "log", "-1", "--format=%s", own).strip()
    if subject != SUBJECT:
        raise TreeError(f"{source.tree}: HEAD~{len(after)} is \"{subject}\", not the "
                        f"series' marking ({MARKING_NAME})")
    return git(source.tree, "rev-parse", f"{own}~1").strip(), after


def marking_pool(sems: dict[str, dict], marks: list[str]) -> list[dict]:
    """What trust marks, by id: the counting pool (what the series' marking marks)
    and the extra marks."""
    ids = {i for i, s in sems.items() if s.get("class") == "counting"} | set(marks)
    return [sems[i] for i in sorted(ids)]


def marking_key(base: str, pool: list[dict]) -> dict:
    """What the trust marking depends on: the tree it starts from, the semaphores
    (as the audit records them) and the script."""
    digest = hashlib.sha1(json.dumps(pool, sort_keys=True).encode())
    for script in (SCRIPT, ALLOCATED_SCRIPT):
        digest.update(spatch.script_path(script).read_bytes())
    return {"base": base, "ids": [s["id"] for s in pool], "digest": digest.hexdigest()}


def after_key(after: list[Path]) -> str:
    """What the series put back after the marking depends on: its patches."""
    digest = hashlib.sha1()
    for p in after:
        digest.update(p.name.encode() + b"\0" + p.read_bytes())
    return digest.hexdigest()


def has_commits(repo: Path, commits: list[str]) -> bool:
    try:
        for c in commits:
            git(repo, "cat-file", "-e", f"{c}^{{commit}}")
    except TreeError:
        return False
    return True


def read_stamp(stamp: Path, key: dict, repo: Path) -> dict | None:
    """What a stamp records for key (the marked commit, the marks, and the trust commit
    made from them with the patches after), when its commits are still in repo."""
    try:
        old = json.loads(stamp.read_text())
        if old["key"] != key:
            return None
        old["marks"] = {i: Mark(**m) for i, m in old["marks"].items()}
        commits = [old["marked"]] + [m.commit for m in old["marks"].values() if m.commit]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return old if has_commits(repo, commits) else None


def trust_marking(source: Source, pool: list[dict], tree: Path = MARK_TREE,
                  series_dir: Path | None = None) -> tuple[str, dict[str, Mark]]:
    """(the trust commit, id -> Mark): the series up to its marking, one marking commit
    per semaphore of pool made by classify.convert.marking (cocci/sem_to_arch.cocci,
    the pointers that hold its address included), then the rest of the series.
    Made in a private worktree (tree); the commits are recorded in tree's stamp.  The
    marking (minutes of spatch) is reused while the tree before it, the semaphores and
    the script are the same; the patches after it are put back with `git am` whenever
    they change (seconds)."""
    base, after = series_split(source)
    if (tree / ".git").exists() and (tree / git(tree, "rev-parse", "--git-path",
                                                "rebase-apply").strip()).exists():
        git(tree, "am", "--abort")          # a run cut short during git am
    series_dir = series_dir or series_dir_of(source.kernel)
    after_paths = [series_dir / e for e in after]
    key, akey = marking_key(base, pool), after_key(after_paths)
    stamp = tree.with_name(tree.name + ".stamp.json")
    cached = read_stamp(stamp, key, source.tree)
    if cached is not None and cached.get("after") == akey and has_commits(
            source.tree, [cached.get("trust", "")]):
        log.info("runtime: trust marking unchanged (%s)", stamp)
        return cached["trust"], cached["marks"]
    if cached is not None:
        log.info("runtime: marking unchanged, the series after it changed: git am")
        marked, marks = cached["marked"], cached["marks"]
        wt = checkout(source, marked, tree)
    else:
        log.info("runtime: marking %d semaphores in %s", len(pool), tree)
        wt = checkout(source, base, tree)
        marks = mark_commits(wt, pool)
        marked = git(wt, "rev-parse", "HEAD").strip()
    for p in after_paths:
        why = git_am(wt, p)
        if why:
            raise TreeError(f"{p.name} does not apply after the runtime marking: {why}")
    trust = git(wt, "rev-parse", "HEAD").strip()
    stamp.write_text(json.dumps({"key": key, "marked": marked, "after": akey, "trust": trust,
                                 "marks": {i: asdict(m) for i, m in marks.items()}},
                                indent=1, sort_keys=True) + "\n")
    return trust, marks


def revert(repo: Path, onto: str, commit: str) -> str:
    """onto with commit's change taken back: its reverse diff applied to onto's tree with
    a temporary index (no checkout), without context lines: `git revert` would see a
    conflict where a neighbour on the next line (another member of the same struct) is
    marked by another commit.  With GIT_ENV's fixed identity and date, the same inputs
    give the same commit, so a rebuild is incremental."""
    patch = git(repo, "diff", "-U0", "--no-color", "--no-ext-diff", commit, f"{commit}~1")
    subject = git(repo, "log", "-1", "--format=%s", commit).strip()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**GIT_ENV, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "read-tree", onto, env=env)
        res = subprocess.run(["git", "-C", str(repo), "apply", "--cached", "--unidiff-zero",
                              "-"], input=patch, capture_output=True, text=True,
                             env={**os.environ, **env})
        if res.returncode != 0:
            raise TreeError(f"the inverse of {commit} ({subject}) does not apply to {onto}: "
                            + " | ".join(res.stderr.strip().splitlines()[:3]))
        tree = git(repo, "write-tree", env=env).strip()
        return git(repo, "commit-tree", tree, "-p", onto, "-m",
                   f"Revert \"{subject}\"\n\nThis reverts commit {commit}.", env=env).strip()


def not_marked(marks: dict[str, Mark]) -> dict[str, str]:
    """id -> why, for every semaphore the marking refused (or failed on)."""
    return {i: f"{m.status}: {'; '.join(m.why)}" for i, m in sorted(marks.items())
            if m.status != "marked"}


def for_tree(scenarios: list[Scenario], sems: dict[str, dict]) -> tuple[list[Scenario],
                                                                         dict[str, str]]:
    """The scenarios as they apply to the tree of sems (an audit's ids), and those
    left out, with why.  The scenarios name 6.1's ids; a declaration that moved
    to another file (btrfs_fs_info from ctree.h to fs.h) is the one of the same
    name when the tree has exactly one; a scenario about a semaphore the tree
    does not have (a driver removed, a semaphore converted upstream) cannot run."""
    by_name: dict[str, list[str]] = {}
    for sid in sems:
        by_name.setdefault(sid.rpartition(":")[2], []).append(sid)

    def moved(sid: str) -> str:
        same = by_name.get(sid.rpartition(":")[2], [])
        return sid if sid in sems else same[0] if len(same) == 1 else ""

    kept, left = [], {}
    for sc in scenarios:
        own = variant_id(sc.variant)
        ids = list(dict.fromkeys(list(sc.about) + ([own] if own else [])))
        gone = [i for i in ids if not moved(i)]
        if gone:
            left[sc.name] = "this tree has no " + ", ".join(gone)
            continue
        variant = sc.variant.replace(own, moved(own)) if own else sc.variant
        kept.append(replace(sc, about=tuple(moved(i) for i in sc.about), variant=variant))
    return kept, left


def plan_variants(scenarios: list[Scenario], sems: dict[str, dict]) -> tuple[list[str],
                                                                             list[str]]:
    """(variant names, trust marks): trust first, then each unmark:<id> and
    convert:<id> in scenario order; the trust marks are the ids with an unmark:
    variant of their own plus the counting ids the scenarios are about."""
    variants = ["trust"]
    for sc in scenarios:
        if sc.variant not in variants:
            variants.append(sc.variant)
    marks = [variant_id(v) for v in variants if v.startswith(UNMARK)]
    unknown = [variant_id(v) for v in variants
               if v.startswith(CONVERT) and variant_id(v) not in sems]
    for sc in scenarios:
        for sid in sc.about:
            if sems.get(sid, {}).get("class") == "counting" and sid not in marks:
                marks.append(sid)
    unknown += [i for i in marks if i not in sems]
    if unknown:
        raise TreeError(f"runtime scenarios name ids the audit does not have: {unknown}")
    return variants, marks


def make_variants(source: Source, sems: dict[str, dict], names: list[str],
                  marks: list[str], tree: Path | None = None,
                  series_dir: Path | None = None,
                  patches: Path | None = None) -> list[Variant]:
    """The variants of names: trust (trust_marking of the counting pool and marks), and
    each unmark:<id> as the revert of that id's marking commit, each convert:<id> as
    its conversion patch on top (converted()).  Each variant's marked ids are those
    whose marking commit it holds.  An id the marking refused cannot be unmarked: its
    variant is not made, and says why (refused)."""
    tree = tree or MARK_TREE
    trust, done = trust_marking(source, marking_pool(sems, marks), tree, series_dir)
    marked = frozenset(i for i, m in done.items() if m.status == "marked")
    refused = not_marked(done)
    for sid, why in refused.items():
        log.warning("runtime: trust: %s not marked (%s): it runs as a debug mutex", sid, why)
    out = [Variant("trust", trust, marked, not_marked=refused)]
    for name in [n for n in names if n != "trust"]:
        sid = variant_id(name)
        if name.startswith(CONVERT):
            out.append(converted(source, sems, sid, trust, done.get(sid), marked, tree,
                                 patches or tree.with_name(tree.name + "-patches")))
            continue
        m = done[sid]
        if m.status != "marked":
            out.append(Variant(name, "", marked, refused=f"{sid} is not marked in trust, so it "
                                                         f"cannot be unmarked: {refused[sid]}"))
            log.warning("runtime: variant %s not made: %s", name, out[-1].refused)
            continue
        try:
            commit = revert(source.tree, trust, m.commit)
        except TreeError as err:
            out.append(Variant(name, "", marked, refused=str(err)))
            log.warning("runtime: variant %s not made: %s", name, err)
            continue
        out.append(Variant(name, commit, marked - {sid}))
    return out


def converted(source: Source, sems: dict[str, dict], sid: str, trust: str,
              mark: Mark | None, marked: frozenset[str], tree: Path,
              patches: Path) -> Variant:
    """convert:<sid>: the conversion patch of sid as `make patches` makes it (in
    patches, from a worktree beside tree), applied with `git am` in tree to trust,
    or to trust with sid's marking taken back when trust marks it."""
    from classify.convert.series import generate     # the patch pipeline: only here
    name = f"{CONVERT}{sid}"

    def refuse(why: str) -> Variant:
        log.warning("runtime: variant %s not made: %s", name, why)
        return Variant(name, "", marked - {sid}, refused=why)

    onto = trust
    try:
        if sid in marked and mark is not None:
            onto = revert(source.tree, trust, mark.commit)
        audit = {"semaphores": list(sems.values()),
                 "kernel_version": kernel_version(source.kernel)}
        run = generate(source.kernel, audit, patches,
                       tree.with_name(tree.name + "-convert"), ids=[sid], signoff=None)
    except TreeError as err:
        return refuse(str(err))
    made = [(s, o) for s in run.series for o in s.outcomes if o.id == sid]
    if not made or made[0][1].status != "converted":
        why = "; ".join(made[0][1].why) if made else "no conversion made"
        return refuse(f"its conversion patch was not made: {why}")
    series, outcome = made[0]
    patch = series.dir / outcome.patch
    wt = checkout(source, onto, tree)
    why = git_am(wt, patch)
    if why:
        return refuse(f"{patch.name} does not apply: {why}")
    return Variant(name, git(wt, "rev-parse", "HEAD").strip(), marked - {sid}, patch=patch)


def checkout(source: Source, commit: str, dest: Path = TREE) -> Path:
    """dest, a worktree of source's tree, at commit (made, or made again when
    it is one of another tree's)."""
    def common(tree: Path) -> Path:
        return (tree / git(tree, "rev-parse", "--git-common-dir").strip()).resolve()

    if (dest / ".git").exists() and common(dest) != common(source.tree):
        log.info("runtime: %s is a worktree of another tree: made again", dest)
        shutil.rmtree(dest)
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        git(source.tree, "worktree", "prune")
        git(source.tree, "worktree", "add", "-q", "--detach", str(dest.resolve()), commit)
    else:
        git(dest, "checkout", "-q", "-f", "--detach", commit)
    return dest


