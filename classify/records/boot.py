"""A boot's evidence, as qemu.parse reads it from a console log.

    Lock       a lock a report names (lockdep's name, its class, its role in the report)
    Report     one lockdep / mutex-debug / BUG / WARNING / hang report
    LockClass  a class our /init listed from /proc/lockdep ("# lockdep-class:" lines)
    Boot       one boot of a kernel variant: its classes and reports, or the compiler
               errors of a variant that did not build (the runtime records' input)

The console lines themselves are read in one place, qemu/parse.py; lock_class_of() is
the one reading of a lockdep name's suffixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from classify.records.base import Record

BOOT_SCHEMA = "sem2mutex-boot-1"

# lockdep's "#<name version>" and "/<subclass>" after a class name
_SUFFIX = re.compile(r"(?:#\d+)?(?:/\d+)?$")


def lock_class_of(name: str) -> str:
    """A lockdep name's class: "&x->lock#2/1" -> "&x->lock"."""
    return _SUFFIX.sub("", name) or name


@dataclass
class Lock(Record):
    name: str                 # as lockdep prints it, e.g. "&x->lock#2/1"
    lock_class: str           # without the #version and /subclass suffixes
    role: str                 # acquiring | held | releasing | freed | chain | involved
    usage: str = ""           # "+.+." usage bits
    at: str = ""              # "func+0x12/0x30"

    @classmethod
    def named(cls, name: str, role: str, usage: str = "", at: str = "") -> Lock:
        return cls(name, lock_class_of(name), role, usage, at)


@dataclass
class Report(Record):
    kind: str
    title: str                # headline + " in FUNC" when a function is known
    headline: str             # the kernel's own line
    line: int                 # 1-based line of the headline in the log
    task: str = ""
    locks: list[Lock] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)
    location: str = ""        # "file:line" when the report names one
    body: list[str] = field(default_factory=list)
    detail: str = ""          # beyond the title: the mutex_debug count warning
    modules: dict[str, str] = field(default_factory=dict)   # frame -> its "[module]"
    blocker: str = ""         # hung-task blocker line: "semaphore, last held by task Y/M"
    function: str = ""        # the function the title names (the culprit), or ""


@dataclass
class LockClass(Record):
    name: str                 # as /proc/lockdep prints it
    lock_class: str           # without the #version and /subclass suffixes
    ops: int | None           # lock operations (None without CONFIG_DEBUG_LOCKDEP)
    usage: str = ""           # usage bits

    @classmethod
    def named(cls, name: str, ops: int | None, usage: str = "") -> LockClass:
        return cls(name, lock_class_of(name), ops, usage)


@dataclass
class Boot(Record):
    """One runtime boot, as the runtime records need it."""
    SCHEMA: ClassVar[str] = BOOT_SCHEMA

    name: str
    variant: str                      # "trust" | "unmark:<id>" | "convert:<id>" | "series"
    marked: frozenset[str]            # ids declared struct arch_semaphore in its kernel
    classes: list[LockClass] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)
    build_errors: list[str] = field(default_factory=list)   # a variant that did not build
    verdict: str = "completed"
    scenario: str = ""                # the scenario (several boots when it repeats)
    failed: list[str] = field(default_factory=list)     # KTAP results "not ok"

    @property
    def unmarked(self) -> str:
        return self.variant.split(":", 1)[1] if self.variant.startswith("unmark:") else ""

    @property
    def converted(self) -> str:
        """The id whose conversion patch the kernel has (a convert:<id> variant)."""
        return self.variant.split(":", 1)[1] if self.variant.startswith("convert:") else ""
