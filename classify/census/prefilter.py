"""The prefilter: the files of a tree that can declare or use a semaphore, found
with `git grep` (or `git grep --no-index` on a tree git does not track).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from pathlib import Path

log = logging.getLogger("sem2mutex.census")


# What makes a file matter; the same expression for git grep -P and for Python re.
PREFILTER = (r"struct semaphore|DEFINE_SEMAPHORE|__SEMAPHORE_INITIALIZER|sema_init|"
             r"\b(?:down|down_interruptible|down_killable|down_trylock|down_timeout|up)[ \t]*\(")


# The implementation of semaphores, and trees of user-space code, are not users.
EXCLUDE_PREFIXES = ("tools/", "Documentation/", "scripts/", "usr/")


EXCLUDE_FILES = ("include/linux/semaphore.h", "kernel/locking/semaphore.c")


def candidate_files(root: Path) -> list[str]:
    """Files (relative paths) that can declare or use a semaphore."""
    root = Path(root)
    if root.is_file():
        return [root.name]
    if (root / ".git").exists():
        cmd = ["git", "-C", str(root), "grep", "-l", "-I", "-P", PREFILTER, "--",
               "*.c", "*.h"] + [f":!{p.rstrip('/')}" for p in EXCLUDE_PREFIXES]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode in (0, 1):
            files = res.stdout.split()
        else:  # not a usable git tree (e.g. a bare copy): walk it
            log.warning("git grep failed in %s, walking the tree", root)
            files = _walk_grep(root)
    else:
        files = _walk_grep(root)
    return sorted(f for f in files
                  if not f.startswith(EXCLUDE_PREFIXES) and f not in EXCLUDE_FILES)


def _walk_grep(root: Path) -> list[str]:
    """What `git grep -l -I` finds in a tree that is not a git repository: symlinks
    (a git tree records them as links, not files) and binary files are skipped."""
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
