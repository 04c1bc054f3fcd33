"""A series per subsystem: one commit per semaphore in a worktree, then
`git format-patch` with a cover letter and get_maintainer.pl's recipients.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from classify.convert.message import (SIGNATURE, commit_env, commit_message, cover_text,
                                      fill_cover, identity)
from classify.convert.select import Outcome, select, series_subsystem
from classify.convert.subject import subject_prefix
from classify.convert.transform import convert, files_for
from classify.paths import slug
from classify.tree import TreeError, git, make_worktree


log = logging.getLogger("sem2mutex.patches")


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
        commit_with_message(tree, msg, env)
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
