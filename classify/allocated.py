"""Semaphores allocated at run time, which the census knows only by their pointers.

ACPI's acpi_os_create_semaphore() kmalloc()s `sizeof(struct semaphore)`, sema_init()s
it through a local pointer and hands it out as an acpi_handle that three other
functions cast back to `struct semaphore *`.  No declaration of a semaphore is
involved, so the census has no record to classify; yet under CONFIG_DEBUG_MUTEX_FULL
those pointers become `struct mutex_debug *` like any other, and a FULL build of the
file breaks where the code reaches into the semaphore (`sem->wait_list`).

A *family* is the `struct semaphore *` pointers of one file (locals, statics,
globals) that no census semaphore's address reaches, when one of them initialises
what it points at (sema_init through a pointer): they can only point at memory the
file allocates, and they must keep one type together, since the file passes the
objects around as untyped handles.  A family is classed counting when the code uses
the semaphore's internals (only struct arch_semaphore has them) or initialises it
with a constant count above 1; else unknown, and DEBUG_MUTEX_FULL checks it as a
debug mutex like the rest of the unknown pool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from classify.census import Census, count_value
from classify.census.cscan import clean_source, read_text, scan_scopes

# the members of struct semaphore (include/linux/semaphore.h); struct mutex_debug
# has none of them
INTERNALS = ("lock", "count", "wait_list")
FAMILY_KINDS = ("local", "static", "global")


@dataclass
class Family:
    id: str                    # path:*pointer@function of the pointer that initialises it
    path: str
    line: int                  # the initialising sema_init
    pointers: list[str]        # census pointer ids, all in path
    scope: list[str]           # the functions (and file-scope pointers) they live in
    ops: list[dict] = field(default_factory=list)
    init: list[dict] = field(default_factory=list)
    internals: list[str] = field(default_factory=list)   # "path:line: sem->wait_list"
    cls: str = "unknown"
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"id": self.id, "class": self.cls, "reasons": self.reasons,
                "declared": {"path": self.path, "line": self.line, "kind": "allocated"},
                "pointers": self.pointers, "scope": self.scope, "ops": self.ops,
                "init": self.init, "internals": self.internals}


def _internal_uses(c: Census, path: str, names: set[tuple[str, str]]) -> list[str]:
    """"path:line: p->member" for each use of a semaphore member through one of
    names ((pointer name, its function or "" at file scope)) in that function."""
    # a census from the cache keeps no texts
    clean = clean_source(c.texts.get(path) or read_text(c.root, path))
    scopes = scan_scopes(clean)
    out = []
    for name, func in sorted(names):
        pattern = rf"\b{re.escape(name)}\s*->\s*({'|'.join(INTERNALS)})\b"
        for m in re.finditer(pattern, clean):
            if func and scopes.function_at(m.start())[0] != func:
                continue
            out.append(f"{path}:{scopes.line_of(m.start())}: {name}->{m.group(1)}")
    return out


def families(c: Census, followed: set[str]) -> list[Family]:
    """The allocated semaphores of the census, one family per file; followed: the
    pointers some census semaphore's address is stored in."""
    by_path: dict[str, list] = {}
    for d in c.pointers.values():
        if d.kind in FAMILY_KINDS and d.id not in followed:
            by_path.setdefault(d.path, []).append(d)
    out = []
    for path, decls in sorted(by_path.items()):
        ids = {d.id for d in decls}
        ops = sorted((op for op in c.ops if op.target in ids),
                     key=lambda o: (o.path, o.line))
        inits = [op for op in ops if op.op == "sema_init"]
        if not inits:
            continue
        first = next(d for d in decls if d.id == inits[0].target)
        fam = Family(f"{path}:*{first.name}" + (f"@{first.func}" if first.func else ""),
                     path, inits[0].line, sorted(ids),
                     sorted({d.func or d.name for d in decls}),
                     ops=[{"path": o.path, "line": o.line, "op": o.op, "function": o.func}
                          for o in ops if o.op != "sema_init"])
        for op in inits:
            count = op.args[1] if len(op.args) > 1 else "?"
            fam.init.append({"count": count, "value": count_value(c, count, op.path),
                             "path": op.path, "line": op.line, "form": "sema_init"})
        fam.internals = _internal_uses(c, path, {(d.name, d.func) for d in decls})
        classify_family(fam)
        out.append(fam)
    return out


def classify_family(fam: Family) -> None:
    if fam.internals:
        fam.cls = "counting"
        fam.reasons.append(f"the code reaches into it ({fam.internals[0]}): only a "
                           "struct arch_semaphore has those members")
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
