"""The kernel's own locking tests, read from a console log (pure, as ktap.py is).

  locking_api(lines)   lib/locking-selftest.c: the summary it prints at the end of its
                       table ("Good, all 346 testcases passed!", "BUG: 3 unexpected
                       failures (out of 346) - debugging disabled!", ...), and the
                       testcases the table marks FAILED
  ww_mutex(lines)      kernel/locking/test-ww_mutex.c: "Beginning ww mutex selftests"
                       to "All ww mutex selftests passed", or the test's error lines
  torture(lines)       kernel/locking/locktorture.c: each "--- Start of test" to its
                       "--- End of test: SUCCESS|FAILURE|LOCK_HOTPLUG", with the last
                       "Writes:"/"Reads :" totals before the end
  read_selftests(text) the three of one log; a line number is that of the log as given

A report the tests provoke (a lockdep warning) is not read here: qemu.parse reads the
reports, and qemu.control classes them against a boot of the pristine tree.
"""

from __future__ import annotations

import re

from classify.records.selftest import (DISABLED, EXPECTED_FAILURES, FAILED, PASSED,
                                       UNFINISHED, LockingApi, Selftests, Torture, WwMutex)
from qemu.logtext import normalise

_API_START = re.compile(r"^\| Locking API testsuite:")
_API_DISABLED = re.compile(r"^\| Locking API testsuite disabled \|")
_API_SUMMARY = [
    (PASSED, re.compile(r"^Good, all\s+(?P<passed>\d+) testcases passed!")),
    (FAILED, re.compile(r"^BUG:\s+(?P<unexpected>\d+) unexpected failures \(out of\s+"
                        r"(?P<total>\d+)\)")),
    (EXPECTED_FAILURES, re.compile(r"^\s*(?P<expected>\d+) out of\s+(?P<total>\d+) "
                                   r"testcases failed, as expected")),
    (EXPECTED_FAILURES, re.compile(r"^All\s+(?P<expected>\d+) testcases failed, as "
                                   r"expected")),
]
# "                                 | spin |wlock |rlock |mutex | wsem | rsem |rtmutex"
_COLUMNS = re.compile(r"^\s{20,}\|(?P<cols>.*)$")
# "                     A-A deadlock:  ok  |  ok  |FAILED|" (print_testname's %33s)
_ROW = re.compile(r"^\s*(?P<name>[^|:]*\S):(?P<cells>(?:[^|]*\|)+)")

_WW_START = re.compile(r"^Beginning ww mutex selftests")
_WW_PASSED = re.compile(r"^All ww mutex selftests passed")
# its pr_err()s (the file has no pr_fmt) and insmod's word when its init failed
_WW_ERROR = re.compile(r"(?:mutual exclusion failure|initial (?:try)?lock failed|trylocked "
                       r"itself|missed deadlock|failed to resolve ABBA|missed ABBA|cyclic "
                       r"deadlock not resolved|^stress \(.*\) failed with|can't insert "
                       r"'\S*test-ww_mutex\.ko')")

_T_START = re.compile(r"^(?P<type>\w+)-torture:--- Start of test(?: \[debug\])?:")
_T_END = re.compile(r"^(?P<type>\w+)-torture:--- End of test: (?P<status>[A-Z_]+)")
_T_STATS = re.compile(r"^(?P<what>Writes|Reads)\s*:\s+Total: (?P<total>\d+)\s+Max/Min: "
                      r"\S+.*?Fail: (?P<fail>\d+)")


def locking_api(lines: list[str]) -> LockingApi | None:
    """The locking API self-tests' result; None when the log has none of them."""
    start = next((i for i, ln in enumerate(lines) if _API_START.match(ln.strip())), None)
    if start is None:
        off = next((i for i, ln in enumerate(lines) if _API_DISABLED.match(ln.strip())), None)
        return None if off is None else LockingApi(DISABLED, 0, 0, off + 1)
    columns: list[str] = []
    failed: list[str] = []
    for i in range(start + 1, len(lines)):
        line = lines[i].rstrip()
        for status, pat in _API_SUMMARY:
            if m := pat.match(line.strip()):
                return _summary(status, m, i + 1, failed)
        if m := _COLUMNS.match(line):
            columns = [c.strip() for c in m["cols"].split("|")]
        elif (m := _ROW.match(line)) and "FAILED" in m["cells"]:
            cells = m["cells"].split("|")[:-1]
            failed += [f"{m['name'].strip()} [{columns[n] if n < len(columns) else n + 1}]"
                       for n, cell in enumerate(cells) if cell.strip() == "FAILED"]
    return LockingApi(UNFINISHED, 0, 0, start + 1, failed_tests=failed)


def _summary(status: str, m: re.Match[str], line: int, failed: list[str]) -> LockingApi:
    g = {k: int(v) for k, v in m.groupdict().items() if v is not None}
    if status == PASSED:
        return LockingApi(PASSED, g["passed"], g["passed"], line)
    if status == FAILED:
        total = g["total"]
        return LockingApi(FAILED, total, total - g["unexpected"], line,
                          unexpected=g["unexpected"], failed_tests=failed)
    total = g.get("total", g["expected"])
    return LockingApi(EXPECTED_FAILURES, total, total - g["expected"], line,
                      expected_failures=g["expected"])


def ww_mutex(lines: list[str]) -> WwMutex | None:
    """The ww_mutex self-test's result; None when it did not run."""
    start = next((i for i, ln in enumerate(lines) if _WW_START.match(ln.strip())), None)
    if start is None:
        return None
    errors: list[str] = []
    for line in lines[start + 1:]:
        text = line.strip()
        if _WW_PASSED.match(text):
            return WwMutex(PASSED, start + 1, errors)
        if _WW_ERROR.search(text):
            errors.append(text)
    return WwMutex(FAILED if errors else UNFINISHED, start + 1, errors)


def torture(lines: list[str]) -> list[Torture]:
    """Every locktorture run, in log order; one with no end is "unfinished"."""
    runs: list[Torture] = []
    stats: dict[str, tuple[int, int]] = {}
    for i, line in enumerate(lines):
        text = line.strip()
        if m := _T_START.match(text):
            runs.append(Torture(m["type"], UNFINISHED, i + 1))
            stats = {}
        elif (m := _T_STATS.match(text)) and runs:
            stats[m["what"]] = (int(m["total"]), int(m["fail"]))
        elif (m := _T_END.match(text)) and runs and runs[-1].torture_type == m["type"]:
            run = runs[-1]
            run.status = m["status"]
            run.writes = stats["Writes"][0] if "Writes" in stats else None
            run.reads = stats["Reads"][0] if "Reads" in stats else None
            run.fail = sum(f for _, f in stats.values())
    return runs


def read_selftests(text: str) -> Selftests:
    """The locking tests of a whole log, each line number that of the log as given."""
    lines, origin = normalise(text)
    tests = Selftests(locking_api(lines), ww_mutex(lines), torture(lines))
    for rec in [tests.locking_api, tests.ww_mutex, *tests.torture]:
        if rec is not None and rec.line:
            rec.line = origin[rec.line - 1] + 1
    return tests
