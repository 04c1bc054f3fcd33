"""The kernel trees sem2mutex works on.

Two kinds: the pristine Debian trees (6.1 and 6.12) that ``make setup`` unpacks into
the work area, and any tree a maintainer names with ``KERNEL=``.  A user's tree is only ever
read; whatever has to change it (``git am`` of the series, a conversion patch, a
build) works on a git worktree or a copy under the work area.

The pristine tree is a git repository whose first commit, tagged ``pristine``, is
the tarball exactly as Debian ships it, so later stages can diff, reset and
``git am`` against it.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("sem2mutex.tree")

PRISTINE_TAG = "pristine"
DEFAULT_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
# The unpacked tree is 1.3 GB and its git objects another 0.3 GB; builds come on top.
MIN_FREE_BYTES = 4 << 30

# Fixed identity and date for the pristine commit: two machines that unpack the same
# tarball get the same commit id, so patches and reports name the same base.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "sem2mutex",
    "GIT_AUTHOR_EMAIL": "sem2mutex@localhost",
    "GIT_COMMITTER_NAME": "sem2mutex",
    "GIT_COMMITTER_EMAIL": "sem2mutex@localhost",
    "GIT_AUTHOR_DATE": "2005-12-19T02:34:16+0100",
    "GIT_COMMITTER_DATE": "2005-12-19T02:34:16+0100",
}


class TreeError(Exception):
    """A one-line explanation of what is missing and how to get it."""


@dataclass(frozen=True)
class KernelTree:
    path: Path
    version: str  # "6.1.192"


def kernel_version(path: Path) -> str:
    """The tree's version from its top-level Makefile, e.g. "6.1.192"."""
    makefile = path / "Makefile"
    try:
        text = makefile.read_text(errors="replace")[:4096]
    except OSError:
        raise TreeError(f"{path}: no top-level Makefile: not a kernel tree "
                        "(KERNEL= must name the top of a Linux source tree)") from None
    fields = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d*)", text, re.M))
    if not fields.get("VERSION") or not fields.get("PATCHLEVEL"):
        raise TreeError(f"{makefile}: no VERSION/PATCHLEVEL lines: not a kernel tree "
                        "(KERNEL= must name the top of a Linux source tree)")
    parts = [fields["VERSION"], fields["PATCHLEVEL"]]
    if fields.get("SUBLEVEL"):
        parts.append(fields["SUBLEVEL"])
    return ".".join(parts)


def check_kernel_tree(path: Path) -> KernelTree:
    """Refuse anything that is not the top of a kernel tree with semaphores in it."""
    path = Path(path)
    if not path.is_dir():
        raise TreeError(f"{path}: no such directory "
                        "(run `make setup` for the default 6.1 tree, or fix KERNEL=)")
    version = kernel_version(path)
    for needed in ("Kconfig", "include/linux/semaphore.h", "kernel/locking/semaphore.c"):
        if not (path / needed).exists():
            raise TreeError(f"{path}: {needed} is missing: not a complete kernel tree "
                            "(sem2mutex needs Linux 2.6.26 or later, unpacked whole)")
    return KernelTree(path=path.resolve(), version=version)


# The top-level directories every release since 2.6.26 builds, for a tree whose
# Kbuild and Makefile name none (the tree's own list is read first).
RELEASE_DIRS = ("block", "crypto", "drivers", "fs", "init", "ipc", "kernel", "lib", "mm",
                "net", "security", "sound", "virt")
_KBUILD_DIRS = re.compile(r"^(?:obj|core|drivers|libs|net|virt|init)-[\w$()]*\s*[:+]?="
                          r"((?:[^\n\\]|\\\n)*)", re.M)


def release_dirs(path: Path) -> list[str]:
    """The top-level directories the tree's top Kbuild and Makefile build (obj-y +=
    kernel/, core-y += mm/, ...), or RELEASE_DIRS when they name none."""
    found: set[str] = set()
    for name in ("Kbuild", "Makefile"):
        try:
            text = (path / name).read_text(errors="replace")
        except OSError:
            continue
        for m in _KBUILD_DIRS.finditer(text):
            found |= {w[:-1] for w in m.group(1).split()
                      if re.fullmatch(r"[a-z_]+/", w) and w != "arch/"}
    return sorted(found or RELEASE_DIRS)


