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
initialises the lock aside: nobody else has the object yet).  An entry of
an array (`m[i] = x`) is a change of its own: the array may be allocated
without the lock.  Members only
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


_IDENT = re.compile(r"[A-Za-z_]\w*")


def _functions(lines: list[str], static: bool = False) -> dict[str, tuple[int, int]]:
    """name -> (first, last line) of each function the file defines (static:
    only those no other file may call)."""
    out = {}
    for first, last in function_spans(lines):
        header = " ".join(lines[first - 1:last]).split("{", 1)[0]
        m = re.search(r"(\w+)\s*\(", header)
        if m and (not static or re.search(r"\bstatic\b", header[:m.start()])):
            out[m.group(1)] = (first, last)
    return out


def _only_from(lines: list[str], where: set[int]) -> dict[str, tuple[int, int]]:
    """The static functions every reference to which is on a line of where, or
    in a function already found (to any depth): called only there, their bodies
    run there too (hinic's cmd_chain_prod_idx_inc(), called only while
    api_cmd() holds the lock).  A function whose address is taken (a
    callback: hinic's cable_plug_event(), registered while the device is set
    up) may run anywhere, and is never found."""
    funcs = _functions(lines, static=True)
    refs: dict[str, list[int]] = {name: [] for name in funcs}
    taken: set[str] = set()          # a reference that is no call: its address taken
    for n, line in enumerate(lines, 1):
        for m in _IDENT.finditer(line):
            if m.group(0) in refs:
                refs[m.group(0)].append(n)
                if not re.match(r"\s*\(", line[m.end():]):
                    taken.add(m.group(0))
    found: dict[str, tuple[int, int]] = {}
    inside = set(where)
    grew = True
    while grew:
        grew = False
        for name, (first, last) in funcs.items():
            if name in taken:
                continue
            outside = [n for n in refs[name] if not first <= n <= last]
            if name not in found and outside and all(n in inside for n in outside):
                found[name] = (first, last)
                inside.update(range(first, last + 1))
                grew = True
    return found


_INNER_LOCK = re.compile(r"\b(?:raw_)?(?:spin_lock|mutex_lock|write_lock|read_lock)\w*\s*\(")
_INNER_UNLOCK = re.compile(r"\b(?:raw_)?(?:spin_unlock|mutex_unlock|write_unlock|"
                           r"read_unlock)\w*\s*\(")


def _not_under_inner_locks(lines: list[str], first: int, last: int) -> list[int]:
    """The line numbers of first..last outside the sections of other locks
    taken there: a change under an inner spinlock (hinic's event_flag, set
    under mbox_lock, which its interrupt-time reader takes) is that lock's."""
    out, depth = [], 0
    for n in range(first, last + 1):
        line = lines[n - 1]
        depth += len(_INNER_LOCK.findall(line))
        if depth <= 0:
            out.append(n)
        depth = max(0, depth - len(_INNER_UNLOCK.findall(line)))
    return out


def _params_of(lines: list[str], span: tuple[int, int], struct: str) -> list[str]:
    """The parameters of the function on span that point to a struct `struct`."""
    header = " ".join(lines[span[0] - 1:span[1]]).split("{", 1)[0]
    return re.findall(rf"\bstruct\s+{re.escape(struct)}\s*\*\s*(\w+)\s*[,)]", header)


