"""The prefilter: the files of a tree that can declare or use a semaphore, found
with `git grep`, or `git grep --no-index` on a tree git does not track (a copy, an
unpacked tarball): the same files either way, in seconds.

A tree with a .git where git tracks no file (`git init` and nothing added) would
give no file at all: it is refused in one line rather than audited as empty.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from pathlib import Path

from classify.tree import TreeError

log = logging.getLogger("sem2mutex.census")


# What makes a file matter; the same expression for git grep -P and for Python re.
PREFILTER = (r"struct semaphore|DEFINE_SEMAPHORE|__SEMAPHORE_INITIALIZER|sema_init|"
             r"\b(?:down|down_interruptible|down_killable|down_trylock|down_timeout|up)[ \t]*\(")


# The implementation of semaphores, and trees of user-space code, are not users.
EXCLUDE_PREFIXES = ("tools/", "Documentation/", "scripts/", "usr/")


EXCLUDE_FILES = ("include/linux/semaphore.h", "kernel/locking/semaphore.c")


def _git_grep(root: Path, no_index: bool) -> subprocess.CompletedProcess:
    # --no-index: every file, the ones a .gitignore names included (as `git add -f`
    # records them in the pristine trees), dot directories left out as git does
    opts = ["--no-index", "--no-exclude-standard"] if no_index else []
    skip = [f":!{p.rstrip('/')}" for p in EXCLUDE_PREFIXES]
    if no_index:
        skip.append(":(exclude,glob)**/.*/**")
    cmd = ["git", "-C", str(root), "grep", *opts, "-l", "-I", "-P", PREFILTER, "--",
           "*.c", "*.h", *skip]
    return subprocess.run(cmd, capture_output=True, text=True, errors="surrogateescape")


def tracks_nothing(root: Path) -> bool:
    """True for a git tree whose index holds no file (git grep would search nothing)."""
    res = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True)
    return res.returncode == 0 and not res.stdout.strip()


def candidate_files(root: Path) -> list[str]:
    """Files (relative paths) that can declare or use a semaphore."""
    root = Path(root)
    if root.is_file():
        return [root.name]
    has_git = (root / ".git").exists()
    if has_git and tracks_nothing(root):
        raise TreeError(f"{root}: git tracks no file here (a `git init` with nothing "
                        "added?): commit the tree, or remove its .git to audit the "
                        "files as they are")
    res = _git_grep(root, no_index=not has_git)
    if res.returncode in (0, 1):
        files = res.stdout.splitlines()
    else:  # git cannot read it (a broken .git): walk it
        log.warning("git grep failed in %s (%s), walking the tree", root,
                    res.stderr.strip()[:200])
        files = _walk_grep(root)
    return sorted(f for f in files
                  if not f.startswith(EXCLUDE_PREFIXES) and f not in EXCLUDE_FILES)


def _walk_grep(root: Path) -> list[str]:
    """What `git grep -l -I` finds in a tree git cannot read: symlinks (a git tree
    records them as links, not files) and binary files are skipped."""
    rx = re.compile(PREFILTER)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for fn in filenames:
            full = os.path.join(dirpath, fn)
            if not fn.endswith((".c", ".h")) or os.path.islink(full):
                continue
            try:
                with open(full, "rb") as fh:
                    data = fh.read()
            except OSError as err:
                log.warning("%s: %s", full, err)
                continue
            if b"\0" not in data[:8000] and rx.search(data.decode(errors="replace")):
                out.append(os.path.relpath(full, root))
    return out
