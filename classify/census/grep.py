"""Which files of a tree name some identifiers: one `git grep` for a batch of names
(a whole-word PCRE alternation shaped as a trie, much faster than many -e), with
`--no-index` on a tree git does not track; in a git tree, the files it does not track
yet (and does not ignore) are searched too.  The answer is cached under the commit
of a clean git tree (a tree with local changes is grepped every time).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger("sem2mutex.callgraph")

GREP_VERSION = "grep-1"


def word_trie(names: list[str]) -> str:
    """A regular expression matching exactly the names, as whole words."""
    trie: dict = {}
    for name in names:
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        alts = [re.escape(k) + emit(v) for k, v in sorted(node.items()) if k]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in node:
            return "(?:" + body + ")?"
        return body

    return r"\b" + emit(trie) + r"\b"


def tree_key(root: Path) -> str:
    """The commit of a clean git tree, "" otherwise: a file changed, or one git does
    not track yet (and does not ignore), makes it a tree with local changes.  The
    tree is only read (--no-optional-locks: git status does not refresh its index)."""
    if not (root / ".git").exists():
        return ""
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                          capture_output=True, text=True)
    status = subprocess.run(["git", "--no-optional-locks", "-C", str(root), "status",
                             "--porcelain"], capture_output=True, text=True)
    if head.returncode or status.returncode or status.stdout.strip():
        return ""
    return head.stdout.strip()


def untracked(root: Path, pathspec: tuple[str, ...] = ("*.c", "*.h")) -> list[str]:
    """The files of a git tree that git does not track yet and does not ignore (a
    maintainer's new files), relative: `git grep` searches only the tracked ones."""
    res = subprocess.run(["git", "--no-optional-locks", "-C", str(root), "ls-files", "-z",
                          "--others", "--exclude-standard", "--", *pathspec],
                         capture_output=True)
    if res.returncode != 0:
        return []
    return sorted(os.fsdecode(p) for p in res.stdout.split(b"\0") if p)


def grep_names(root: Path, names: list[str], cache=None,
               pathspec: tuple[str, ...] = ("*.c", "*.h"),
               tree: str | None = None) -> dict[str, list[str]]:
    """name -> the files (relative, sorted) where it occurs as a whole word.
    tree: tree_key(root), when the caller has it already."""
    root = Path(root)
    names = sorted(set(names))
    if not names:
        return {}
    if cache is None:
        tree = ""
    elif tree is None:
        tree = tree_key(root)
    key = ""
    if tree:
        key = "grep-" + hashlib.sha256("\0".join(
            [GREP_VERSION, tree, *pathspec, *names]).encode()).hexdigest()
        got = cache.get(key)
        if got is not None:
            return got
    out = _run_grep(root, names, pathspec)
    if key:
        cache.put(key, out)
    return out


def _run_grep(root: Path, names: list[str], pathspec: tuple[str, ...]) -> dict[str, list[str]]:
    with tempfile.NamedTemporaryFile("w", suffix=".pat") as pat:
        pat.write(word_trie(names) + "\n")
        pat.flush()
        cmd = ["git", "-C", str(root), "grep", "-I", "-o", "-z", "-P", "-f", pat.name]
        has_git = (root / ".git").exists()
        if not has_git:
            cmd.insert(4, "--no-index")
        res = subprocess.run(cmd + ["--", *pathspec], capture_output=True,
                             text=True, errors="surrogateescape")
        out = res.stdout
        # the files git does not track yet, as they are (--no-index: by their names)
        new = untracked(root, pathspec) if has_git and res.returncode in (0, 1) else []
        for i in range(0, len(new), 500):
            more = subprocess.run(cmd[:4] + ["--no-index"] + cmd[4:] + ["--", *new[i:i + 500]],
                                  capture_output=True, text=True, errors="surrogateescape")
            out += more.stdout if more.returncode in (0, 1) else ""
    if res.returncode not in (0, 1):
        log.warning("git grep failed in %s: %s", root, res.stderr.strip()[:200])
        return {}
    hits: dict[str, set[str]] = {}
    for line in out.splitlines():
        path, _, name = line.partition("\0")
        # -z ends the line number field with NUL too when -n is given; not here
        hits.setdefault(name, set()).add(path)
    return {name: sorted(files) for name, files in sorted(hits.items())}