def _regions_by_path(sem: dict) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for path, start, end in _regions(sem):
        out.setdefault(path, []).append((start, end))
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

    macros: dict[str, list[str]] = {}

    def count(line: str, base: tuple[str, str]) -> None:
        for name in _changed(line, base, macros):
            if _member(name) != lock and _member(name) in members:
                seen[name] += 1
                first.setdefault(name, len(first))

    struct = sem["declared"].get("struct", "")
    commented: list[str] = []
    for path, regions in _regions_by_path(sem).items():
        text = read(path)
        lines = strip_comments(text).split("\n")
        macros = _macro_writes(lines)
        raw = text.split("\n")
        commented += [m for start, _ in regions
                      for m in _named_above(raw, start, members - {lock})]
        for start, end in regions:
            if end > len(lines) or (base := _base(lines[start - 1], lock)) is None:
                continue
            for n in _not_under_inner_locks(lines, start + 1, end - 1):
                count(lines[n - 1], (re.escape(base[0]), re.escape(base[1])))
        # what the functions called only while it is held change through their
        # parameter of the lock's struct
        held = {n for start, end in regions for n in range(start, end + 1)}
        for span in _only_from(lines, held).values():
            for param in _params_of(lines, span, struct):
                for n in _not_under_inner_locks(lines, *span):
                    count(lines[n - 1], (re.escape(param), "->"))
    elsewhere = _changed_elsewhere(sem, read)
    found = _said(sorted((n for n in seen if not _clashes(n, elsewhere)),
                         key=lambda n: (-seen[n], first[n])))
    return found + [m for m in dict.fromkeys(commented)
                    if m not in found and f"{m}[]" not in found]


def _named_above(lines: list[str], take: int, members: set[str]) -> list[str]:
    """The members the driver's own comment right above a take names (hinic's
    `/* Lock the sync_msg_buf */` above down(&pf_to_mgmt->sync_msg_lock)):
    the authors' word for what the lock is for, where the code writes it
    through a call (prepare_mgmt_cmd(pf_to_mgmt->sync_msg_buf, ...)) that
    the reading above does not follow."""
    above: list[str] = []
    n = take - 2
    while n >= 0 and re.match(r"\s*(/\*|\*|//)", lines[n]):
        above.insert(0, lines[n])
        n -= 1
    words = re.findall(r"[A-Za-z_]\w*", " ".join(above))
    return [w for w in dict.fromkeys(words) if w in members]


# the bitmap functions that write their first argument, none of them atomic
_BITMAP_WRITER = (r"bitmap_(?:set|clear|zero|fill|copy|complement|and|or|xor|andnot|"
                  r"shift_left|shift_right|replace)")


# any object's member: `d->x.y`, `priv.list`
_ANY_BASE = (r"[A-Za-z_]\w*(?:\s*(?:->|\.)\s*\w+)*?", r"(?:->|\.)")


_DEFINE = re.compile(r"^#\s*define\s+(\w+)\(\s*(\w+)\s*\)\s+(.*)$")


def _macro_writes(lines: list[str]) -> dict[str, list[str]]:
    """The one-parameter macros of the file and the members their bodies
    change through the parameter, other such macros expanded (hinic's
    SYNC_MSG_ID_INC(p), `SYNC_MSG_ID(p) = ...` of `((p)->sync_msg_id)`)."""
    bodies: dict[str, tuple[str, str]] = {}
    for n, line in enumerate(lines):
        m = _DEFINE.match(line)
        if m:
            body, k = m.group(3), n
            while body.rstrip().endswith("\\") and k + 1 < len(lines):
                k += 1
                body = body.rstrip()[:-1] + " " + lines[k].strip()
            bodies[m.group(1)] = (m.group(2), body)
    out: dict[str, list[str]] = {}
    for name, (param, body) in bodies.items():
        for _ in range(3):          # the macros it uses, to a small depth
            for other, (p2, b2) in bodies.items():
                body = re.sub(rf"\b{other}\s*\(\s*(\w+)\s*\)",
                              lambda m: re.sub(rf"\b{p2}\b", m.group(1), b2), body)
        flat = re.sub(r"[()]", " ", body)       # ((p)->m) = ... reads as p->m = ...
        changed = _changed(flat, (re.escape(param), "->"))
        if changed:
            out[name] = changed
    return out


