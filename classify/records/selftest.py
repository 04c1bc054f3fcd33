"""The kernel's own locking tests in one boot, as qemu.selftests reads them from its
console log, and each report of the boot classed against a boot of the pristine tree.

    LockingApi      lib/locking-selftest.c's summary (CONFIG_DEBUG_LOCKING_API_SELFTESTS)
    WwMutex         kernel/locking/test-ww_mutex.c (CONFIG_WW_MUTEX_SELFTEST)
    Torture         one run of kernel/locking/locktorture.c (CONFIG_LOCK_TORTURE_TEST)
    Selftests       the three of one boot
    Attributed      a report of a series boot and whether the pristine control shows it
    SelftestRecord  one boot's record (reports/linux-<version>/selftest/<scenario>.json)
    ControlRecord   how the pristine control kernel was configured (pristine/control.json)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from classify.records.base import Record

SELFTEST_SCHEMA = "sem2mutex-selftest-1"
CONTROL_SCHEMA = "sem2mutex-selftest-control-1"

# LockingApi.status
PASSED = "passed"                     # "Good, all N testcases passed!"
FAILED = "failed"                     # "BUG: N unexpected failures (out of M)"
EXPECTED_FAILURES = "expected-failures"   # without PROVE_LOCKING: "N out of M ... as expected"
DISABLED = "disabled"                 # lockdep was off before the tests began
UNFINISHED = "unfinished"             # the test began, its end is not in the log
# Torture.status: locktorture's own words, or UNFINISHED
SUCCESS = "SUCCESS"
# Attributed.origin
TREE = "tree"                         # the pristine control shows the same report
SERIES = "series"                     # the pristine control ran and does not show it
UNATTRIBUTED = "unattributed"         # no control log to compare with


@dataclass
class LockingApi(Record):
    status: str                       # PASSED | FAILED | EXPECTED_FAILURES | DISABLED ...
    total: int                        # testcases run (0: disabled, unfinished)
    passed: int
    line: int                         # 1-based line of the summary (or of the header)
    unexpected: int = 0
    expected_failures: int = 0
    failed_tests: list[str] = field(default_factory=list)   # "A-A deadlock [mutex]"


@dataclass
class WwMutex(Record):
    status: str                       # PASSED | FAILED (its init failed) | UNFINISHED
    line: int                         # "Beginning ww mutex selftests"
    errors: list[str] = field(default_factory=list)          # the test's own error lines


@dataclass
class Torture(Record):
    torture_type: str                 # "mutex_lock", "rwsem_lock", ...
    status: str                       # SUCCESS | FAILURE | LOCK_HOTPLUG | unfinished
    line: int                         # "--- Start of test"
    writes: int | None = None         # the last "Writes:  Total:" before the end
    reads: int | None = None          # the last "Reads :  Total:" (reader-writer locks)
    fail: int = 0                     # the "Fail:" flags of those lines, summed


@dataclass
class Selftests(Record):
    locking_api: LockingApi | None = None
    ww_mutex: WwMutex | None = None
    torture: list[Torture] = field(default_factory=list)


@dataclass
class Attributed(Record):
    kind: str
    title: str
    line: int                         # the report's line in the series boot's log
    origin: str                       # TREE | SERIES | UNATTRIBUTED
    control_line: int | None = None   # TREE: the same report's line in the control log


@dataclass
class SelftestRecord(Record):
    """One boot that runs the locking tests, derived from its console log alone (and,
    for a series kernel, the control log it is compared with)."""
    SCHEMA: ClassVar[str] = SELFTEST_SCHEMA

    scenario: str
    version: str                      # of the kernel that booted ("6.1.192")
    kernel: str                       # "series" | "pristine"
    log: str                          # the console log, beside the record
    verdict: str                      # completed | panic | hang | ...
    selftests: Selftests
    debug_locks: int | None           # lockdep on (1) or off (0) when /init ended
    boot_seconds: float | None        # QEMU's run, from the harness line
    steps: dict[str, str] = field(default_factory=dict)      # /init step -> ok | not ok
    reports: list[Attributed] = field(default_factory=list)
    control: str = ""                 # the control log compared with ("" for pristine)


@dataclass
class ControlRecord(Record):
    """The pristine control: the series kernel's configuration without the series."""
    SCHEMA: ClassVar[str] = CONTROL_SCHEMA

    version: str
    fragments: list[str]              # the scenario's fragments, as for the series kernel
    dropped: list[str]                # options left out: no Kconfig of the tree has them
    differences: list[str]            # "CONFIG_X: series y, pristine absent"
    scenarios: list[str]              # the scenarios booted on it
