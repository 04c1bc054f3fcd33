"""What a lock protects: the other members of its struct that the code uses
while holding it.  A patch says so in the comment checkpatch asks of a
`struct mutex` and in its message, which a list of the functions taking the
lock does not say.

Read from the tree the audit read (its line numbers): for each take of a
member lock, `base->lock` or `base.lock` on the take's line, the region up to
the first release after it in the same function, and every `base->m` or
`base.m` there that changes m (an assignment, ++/--, its address taken:
list_add(); not an atomic bit operation) whose m is a member of the lock's struct and not a lock
itself, and which those files change nowhere else (the function that
initialises the lock aside: nobody else has the object yet).  Members only
read (a device pointer followed), or changed without the lock too, are not
what the lock protects.  A lock that is no member (a global, a static) gets
the same reading for the variables of its file (guarded_globals): vchiq's
g_free_fragments list head (static ones only: a global one may change in
any file); there the
functions that initialise any lock of the file count as initialising
(vchiq_platform_init() sets up the free list before anybody takes the lock).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from classify.convert.csource import function_spans, strip_comments
from classify.convert.finish import lock_name
from classify.convert.rename import struct_body


# a member declaration of a struct body: its name before `;`, an array or a bit width
_MEMBER = re.compile(r"^[^;{}]*?\b([A-Za-z_]\w*)\s*(?:\[[^]]*\])*\s*(?::\s*\d+\s*)?;", re.M)
_LOCK_TYPE = re.compile(r"\b(spinlock_t|raw_spinlock_t|rwlock_t|struct\s+(mutex|semaphore|"
                        r"rw_semaphore|completion))\b")


# atomic bit operations and atomics change a member without needing the lock
_ATOMIC = re.compile(r"\b(?:__)?(?:test_and_)?(?:set|clear|change)_bit\s*\(|\batomic\w*\s*\("
                     r"|\brefcount_\w+\s*\(")


def _base(line: str, lock: str) -> tuple[str, str] | None:
    """(`fedata`, `->`) for `down(&fedata->socket_lock)` on line."""
    m = re.search(rf"([A-Za-z_][\w\]\[.>-]*?)\s*(->|\.)\s*{re.escape(lock)}\b", line)
    return (m.group(1), m.group(2)) if m else None


def _regions(sem: dict) -> list[tuple[str, int, int]]:
    """(path, first line, last line) of the code between each take and the
    last release after it in the same function before its next take: an early
    return releases too, and the code after it is still held."""
    ops = sorted(sem.get("ops", []), key=lambda o: (o["path"], o["line"]))
    out = []
    for o in ops:
        if not o["op"].startswith("down") or not o.get("function"):
            continue
        same = [u for u in ops if u["path"] == o["path"]
                and u.get("function") == o["function"] and u["line"] > o["line"]]
        nxt = min((u["line"] for u in same if u["op"].startswith("down")), default=1 << 30)
        ends = [u["line"] for u in same if u["op"] == "up" and u["line"] < nxt]
        if ends:
            out.append((o["path"], o["line"], max(ends)))
    return out


def guarded_members(sem: dict, read: Callable[[str], str]) -> list[str]:
    """The members of the lock's struct used while it is held, most used first;
    [] for a lock that is not a member or when none is found.  read: a file of
    the audited tree by its path."""
    if sem.get("declared", {}).get("kind") != "member":
        return []
    lock = lock_name(sem)
    body = struct_body(strip_comments(read(sem["declared"]["path"])),
                       sem["declared"].get("struct", ""))
    members = {m.group(1) for m in _MEMBER.finditer(body) if not _LOCK_TYPE.search(m.group(0))}
    seen: Counter[str] = Counter()
    first: dict[str, int] = {}
    for path, start, end in _regions(sem):
        lines = strip_comments(read(path)).split("\n")
        if end > len(lines):
            continue
        base = _base(lines[start - 1], lock)
        if base is None:
            continue
        for n in range(start, end - 1):
            for name in _changed(lines[n], (re.escape(base[0]), re.escape(base[1]))):
                if name != lock and name in members:
                    seen[name] += 1
                    first.setdefault(name, len(first))
    elsewhere = _changed_elsewhere(sem, read)
    return sorted((n for n in seen if n not in elsewhere),
                  key=lambda n: (-seen[n], first[n]))


# the bitmap functions that write their first argument, none of them atomic
_BITMAP_WRITER = (r"bitmap_(?:set|clear|zero|fill|copy|complement|and|or|xor|andnot|"
                  r"shift_left|shift_right|replace)")


# any object's member: `d->x.y`, `priv.list`
_ANY_BASE = (r"[A-Za-z_]\w*(?:\s*(?:->|\.)\s*\w+)*?", r"(?:->|\.)")


def _changed(line: str, base: tuple[str, str]) -> list[str]:
    """The members that line changes (none by an atomic operation); base: the
    object and the operator before the member, as regular expressions."""
    if _ATOMIC.search(line):
        return []           # set_bit(), atomic_inc(): needs no lock
    at = rf"{base[0]}\s*{base[1]}\s*(\w+)"
    # &base->m, but not &base->m->x: the address of what m points to
    change = re.compile(rf"&\s*{at}(?!\s*(?:->|\.))|(?:\+\+|--)\s*{at}|(?<![\w>.&]){at}\s*"
                        r"(?:\[[^]]*\]\s*|(?:\.|->)\s*\w+\s*)*(?:[-+*/|&^]?=(?!=)|\+\+|--)"
                        # a bitmap the member points to, written by a non-atomic
                        # writer: bitmap_set(d->vlan_bitmap, vid, 1)
                        rf"|\b{_BITMAP_WRITER}\s*\(\s*{at}\s*[,)]")
    return [next(g for g in m.groups() if g) for m in change.finditer(line)]


def _changed_elsewhere(sem: dict, read: Callable[[str], str]) -> set[str]:
    """Members changed, through any pointer, outside the regions where the lock
    is held and outside the functions that initialise it, in the files of its
    operations."""
    held: dict[str, set[int]] = {}
    for path, start, end in _regions(sem):
        held.setdefault(path, set()).update(range(start, end + 1))
    inits = {(i["path"], i["line"]) for i in sem.get("init", [])}
    out: set[str] = set()
    for path in sorted({o["path"] for o in sem.get("ops", [])}):
        lines = strip_comments(read(path)).split("\n")
        spared = set(held.get(path, ()))
        for first, last in function_spans(lines):
            if any(p == path and first <= n <= last for p, n in inits):
                spared.update(range(first, last + 1))
        for n, line in enumerate(lines, 1):
            if n not in spared:
                out.update(_changed(line, _ANY_BASE))
    return out


# a variable at file scope: `static char *g_free_fragments;`, `u32 x = 0;`
_FILE_VAR = re.compile(r"^(?!extern\b|typedef\b|return\b)(?:[A-Za-z_][\w\s]*?[\s*]+)"
                       r"([A-Za-z_]\w*)\s*(?:\[[^]]*\])*\s*(?:=[^;]*)?;", re.M)
_INITIALISES = re.compile(r"\b(?:sema_init|mutex_init|spin_lock_init|init_completion|"
                          r"init_waitqueue_head)\s*\(|\b__(?:init|exit)\b")


# a static variable a macro defines: `static LIST_HEAD(bnx2x_prev_list);`
_FILE_VAR_MACRO = re.compile(r"^static\s+(?:LIST_HEAD|HLIST_HEAD|DEFINE_IDR|DEFINE_IDA|"
                             r"DEFINE_XARRAY(?:_ALLOC)?|DEFINE_HASHTABLE)\s*\(\s*(\w+)", re.M)


def _file_variables(text: str) -> set[str]:
    """The static variables a file defines, locks and completions aside: a
    global one may be changed in any file (esas2r_init.c frees and clears
    esas2r_ioctl.c's buffer without the lock)."""
    return {m.group(1) for m in _FILE_VAR.finditer(text)
            if m.group(0).startswith("static") and "(" not in m.group(0)
            and not _LOCK_TYPE.search(m.group(0))} | set(_FILE_VAR_MACRO.findall(text))


def _bare_changes(line: str, names: set[str]) -> list[str]:
    """The file-scope names that line changes: assigned, ++/--, address taken
    (a list walked by list_for_each*() is only read there)."""
    if _ATOMIC.search(line):
        return []
    line = re.sub(r"\blist_for_each\w*\s*\(.*", "", line)
    out = []
    for m in re.finditer(r"(?<![\w>.])(&\s*)?([A-Za-z_]\w*)\b(\s*(?:\[[^]]*\]\s*)*"
                         r"(?:[-+*/|&^]?=(?!=)|\+\+|--))?", line):
        if m.group(2) in names and (m.group(1) or m.group(3)):
            out.append(m.group(2))
    out += [n for n in re.findall(r"(?:\+\+|--)\s*([A-Za-z_]\w*)", line) if n in names]
    return out


def guarded_globals(sem: dict, read: Callable[[str], str]) -> list[str]:
    """The static variables of the file of a global or static lock that are
    changed only while it is held (initialising functions aside), most
    changed first."""
    if sem.get("declared", {}).get("kind") not in ("global", "static"):
        return []
    path = sem["declared"]["path"]
    lock = lock_name(sem)
    text = strip_comments(read(path))
    names = _file_variables(text) - {lock}
    held: set[int] = set()
    for p, start, end in _regions(sem):
        if p == path:
            held.update(range(start + 1, end))
    if not held or not names:
        return []
    lines = text.split("\n")
    spared = set(held)
    for first, last in function_spans(lines):
        if _INITIALISES.search("\n".join(lines[first - 1:last])):
            spared.update(range(first, last + 1))
    seen: Counter[str] = Counter()
    elsewhere: set[str] = set()
    for n, line in enumerate(lines, 1):
        changed = _bare_changes(line, names)
        if n in held:
            seen.update(changed)
        elif n not in spared:
            elsewhere.update(changed)
    return sorted((n for n in seen if n not in elsewhere), key=lambda n: (-seen[n], n))