def _changed(line: str, base: tuple[str, str],
             macros: dict[str, list[str]] | None = None) -> list[str]:
    """What line changes of the members (none by an atomic operation): `m`
    for the member itself, `m[]` for an entry of the array it is or points to
    (hinic's `wqs->free_blocks[pos].page_idx = -1`: allocating the array
    elsewhere does not change its entries).  A flag set with `|=` changes the
    whole member: the read-modify-write races with any other bit's.  base:
    the object and the operator before the member, as regular expressions."""
    if _ATOMIC.search(line):
        return []           # set_bit(), atomic_inc(): needs no lock
    at = rf"{base[0]}\s*{base[1]}\s*(\w+)"
    out: list[str] = []
    # &base->m, but not &base->m->x: the address of what m points to;
    # a bitmap the member points to, written by a non-atomic writer:
    # bitmap_set(d->vlan_bitmap, vid, 1)
    whole = re.compile(rf"&\s*{at}(?!\s*(?:->|\.))|(?:\+\+|--)\s*{at}"
                       rf"|\b{_BITMAP_WRITER}\s*\(\s*{at}\s*[,)]")
    out += [next(g for g in m.groups() if g) for m in whole.finditer(line)]
    written = re.compile(rf"(?<![\w>.&]){at}(\s*(?:\[[^]]*\]\s*|(?:\.|->)\s*\w+\s*)*)"
                         r"([-+*/|&^]?=(?!=)|\+\+|--)")
    for m in written.finditer(line):
        name, path, _ = m.groups()
        out.append(f"{name}[]" if path.lstrip().startswith("[") else name)
    for name, members in (macros or {}).items():
        if re.search(rf"\b{name}\s*\(\s*{base[0]}\s*\)", line):
            out += members
    return out


def _member(key: str) -> str:
    """The member a change key is of: `free_blocks` for `free_blocks[]`."""
    return key.removesuffix("[]")


def _clashes(key: str, elsewhere: set[str]) -> bool:
    """A change under the lock that some change without it undoes: the member
    itself changed elsewhere clashes with any change of it, an entry only with
    another entry's."""
    return key in elsewhere or (key == _member(key) and f"{key}[]" in elsewhere)


def _said(keys: list[str]) -> list[str]:
    """The keys as a comment says them: a member protected whole takes in its
    entries."""
    return [k for k in keys if k == _member(k) or _member(k) not in keys]


def _changed_elsewhere(sem: dict, read: Callable[[str], str]) -> set[str]:
    """Members changed, through any pointer, outside the regions where the lock
    is held and outside the functions that initialise it, in the files of its
    operations."""
    held = {path: {n for start, end in regions for n in range(start, end + 1)}
            for path, regions in _regions_by_path(sem).items()}
    inits = {(i["path"], i["line"]) for i in sem.get("init", [])}
    out: set[str] = set()
    for path in sorted({o["path"] for o in sem.get("ops", [])}):
        lines = strip_comments(read(path)).split("\n")
        macros = _macro_writes(lines)
        spared = set(held.get(path, ()))
        funcs = _functions(lines)
        setup = {name: span for name, span in funcs.items()
                 if any(p == path and span[0] <= n <= span[1] for p, n in inits)}
        # the functions that call the initialising one set the object up too
        # (hinic's api_cmd_create_chain(): api_chain_init(), then the cells)
        calls = re.compile(rf"\b(?:{'|'.join(map(re.escape, setup))})\s*\(") if setup else None
        for name, (first, last) in funcs.items():
            if name in setup or calls and any(calls.search(lines[n - 1])
                                              for n in range(first + 1, last + 1)):
                spared.update(range(first, last + 1))
        # and the functions called only there: under the lock, or while the
        # object is being set up
        for first, last in _only_from(lines, spared).values():
            spared.update(range(first, last + 1))
        for n, line in enumerate(lines, 1):
            # a macro's definition changes nothing: its uses do
            if n not in spared and not line.lstrip().startswith("#"):
                out.update(_changed(line, _ANY_BASE, macros))
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
