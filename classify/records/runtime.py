"""The runtime record: what DEBUG_MUTEX_FULL boots said about each semaphore of an audit.

reports/linux-<version>/runtime.json is a RuntimeRecord (classify.runtime_records makes
it from the boots; `python3 -m qemu triage --record` writes one for a single log):

    RuntimeRecord  kernel_version, config, trust_marks, counts, and by name or id:
      boots        BootRecord: scenario, variant, verdict, every report of its log
                   in order (ReportIds: kind, title, lock classes, function, line and
                   the ids they name), the compiler's lines
      semaphores   SemRuntime: a status of STATUSES, the boot and report that decided
                   it, a BootEntry per boot that said something, the Repeats of a
                   scenario booted several times, a finding against the static class
      variants     VariantRecord: what a kernel variant marks, unmarks, or converts
                   with which patch

A None field is an absent key (a status that does not have it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from classify.records.base import Record, dumps

RUNTIME_SCHEMA = "sem2mutex-runtime-1"
STATUSES = ("exercised-clean", "violated", "does-not-build-as-a-mutex", "not-exercised",
            "not-built")
CLEAN, VIOLATED, NO_BUILD, NOT_EXERCISED, NOT_BUILT = STATUSES
NOT_RUN = "not-run"           # in the audit report: a semaphore the record does not hold


@dataclass
class BootEntry(Record):
    """What one boot says about one semaphore."""
    boot: str
    ran_as: str                       # semaphore | mutex
    result: str                       # clean | violated | does-not-build
    ops: int | None = None            # its lock class ran: the operations counted
    lock_class: str | None = None
    kind: str | None = None           # violated: the report
    title: str | None = None
    detail: str | None = None
    more: int | None = None           # violated: the boot's other reports (its record)
    error: str | None = None          # does-not-build: the compiler's line


@dataclass
class Outcome(Record):
    outcome: str                      # "clean", "not exercised", "<kind>: <title>", ...
    seen: int                         # in how many of the scenario's boots


@dataclass
class Repeat(Record):
    """A scenario booted several times: every outcome seen, first seen first."""
    scenario: str
    boots: int
    outcomes: list[Outcome] = field(default_factory=list)


@dataclass
class Converted(Record):
    """A boot of a kernel with the semaphore's conversion patch applied (a
    convert:<id> variant): it has no lock class of its own there (a completion
    has none), so what it says is the boot's own outcome."""
    boot: str
    patch: str                        # the patch file booted
    result: str                       # clean | broken
    verdict: str                      # the boot's: completed | hang | panic | ...
    failed: list[str] = field(default_factory=list)   # its /init steps that failed
    kind: str | None = None           # broken by a report: the first one
    title: str | None = None
    more: int | None = None           # the boot's other reports (its record)


@dataclass
class SemRuntime(Record):
    """One semaphore's runtime record."""
    status: str                       # one of STATUSES (NOT_RUN in the audit report)
    boots: list[BootEntry] | None = None      # None when not-built
    files: list[str] | None = None            # not-built: its .c files
    boot: str | None = None           # the boot that decided the status
    kind: str | None = None           # violated
    title: str | None = None
    detail: str | None = None
    compiler: str | None = None       # does-not-build-as-a-mutex
    evidence: str | None = None       # exercised-clean: "<class>: OPS <n>"
    repeats: list[Repeat] | None = None
    finding: str | None = None        # what the boots say against the static class
    converted: list[Converted] | None = None  # boots with its conversion patch


@dataclass
class ReportIds(Record):
    """A report of a boot, as its log prints it, and the semaphores it names."""
    kind: str
    title: str
    ids: list[str] = field(default_factory=list)
    lock_classes: list[str] = field(default_factory=list)   # the report's, in order
    function: str = ""                # the function its title names, or ""
    line: int = 0                     # its headline's line in the boot's log


@dataclass
class BootRecord(Record):
    scenario: str
    variant: str
    verdict: str                      # completed | hang | ... | not_built | not_made
    reports: list[ReportIds] = field(default_factory=list)
    build_errors: list[str] = field(default_factory=list)


@dataclass
class VariantRecord(Record):
    """What a kernel variant marks: trust (or triage's series) the ids its marking
    committed and why the others were not; unmark:<id> the one it leaves unmarked,
    convert:<id> the one it converts and the patch it applied; either why it was not
    made."""
    marked: list[str] | None = None
    not_marked: dict[str, str] | None = None
    unmarks: str | None = None
    not_made: str | None = None
    converts: str | None = None
    patch: str | None = None


@dataclass
class RuntimeRecord(Record):
    SCHEMA: ClassVar[str] = RUNTIME_SCHEMA

    kernel_version: str
    config: str
    trust_marks: list[str]
    boots: dict[str, BootRecord]
    counts: dict[str, int]
    semaphores: dict[str, SemRuntime]
    variants: dict[str, VariantRecord]

    def of(self, sid: str) -> SemRuntime:
        """The record of one semaphore; NOT_RUN when it holds none."""
        return self.semaphores.get(sid) or SemRuntime(NOT_RUN)

    def dumps(self) -> str:
        """runtime.json's bytes."""
        return dumps(self.to_json())