def missing_dirs(path: Path) -> list[str]:
    """The top-level directories of release_dirs() that the tree lacks (no Makefile or
    Kbuild in them): a tree that holds only a part of the kernel."""
    return [d for d in release_dirs(path)
            if not ((path / d / "Makefile").is_file() or (path / d / "Kbuild").is_file())]


def git(tree: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(["git", "-C", str(tree), *args], capture_output=True,
                            text=True, env={**os.environ, **(env or {})})
    if result.returncode != 0:
        last = result.stderr.strip().splitlines()[-3:] or ["?"]
        raise TreeError(f"git {' '.join(args[:2])} in {tree} failed: " + " | ".join(last))
    return result.stdout



def git_am(tree: Path, patch: Path, signoff: bool = False,
           env: dict[str, str] | None = None) -> str:
    """"" when the patch applies, else git's reason (the am is then aborted, so the
    tree is left as it was).  The one place the project runs `git am`; signoff
    adds the committer's Signed-off-by (env: the identity, GIT_ENV's otherwise)."""
    res = subprocess.run(["git", "-C", str(tree), "am", "-q", "--whitespace=nowarn",
                          *(["--signoff"] if signoff else []), str(Path(patch).resolve())],
                         capture_output=True, text=True,
                         env={**os.environ, **GIT_ENV, **(env or {})})
    if res.returncode == 0:
        return ""
    subprocess.run(["git", "-C", str(tree), "am", "--abort"], capture_output=True)
    lines = [ln for ln in (res.stdout + res.stderr).splitlines()
             if ln.strip() and not ln.startswith("hint:")]
    return " | ".join(lines[:4]) or "git am failed"

def is_pristine_repo(path: Path) -> bool:
    """True when path is a finished pristine tree (the tag is written last)."""
    if not (path / ".git").exists():
        return False
    probe = subprocess.run(["git", "-C", str(path), "rev-parse", "-q", "--verify",
                            f"refs/tags/{PRISTINE_TAG}"], capture_output=True)
    return probe.returncode == 0


def require_free_space(directory: Path, needed: int = MIN_FREE_BYTES) -> None:
    free = shutil.disk_usage(directory).free
    if free < needed:
        raise TreeError(f"{directory}: only {free / 2**30:.1f} GiB free, "
                        f"the kernel tree needs {needed / 2**30:.0f} GiB: free some space")


def prepare_pristine(tarball: Path, dest: Path) -> KernelTree:
    """Unpack tarball into dest as a git repository tagged `pristine`.

    Idempotent: a finished tree is returned as it is.  The tree is built in a
    temporary directory next to dest and renamed into place only when complete, so
    an interrupted run leaves nothing that a later run would trust.
    """
    dest = Path(dest)
    if is_pristine_repo(dest):
        log.info("%s: already prepared", dest)
        return check_kernel_tree(dest)
    if dest.exists():
        raise TreeError(f"{dest}: exists but is not a finished sem2mutex tree: "
                        f"remove it (rm -rf {dest}) and run `make setup` again")
    if not tarball.is_file():
        package = tarball.name.split(".tar")[0]
        raise TreeError(f"{tarball}: not found: install it with "
                        f"`apt-get install {package}` (or run `make setup`)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    require_free_space(dest.parent)

    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest.parent) as tmp:
        started = time.monotonic()
        log.info("unpacking %s (about a minute)", tarball)
        untar = subprocess.run(["tar", "-xf", str(tarball), "-C", tmp],
                               capture_output=True, text=True)
        if untar.returncode != 0:
            raise TreeError(f"{tarball}: tar failed: {untar.stderr.strip()[-200:]}")
        tops = list(Path(tmp).iterdir())
        if len(tops) != 1:
            raise TreeError(f"{tarball}: expected one top directory, "
                            f"found {sorted(p.name for p in tops)}")
        unpacked = tops[0]
        tree = check_kernel_tree(unpacked)
        log.info("recording the pristine %s tree as a git commit (about a minute)",
                 tree.version)
        git(unpacked, "init", "-q")
        git(unpacked, "config", "core.autocrlf", "false")
        git(unpacked, "config", "gc.auto", "0")
        # -f: the tarball holds a few files the kernel's .gitignore names; keep them all.
        git(unpacked, "add", "-f", "-A", ".")
        git(unpacked, "commit", "-q", "-m", f"Linux {tree.version} as shipped by "
            f"Debian in {tarball.name}", env=GIT_ENV)
        git(unpacked, "tag", PRISTINE_TAG)
        unpacked.rename(dest)
        log.info("%s: Linux %s ready in %.0f s", dest, tree.version,
                 time.monotonic() - started)
    return check_kernel_tree(dest)


def make_worktree(kernel: Path, dest: Path, ref: str = "HEAD") -> Path:
    """A private, writable copy of `kernel` at dest, never the tree itself.

    A git tree gets a detached worktree (cheap, shares objects); anything else is
    copied and committed so that `git am` and `git diff` work on it the same way.
    An existing worktree is reset to ref and cleaned.
    """
    kernel, dest = Path(kernel).resolve(), Path(dest)
    check_kernel_tree(kernel)
    if (dest / ".git").exists() and _source_of(dest) != kernel:
        # One work area serves both trees (and a user's): a worktree made from
        # another tree has none of this tree's commits to reset to.
        log.info("%s was made from %s: making it again from %s",
                 dest, _source_of(dest), kernel)
        _remove_worktree(dest)
    if (dest / ".git").exists():
        git_dir = Path(dest, git(dest, "rev-parse", "--git-dir").strip())
        if (git_dir / "rebase-apply").exists():
            git(dest, "am", "--abort")
        # ref names a commit of the kernel's tree: "HEAD" resolved in dest would be
        # the worktree's own HEAD, and the commits made there would survive.
        base = (git(kernel, "rev-parse", ref).strip() if (kernel / ".git").exists()
                else PRISTINE_TAG)
        git(dest, "reset", "-q", "--hard", base)
        git(dest, "clean", "-q", "-fdx")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    if (kernel / ".git").exists():
        git(kernel, "worktree", "prune")
        git(kernel, "worktree", "add", "-q", "--detach", str(dest.resolve()), ref)
        return dest
    require_free_space(dest.parent)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(kernel, tmp, symlinks=True)
    git(tmp, "init", "-q")
    git(tmp, "add", "-f", "-A", ".")
    git(tmp, "commit", "-q", "-m", f"copy of {kernel}", env=GIT_ENV)
    git(tmp, "tag", PRISTINE_TAG)
    (tmp / ".git" / COPY_SOURCE).write_text(f"{kernel}\n")
    tmp.rename(dest)
    return dest


# In a copy's .git: the tree it was copied from (a worktree knows its repository).
COPY_SOURCE = "sem2mutex-source"


def _source_of(dest: Path) -> Path | None:
    """The tree the worktree or copy at dest was made from (None: not known)."""
    marker = dest / ".git" / COPY_SOURCE
    if marker.is_file():
        return Path(marker.read_text().strip())
    try:
        common = Path(git(dest, "rev-parse", "--path-format=absolute",
                          "--git-common-dir").strip())
    except TreeError:
        return None
    return common.parent.resolve() if common.name == ".git" else None


def _remove_worktree(dest: Path) -> None:
    owner = _source_of(dest)
    shutil.rmtree(dest)
    if owner is not None and (owner / ".git").is_dir():
        git(owner, "worktree", "prune")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m classify.tree",
        description="Prepare and check the kernel trees sem2mutex works on.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    prep = sub.add_parser("prepare", help="unpack the Debian tarball as a git tree "
                          "whose first commit is tagged `pristine` (idempotent)")
    prep.add_argument("--tarball", type=Path, default=DEFAULT_TARBALL)
    prep.add_argument("--dest", type=Path, required=True)
    check = sub.add_parser("check", help="verify that a path is a kernel tree; "
                           "print its version")
    check.add_argument("kernel", type=Path)
    wt = sub.add_parser("worktree", help="make (or reset) a writable worktree or copy "
                        "of a kernel tree")
    wt.add_argument("kernel", type=Path)
    wt.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="tree: %(message)s")
    try:
        if args.cmd == "prepare":
            tree = prepare_pristine(args.tarball, args.dest)
        elif args.cmd == "check":
            tree = check_kernel_tree(args.kernel)
        else:
            print(make_worktree(args.kernel, args.dest))
            return 0
    except TreeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{tree.path}: Linux {tree.version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
