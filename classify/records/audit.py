"""audit.json's shape: what classify.report.data writes and every later stage reads.

    AuditData       the file: kernel_version, counts, and by semaphore:
      semaphores    AuditSem: its class with the rule, reasons and evidence, where it
                    is declared (Declared), its inits (Init) and calls (Call), the calls
                    that may be its own (PossibleCall), where its address escapes
                    (Escape) and the pointers followed (Stored); the patch and runtime
                    records beside it (classify.records.patches, .runtime) once made
      allocated     AllocatedFamily: the semaphores allocated at run time, one family
                    of pointers per file (classify.allocated)
      ...           the files spatch could not read, its unparsed functions, the calls
                    no semaphore was found for, the pointers and their calls

These are TypedDicts, not Records: some 16 modules on both sides of the project read
audit.json as JSON objects (s["class"], s["declared"]["path"]), and its bytes are tied
by the tests; declaring its keys here types every reader without changing one of them.
classify.inputs.check_audit checks a file a user gives against them.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from classify.records.patches import PatchRecord

AUDIT_SCHEMA = "sem2mutex-audit-1"


class Declared(TypedDict):
    path: str
    line: int
    kind: str                         # member | static | global | local | allocated ...
    array: NotRequired[bool]          # not for an allocated family
    struct: NotRequired[str]
    function: NotRequired[str]


class Init(TypedDict):
    path: str
    line: int
    form: str                         # sema_init | DEFINE_SEMAPHORE | ...
    count: str                        # the initial count as written
    value: int | None                 # its value, when the census could compute it


class Call(TypedDict):
    """One call of the semaphore API; a pointer's or a family's calls have only the
    first four keys."""
    path: str
    line: int
    op: str
    function: str
    analysed: NotRequired[bool]       # spatch parsed its function
    balanced: NotRequired[bool]       # a down() released on every path
    atomic: NotRequired[str]          # why it runs in atomic context, or ""
    via: NotRequired[list[str]]       # the helper it is made through
    context: NotRequired[str]         # where its function runs
    callers: NotRequired[list[str]]   # the chains from a root to its function
    callers_more: NotRequired[int]


class PossibleCall(TypedDict):
    """A call whose argument may name this semaphore or another."""
    path: str
    line: int
    op: str
    function: str
    note: str


class Escape(TypedDict):
    path: str
    line: int
    function: str
    to: str


class Stored(TypedDict):
    """classify.rules.Followed.to_json(): a pointer its address is stored in."""
    at: str
    pointer: str
    kind: str
    calls: int
    also: list[str]


# "class" is a Python keyword: these two are spelled the functional way.
AuditSem = TypedDict("AuditSem", {
    "id": str,
    "class": str,                     # mutex | completion | counting | unknown
    "reasons": list[str],
    "settle": str,
    "rule": str,
    "evidence": list[str],
    "subsystem": str,
    "declared": Declared,
    "init": list[Init],
    "ops": list[Call],
    "possible_ops": list[PossibleCall],
    "escapes": list[Escape],
    "followed": list[Stored],
    "patch": NotRequired[PatchRecord],
    # SemRuntime.to_json(): read it back with SemRuntime.from_json
    "runtime": NotRequired[dict[str, Any]],
})

AllocatedFamily = TypedDict("AllocatedFamily", {
    "id": str,
    "class": str,                     # counting | unknown
    "reasons": list[str],
    "declared": Declared,
    "pointers": list[str],
    "scope": list[str],
    "ops": list[Call],
    "init": list[Init],
    "internals": list[str],
    "conflicts": list[str],
})


class Failure(TypedDict):
    path: str
    status: str
    error: str


class Unparsed(TypedDict):
    path: str
    function: str
    lines: list[int]


class Unresolved(TypedDict):
    path: str
    line: int
    op: str
    expr: str
    function: str
    why: str
    candidates: list[str]


class Pointer(TypedDict):
    id: str
    path: str
    line: int
    kind: str
    ops: list[Call]


class AuditData(TypedDict):
    schema: str
    kernel_version: str
    files_scanned: int
    counts: dict[str, int]
    total: int
    semaphores: list[AuditSem]
    failures: list[Failure]
    unparsed_functions: list[Unparsed]
    unresolved_ops: list[Unresolved]
    pointers: list[Pointer]
    allocated: list[AllocatedFamily]

# what the lock map and the marking take alike: a declared semaphore or a family
SemOrFamily = AuditSem | AllocatedFamily
