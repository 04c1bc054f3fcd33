"""The prefilter: the files of a tree that can declare or use a semaphore, found
with `git grep`, or `git grep --no-index` on a tree git does not track (a copy, an
unpacked tarball): the same files either way, in seconds.  In a git tree, the files
git does not track yet (a maintainer's new driver) are read too, as they are; those
it ignores are left out, and named in a warning.

A tree with a .git where git tracks no file (`git init` and nothing added) would
give no file at all: it is refused in one line rather than audited as empty.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
from pathlib import Path

from classify.census.grep import tree_key, untracked
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
    # records them in the pristine trees), dot directories left out as git does;
    # a git tree: its tracked files as they are in the work tree (new_users() adds
    # those it does not track yet, ignored_users() names those it ignores)
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


def users(root: Path, files: list[str]) -> list[str]:
    """Those of files (relative) that mention the semaphore API, as `git grep -l -I`
    finds them: symlinks and binary files are not."""
    rx = re.compile(PREFILTER.encode())
    out = []
    for rel in files:
        if rel.startswith(EXCLUDE_PREFIXES) or rel in EXCLUDE_FILES or \
                os.path.islink(root / rel):
            continue
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        if b"\0" not in data[:8000] and rx.search(data):
            out.append(rel)
    return out


def ignored_users(root: Path) -> list[str]:
    """The .c and .h files of a git tree that git ignores and does not track, and that
    mention the semaphore API: the census leaves them out (generated files, mostly)."""
    res = subprocess.run(["git", "--no-optional-locks", "-C", str(root), "ls-files", "-z",
                          "--others", "--ignored", "--exclude-standard", "--", "*.c", "*.h"],
                         capture_output=True)
    if res.returncode != 0:
        return []
    return users(root, sorted(os.fsdecode(p) for p in res.stdout.split(b"\0") if p))


def candidate_files(root: Path, cache=None) -> list[str]:
    """Files (relative paths) that can declare or use a semaphore.  cache:
    get(key)/put(key, value); the answer for a clean git tree is kept under its
    commit (the grep is most of a warm audit's time).  A file git ignores is left
    out, and named in a warning."""
    root = Path(root)
    if root.is_file():
        return [root.name]
    if (root / ".git").exists():
        left_out = ignored_users(root)
        if left_out:
            log.warning("warning: %d file(s) that git ignores mention the semaphore API "
                        "and are left out of the audit: %s%s (git add -f them to audit "
                        "them)", len(left_out), ", ".join(left_out[:10]),
                        f" (+{len(left_out) - 10} more)" if len(left_out) > 10 else "")
    tree = tree_key(root) if cache is not None else ""
    key = "prefilter-" + hashlib.sha256("\0".join(
        [tree, PREFILTER, *EXCLUDE_PREFIXES, *EXCLUDE_FILES]).encode()).hexdigest()
    got = cache.get(key) if tree else None
    if got is not None:
        return got
    files = _grep_tree(root)
    if tree:
        cache.put(key, files)
    return files


def _grep_tree(root: Path) -> list[str]:
    has_git = (root / ".git").exists()
    if has_git and tracks_nothing(root):
        raise TreeError(f"{root}: git tracks no file here (a `git init` with nothing "
                        "added?): commit the tree, or remove its .git to audit the "
                        "files as they are")
    res = _git_grep(root, no_index=not has_git)
    if res.returncode in (0, 1):
        files = res.stdout.splitlines() + (users(root, untracked(root)) if has_git else [])
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
