"""What the tree says beyond the audit about how a report can name a semaphore.

    lockdep maps  a `struct lockdep_map` the code acquires beside a semaphore's down()
                  (printk's console_lock_dep_map, named "console_lock", beside
                  down(&console_sem)): a report's lock class with the map's name is
                  that semaphore
    macro helpers a function that takes a semaphore through a macro of its file
                  (console_lock() through down_console_sem()): a helper of that
                  semaphore, as a function with the down() in its own body is

Read from the source files the audit's operations are in, next to the operations'
lines, so it costs a few hundred file reads; never a list typed by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_ACQUIRE = re.compile(r"\b(?:mutex|rwsem|lock_map|lock|spin|rwlock|seqcount)_acquire\w*\(\s*"
                      r"&?\(?(?P<map>[\w.>-]+?)\)?\s*[,)]")
_NEAR = 6           # lines between a semaphore operation and its map's acquire
_DEFINE = re.compile(r"^\s*#\s*define\s+(?P<name>\w+)\(")
_FUNC_NAME = re.compile(r"(?P<name>[A-Za-z_]\w*)\s*\([^;]*$")


@dataclass
class TreeLinks:
    maps: dict[str, tuple[str, str]] = field(default_factory=dict)      # name -> id, where
    helpers: dict[str, tuple[str, str]] = field(default_factory=dict)   # function -> id, how


def _map_name(lines: list[str], var: str) -> str:
    """The lockdep name a map variable is given in its file, or ""."""
    var = re.escape(var.split(">")[-1].split(".")[-1])
    pats = [re.compile(rf"STATIC_LOCKDEP_MAP_INIT\(\s*\"(?P<n>[^\"]+)\"\s*,\s*&?[\w.>-]*{var}\b"),
            re.compile(rf"lockdep_init_map\w*\(\s*&?[\w.>-]*{var}\s*,\s*\"(?P<n>[^\"]+)\"")]
    for n, line in enumerate(lines):
        if re.search(rf"struct lockdep_map\s+{var}\s*=", line):
            for nxt in lines[n:n + 4]:
                if m := re.search(r"\.name\s*=\s*\"(?P<n>[^\"]+)\"", nxt):
                    return m["n"]
        for pat in pats:
            if m := pat.search(line):
                return m["n"]
    return ""


def _enclosing(lines: list[str], n: int) -> str:
    """The function whose body holds line n (kernel style: "{" in column 0)."""
    for k in range(n, 0, -1):
        if lines[k].startswith("}"):
            return ""
        if lines[k].startswith("{"):
            for back in range(k - 1, max(k - 4, -1), -1):
                if m := _FUNC_NAME.search(lines[back]):
                    return m["name"]
            return ""
    return ""


def _macro_of(lines: list[str], n: int) -> str:
    """The macro whose definition holds line n, or ""."""
    for k in range(n, max(n - 8, -1), -1):
        if m := _DEFINE.match(lines[k]):
            return m["name"]
        if k < n and not lines[k].rstrip().endswith("\\"):
            return ""
    return ""


def _scan_file(path: str, lines: list[str], ops: list[tuple[int, str]],
               links: TreeLinks) -> None:
    """ops: (line, id) of the semaphore operations in this file."""
    ids = {sid for _, sid in ops}
    for line_no, sid in ops:
        macro = _macro_of(lines, line_no - 1)
        block = macro or _enclosing(lines, line_no - 1)
        for k in range(max(line_no - 1 - _NEAR, 0), min(line_no + _NEAR, len(lines))):
            if (m := _ACQUIRE.search(lines[k])) and block and \
                    (_macro_of(lines, k) or _enclosing(lines, k)) == block and \
                    (name := _map_name(lines, m["map"])):
                links.maps.setdefault(name, (sid, f"{path}:{k + 1}"))
        if not macro or len(ids) != 1:
            continue
        call = re.compile(rf"\b{macro}\(")
        for k, line in enumerate(lines):
            if call.search(line) and not _DEFINE.match(line) and (func := _enclosing(lines, k)):
                links.helpers.setdefault(func, (sid, f"through {macro}() at {path}:{k + 1}"))


# (file, its mtime and size, path, ops) -> its links: a file is read again only once
# it changed (triage asks for the same tree on every log)
_SCANNED: dict[tuple, TreeLinks] = {}


def _scanned(file: Path, path: str, ops: tuple[tuple[int, str], ...]) -> TreeLinks | None:
    """The links of one file (None if it cannot be read); the result is not to be
    changed."""
    try:
        st = file.stat()
    except OSError:
        return None
    key = (str(file), st.st_mtime_ns, st.st_size, path, ops)
    if key not in _SCANNED:
        try:
            lines = file.read_text(errors="replace").splitlines()
        except OSError:
            return None
        one = TreeLinks()
        _scan_file(path, lines, list(ops), one)
        _SCANNED[key] = one
    return _SCANNED[key]


def scan(tree: Path, ops: list[tuple[str, int, str]]) -> TreeLinks:
    """The lockdep maps and macro helpers of the audit's semaphores in the tree (ops:
    (path, line, id) of each operation the audit found); a name two semaphores claim
    is dropped."""
    per_file: dict[str, list[tuple[int, str]]] = {}
    for path, line, sid in ops:
        per_file.setdefault(path, []).append((line, sid))
    links = TreeLinks()
    claims: dict[str, set[str]] = {}
    for path, ops in sorted(per_file.items()):
        one = _scanned(tree / path, path, tuple(sorted(ops)))
        if one is None:
            continue
        for name, (sid, where) in one.maps.items():
            claims.setdefault(name, set()).add(sid)
            links.maps.setdefault(name, (sid, where))
        for func, link in one.helpers.items():
            links.helpers.setdefault(func, link)
    links.maps = {n: v for n, v in links.maps.items() if len(claims[n]) == 1}
    return links
