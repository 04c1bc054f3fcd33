"""Semaphores allocated at run time, which the census knows only by their pointers.

ACPI's acpi_os_create_semaphore() kmalloc()s `sizeof(struct semaphore)`, sema_init()s
it through a local pointer and hands it out as an acpi_handle that three other
functions cast back to `struct semaphore *`.  No declaration of a semaphore is
involved, so the census has no record to classify; yet under CONFIG_DEBUG_MUTEX_FULL
those pointers become `struct mutex_debug *` like any other, and a FULL build of the
file breaks where the code reaches into the semaphore (`sem->wait_list`).

A *family* is the `struct semaphore *` pointers of one file (locals and statics) that
no census semaphore's address reaches and that only ever hold an allocation
(`p = kzalloc(...)`, `acpi_os_allocate_zeroed(...)`) or a cast of an untyped handle
(`p = (struct semaphore *)handle`), when one of them sema_init()s what it points at.
They must change type together, and so must the casts and the `sizeof` of the
functions that handle them (the family's *scope*: the functions declaring its
pointers, calling the semaphore API through them, naming a file-scope one, or casting
to `struct semaphore *`).  Two independent allocations in one file make one family:
marking both is the conservative side.  A `struct semaphore *` of the scope that is
not the family's (the address of a declared semaphore, a call's result) is a
*conflict*: changing the scope's types would change it too, so the marking refuses
the family by name.

A family is classed counting when the code reaches into the semaphore (its count or
wait list, which a mutex does not have, or its spinlock, which a mutex_debug has
with another type) or initialises it with a constant count above 1; else unknown,
and DEBUG_MUTEX_FULL checks it as a debug mutex like the rest of the unknown pool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from classify.census import Census, Decl, count_value
from classify.census.cscan import FileScopes, clean_source, read_text, scan_scopes

# the members of struct semaphore (include/linux/semaphore.h)
INTERNALS = ("lock", "count", "wait_list")
# a global pointer is used through `extern` in other files, which the scope of one
# file cannot change: not a family
FAMILY_KINDS = ("local", "static")
_CAST = r"\(\s*struct\s+semaphore\s*\*\s*\)"
_ALLOC = re.compile(rf"^(?:{_CAST}\s*)?\w*alloc\w*\s*\(")
_HANDLE = re.compile(rf"^{_CAST}\s*\w+$")
_NOT_A_TYPE = ("semaphore", "return", "sizeof", "else", "case")
_TYPE_USE = re.compile(rf"{_CAST}|\bsizeof\s*\(\s*struct\s+semaphore\s*\)")


@dataclass
class Family:
    id: str                    # path:*pointer@function of the pointer that initialises it
    path: str
    line: int                  # the initialising sema_init
    pointers: list[str]        # census pointer ids, all in path
    scope: list[str]           # the functions (and file-scope pointers) to change
    ops: list[dict] = field(default_factory=list)
    init: list[dict] = field(default_factory=list)
    internals: list[str] = field(default_factory=list)   # "path:line: sem->wait_list"
    conflicts: list[str] = field(default_factory=list)   # why the marking must refuse
    cls: str = "unknown"
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"id": self.id, "class": self.cls, "reasons": self.reasons,
                "declared": {"path": self.path, "line": self.line, "kind": "allocated"},
                "pointers": self.pointers, "scope": self.scope, "ops": self.ops,
                "init": self.init, "internals": self.internals,
                "conflicts": self.conflicts}


@dataclass
class _File:
    """One file's text without comments, and its function bodies."""
    path: str
    clean: str
    scopes: FileScopes

    def function_at(self, pos: int) -> str:
        return self.scopes.function_at(pos)[0]

    def line_of(self, pos: int) -> int:
        return self.scopes.line_of(pos)


def _read(c: Census, path: str) -> _File:
    # a census from the cache keeps no texts
    clean = clean_source(c.texts.get(path) or read_text(c.root, path))
    return _File(path, clean, scan_scopes(clean))


def _sources(f: _File, d: Decl) -> set[str]:
    """What d is ever assigned (in its function, or anywhere for a static): alloc,
    handle (a cast of a plain variable), null, or other."""
    out = set()
    for m in re.finditer(rf"(?<![\w>.]){re.escape(d.name)}\s*=(?!=)\s*([^;]*);", f.clean):
        if d.func and f.function_at(m.start()) != d.func:
            continue
        rhs = " ".join(m.group(1).split())
        out.add("alloc" if _ALLOC.match(rhs) else "handle" if _HANDLE.match(rhs)
                else "null" if rhs in ("NULL", "0") else "other")
    return out


def _shadowed(f: _File, name: str, func: str) -> bool:
    """func declares its own name (a parameter or local of another type)."""
    for m in re.finditer(rf"\b(\w+)\s*\*?\s*\b{re.escape(name)}\s*[;,=)\[]", f.clean):
        if f.function_at(m.start()) == func and m.group(1) not in _NOT_A_TYPE:
            return True
    return False


