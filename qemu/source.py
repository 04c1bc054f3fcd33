"""The kernel source a boot builds from: a worktree of --kernel with the series applied.

The user's tree is never modified: classify.tree.make_worktree gives a private worktree
(or copy) under work/trees/, and the series of the tree's version
(kernel-patches/<major.minor>/series, classify.versions) is applied there with `git am`.  A stamp records base commit + series hash + resulting HEAD, so a second
run with nothing changed leaves the worktree (and its file mtimes) alone and the
incremental build stays a matter of seconds.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from classify.tree import GIT_ENV, TreeError, check_kernel_tree, git, git_am, make_worktree
from classify.versions import series_file as series_of
from qemu.common import DEFAULT_KERNEL, WORK_DIR

log = logging.getLogger("sem2mutex.qemu.source")


@dataclass(frozen=True)
class Source:
    kernel: Path        # the tree the user named (read only)
    tree: Path          # the worktree we build from
    series: list[str]   # patch files applied, in order ([] = pristine boot)
    key: str            # short id of (kernel path, base commit, series contents)


def kernel_key(kernel: Path) -> str:
    """'' for the default tree, else 8 hex digits of the resolved path."""
    kernel = Path(kernel).resolve()
    if kernel == DEFAULT_KERNEL.resolve():
        return ""
    return hashlib.sha1(str(kernel).encode()).hexdigest()[:8]


def read_series(series_file: Path) -> list[Path]:
    """Patch paths listed in a quilt-style series file (comments and blanks skipped)."""
    if not series_file.is_file():
        return []
    patches = []
    for line in series_file.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            patches.append(series_file.parent / line.split()[0])
    return patches


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _git(tree: Path, *args: str) -> str:
    return git(tree, *args, env=GIT_ENV).strip()


def _unchanged(dest: Path, stamp: Path, wanted: dict, n_patches: int) -> bool:
    """The worktree is the one its stamp describes: same tree, base and series, the
    series on top of the base, nothing modified."""
    if not (dest.is_dir() and stamp.is_file()):
        return False
    try:
        old = json.loads(stamp.read_text())
    except ValueError:
        return False
    base = wanted["base"]
    return ({k: old.get(k) for k in wanted} == wanted
            and _git(dest, "rev-parse", "HEAD") == old.get("head")
            and (base == "copy" or _git(dest, "rev-parse", f"HEAD~{n_patches}") == base)
            and _git(dest, "status", "--porcelain", "--untracked-files=no") == "")


def prepare_source(kernel: Path = DEFAULT_KERNEL, series_file: Path | None = None,
                   trees_dir: Path = WORK_DIR / "trees", pristine: bool = False) -> Source:
    """series_file: default the series of the tree's version (a TreeError naming
    the versions there are when it has none).  pristine: the tree without any series,
    in a worktree of its own (work/trees/qemu-pristine[-KEY]), for the control boots
    of qemu/pristine.py."""
    kernel = Path(kernel).resolve()
    check_kernel_tree(kernel)
    if series_file is None and not pristine:
        series_file = series_of(kernel)
    kkey = kernel_key(kernel)
    name = "qemu-pristine" if pristine else "qemu"
    dest = trees_dir / (name if not kkey else f"{name}-{kkey}")
    patches = [] if pristine or series_file is None else read_series(series_file)
    missing = [str(p) for p in patches if not p.is_file()]
    if missing:
        raise TreeError(f"{series_file}: names missing patch files: {', '.join(missing)}")
    digest = hashlib.sha1()
    for p in patches:
        digest.update(p.name.encode() + b"\0" + p.read_bytes())
    base = _git(kernel, "rev-parse", "HEAD") if (kernel / ".git").exists() else "copy"
    wanted = {"kernel": str(kernel), "base": base, "series": digest.hexdigest()}
    # one process at a time (parallel test workers, a boot-test beside a full-kernel):
    # a second one waits, then finds the worktree its stamp describes
    with _locked(dest.with_name(dest.name + ".lock")):
        stamp = dest.with_name(dest.name + ".stamp.json")
        if _unchanged(dest, stamp, wanted, len(patches)):
            log.info("source %s unchanged (%d patches)", dest, len(patches))
            return Source(kernel, dest, [p.name for p in patches],
                          (kkey + "-" if kkey else "") + wanted["series"][:8])
        log.info("preparing worktree %s from %s", dest, kernel)
        # The kernel's commit by id: "HEAD" would mean the existing worktree's own HEAD.
        make_worktree(kernel, dest, base if base != "copy" else "HEAD")
        for p in patches:
            log.info("git am %s", p.name)
            why = git_am(dest, p)
            if why:
                raise TreeError(f"patch {p.name} does not apply: {why}")
        wanted["head"] = _git(dest, "rev-parse", "HEAD")
        stamp.write_text(json.dumps(wanted, sort_keys=True, indent=2) + "\n")
        return Source(kernel, dest, [p.name for p in patches],
                      (kkey + "-" if kkey else "") + wanted["series"][:8])
