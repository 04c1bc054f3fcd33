"""The census' data: a declared semaphore (Decl), one API call (Op), the census
of a tree (Census), and the subsystem a path belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from classify.census.cscan import FileScopes


OPS = ("sema_init", "down", "down_interruptible", "down_killable", "down_trylock",
       "down_timeout", "up")


ACQUIRE = ("down", "down_interruptible", "down_killable", "down_trylock", "down_timeout")


CENSUS_VERSION = "census-8"


_SUBSYS_TWO = ("drivers/", "fs/", "net/", "sound/", "arch/", "include/", "kernel/",
               "security/", "crypto/", "lib/", "mm/", "block/", "virt/", "samples/")


@dataclass(frozen=True)
class Decl:
    """A struct semaphore (or a pointer to one) declared somewhere."""
    id: str
    kind: str          # member | global | static | local | param (pointers only)
    path: str
    line: int
    name: str
    struct: str = ""   # struct tag for a member
    func: str = ""     # function for a local or a parameter
    array: bool = False
    pointer: bool = False
    init: str = ""     # count given in the declaration (DEFINE_SEMAPHORE, initializer)
    init_form: str = ""


@dataclass(frozen=True)
class Op:
    """One call of the semaphore API as the census sees it."""
    path: str
    line: int
    op: str
    expr: str          # the first argument, whitespace removed
    func: str          # enclosing function ("" at file scope)
    args: tuple[str, ...] = ()
    target: str = ""   # semaphore id, pointer id, or "" when unresolved
    via: str = ""      # direct | pointer | ambiguous | unresolved
    candidates: tuple[str, ...] = ()
    note: str = ""
    loop: bool = False  # inside a for/while/do body of its function


@dataclass
class CountsMemo:
    """What census.counts reads once per census, to evaluate the initial counts."""
    # the object-like macros no two census files define differently (None: not yet)
    tree_macros: dict[str, str] | None = None
    exists: dict[str, bool] = field(default_factory=dict)      # header -> is a file
    # header -> its includes and object-like macros (None: it cannot be read)
    headers: dict[str, tuple[set[str], dict[str, str]] | None] = field(default_factory=dict)


@dataclass
class Census:
    root: Path
    files: list[str] = field(default_factory=list)
    sems: dict[str, Decl] = field(default_factory=dict)
    pointers: dict[str, Decl] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    defines: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> macro -> value
    scopes: dict[str, "FileScopes"] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    includes: dict[str, set[str]] = field(default_factory=dict)
    hints: dict[tuple[str, int, str], str] = field(default_factory=dict)
    # each file's text as the census read it: a file with function-defining macros
    # with semaphore calls (census.expand) has them expanded, line for line
    texts: dict[str, str] = field(default_factory=dict)
    expanded: dict[str, list] = field(default_factory=dict)   # path -> [Expansion]
    funcs: dict[str, set[str]] = field(default_factory=dict)
    # the Resolver take_census used, kept to resolve the addresses spatch finds
    resolver: object = None
    memo: CountsMemo = field(default_factory=CountsMemo)


def subsystem(path: str) -> str:
    parts = path.split("/")
    if len(parts) > 2 and path.startswith(_SUBSYS_TWO):
        return "/".join(parts[:2])
    return parts[0] if len(parts) > 1 else "."