def _internal_uses(f: _File, members: list[Decl], scope: set[str]) -> list[str]:
    """"path:line: p->member" for each use of a semaphore member through one of the
    family's pointers, in a function of its scope where that name is the pointer."""
    out = []
    for d in members:
        pattern = rf"(?<!->)(?<!\.)\b{re.escape(d.name)}\s*->\s*({'|'.join(INTERNALS)})\b"
        for m in re.finditer(pattern, f.clean):
            func = f.function_at(m.start())
            if (d.func and func != d.func) or func not in scope or \
                    (not d.func and _shadowed(f, d.name, func)):
                continue
            out.append(f"{f.path}:{f.line_of(m.start())}: {d.name}->{m.group(1)}")
    return sorted(set(out), key=lambda s: int(s.split(":")[1]))


def _scope(f: _File, members: list[Decl], ops: list) -> set[str]:
    scope = {d.func for d in members if d.func} | {o.func for o in ops if o.func}
    for d in members:
        if not d.func:
            scope |= {f.function_at(m.start())
                      for m in re.finditer(rf"(?<![\w>.]){re.escape(d.name)}\b", f.clean)}
    scope |= {f.function_at(m.start()) for m in _TYPE_USE.finditer(f.clean)}
    return scope - {""}


def _conflicts(c: Census, f: _File, scope: set[str], members: list[Decl]) -> list[str]:
    """The struct semaphore declarations of the scope that are not the family's."""
    ids = {d.id for d in members}
    return [f"{d.path}:{d.line}: {d.name} in {d.func}() is a struct semaphore"
            f"{' *' if d.pointer else ''} that is not one of them"
            for d in sorted(list(c.sems.values()) + list(c.pointers.values()),
                            key=lambda d: d.line)
            if d.path == f.path and d.func in scope and d.id not in ids]


def families(c: Census, followed: set[str]) -> list[Family]:
    """The allocated semaphores of the census, one family per file; followed: the
    pointers some census semaphore's address is stored in."""
    by_path: dict[str, list[Decl]] = {}
    for d in c.pointers.values():
        if d.kind in FAMILY_KINDS and d.id not in followed:
            by_path.setdefault(d.path, []).append(d)
    out = []
    for path, decls in sorted(by_path.items()):
        ids = {d.id for d in decls}
        if not any(op.op == "sema_init" for op in c.ops if op.target in ids):
            continue
        f = _read(c, path)
        sources = {d.id: _sources(f, d) for d in decls}
        members = sorted((d for d in decls if sources[d.id] and
                          sources[d.id] <= {"alloc", "handle", "null"}),
                         key=lambda d: d.id)
        if not any("alloc" in sources[d.id] for d in members):
            continue
        mids = {d.id for d in members}
        ops = sorted((op for op in c.ops if op.target in mids), key=lambda o: o.line)
        inits = [op for op in ops if op.op == "sema_init"]
        if not inits:
            continue
        scope = _scope(f, members, ops)
        first = next(d for d in members if d.id == inits[0].target)
        fam = Family(f"{path}:*{first.name}" + (f"@{first.func}" if first.func else ""),
                     path, inits[0].line, sorted(mids),
                     sorted(scope | {d.name for d in members if not d.func}),
                     ops=[{"path": o.path, "line": o.line, "op": o.op, "function": o.func}
                          for o in ops if o.op != "sema_init"])
        for op in inits:
            count = op.args[1] if len(op.args) > 1 else "?"
            fam.init.append({"count": count, "value": count_value(c, count, op.path),
                             "path": op.path, "line": op.line, "form": "sema_init"})
        fam.internals = _internal_uses(f, members, scope)
        fam.conflicts = _conflicts(c, f, scope, members) + [
            f"{d.path}:{d.line}: {d.name} is also assigned something other than an "
            "allocation or a cast handle" for d in decls
            if d.id not in mids and d.func in scope]
        classify_family(fam)
        out.append(fam)
    return out


def classify_family(fam: Family) -> None:
    if fam.internals:
        fam.cls = "counting"
        fam.reasons.append(f"the code reaches into it ({fam.internals[0]}): its count "
                           "and wait list exist only in a struct arch_semaphore (a "
                           "mutex_debug's lock has another type)")
    above = [i for i in fam.init if i["value"] is not None and i["value"] > 1]
    if above:
        fam.cls = "counting"
        fam.reasons.append(f"{above[0]['path']}:{above[0]['line']}: sema_init, "
                           f"count {above[0]['value']}")
    if fam.cls == "unknown":
        counts = ", ".join(i["count"] for i in fam.init)
        fam.reasons.append(f"allocated at run time and initialised through a pointer "
                           f"(count {counts}), its internals unused: under "
                           "DEBUG_MUTEX_FULL it becomes a debug mutex, which a boot checks")
    if fam.conflicts:
        fam.reasons.append("its functions hold other semaphores too, so their types "
                           f"cannot all change: {fam.conflicts[0]}")
