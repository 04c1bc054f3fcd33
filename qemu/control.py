"""The pristine control: each report of a series boot classed as the tree's or the series'.

A scenario with `control = true` boots twice: on the series kernel (boot-test) and on
the pristine tree, the same configuration without the series (`make selftest-control`,
qemu/pristine.py).  A report of the series boot that the control boot shows too (the
same kind and title: titles carry no pid, address or time) is the tree's, "also on
pristine"; one the control does not show, after it ran /init to its end, is the
series', "only with the series"; with no control log it is unattributed.  A report of
the tree's is recorded with the control's line, never dropped; it is not a problem of
the series boot.  A report the scenario expects may say which it must be
(`origin = "series"`): the negative control, a fault injected only into the series
kernel, must be classed "only with the series".

Where the logs are: <dir>/<scenario>.log and .json for the series boot, and
<dir>/pristine/<scenario>.log and .json for the control, <dir> being selftest/ beside
the tree's audit (reports/linux-<version>/selftest for the trees `make setup` unpacks,
classify.paths.default_out); another tree of a version whose control is committed is
compared with that one.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from classify.paths import REPORTS_DIR, default_out
from classify.records.base import dumps
from classify.records.boot import Report
from classify.records.selftest import (SERIES, TREE, UNATTRIBUTED, Attributed,
                                       SelftestRecord, Selftests)
from qemu.parse import ParsedLog, parse_log
from qemu.scenarios import Evaluation, Scenario, evaluate
from qemu.selftests import read_selftests

PRISTINE = "pristine"
ORIGIN_WORDS = {TREE: "also on pristine (the tree's)", SERIES: "only with the series",
                UNATTRIBUTED: "unattributed (no pristine control log)"}
_AFTER = re.compile(r"after ([\d.]+) s$")


def selftest_dir(kernel: Path, version: str) -> Path:
    """Where a tree's locking test records go: beside its audit."""
    return default_out(Path(kernel).resolve(), version) / "selftest"


def control_log(kernel: Path, version: str, scenario: str) -> Path | None:
    """The control log of a scenario: the tree's own, else the committed one of its
    version; None when there is neither."""
    for d in (selftest_dir(kernel, version), REPORTS_DIR / f"linux-{version}" / "selftest"):
        path = d / PRISTINE / f"{scenario}.log"
        if path.is_file():
            return path
    return None


def attribute(reports: list[Report], control: ParsedLog | None) -> list[Attributed]:
    """Each report classed against the control boot's reports (pure)."""
    if control is None or control.verdict != "completed":
        return [Attributed(r.kind, r.title, r.line, UNATTRIBUTED) for r in reports]
    seen: dict[tuple[str, str], int] = {}
    for r in control.reports:
        seen.setdefault((r.kind, r.title), r.line)
    out = []
    for r in reports:
        line = seen.get((r.kind, r.title))
        out.append(Attributed(r.kind, r.title, r.line, SERIES if line is None else TREE,
                              line))
    return out


def evaluate_with_control(sc: Scenario, parsed: ParsedLog,
                          control: ParsedLog | None) -> Evaluation:
    """scenarios.evaluate() with the tree's own reports set aside, and each expected
    report's origin checked (pure)."""
    problems: list[str] = []
    keep: list[Report] = []
    for rep, att in zip(parsed.reports, attribute(parsed.reports, control)):
        exp = next((e for e in sc.reports if e.matches(rep)), None)
        if exp is None and att.origin == TREE:
            continue
        if exp is not None and exp.origin and exp.origin != att.origin:
            problems.append(f"{rep.kind}: {rep.title} (line {rep.line}) is "
                            f"{ORIGIN_WORDS[att.origin]}, expected {ORIGIN_WORDS[exp.origin]}")
        elif exp is None and att.origin == UNATTRIBUTED:
            problems.append(f"{rep.kind}: {rep.title} (line {rep.line}): no pristine control "
                            "log to class it (make selftest-control)")
        keep.append(rep)
    base = evaluate(sc, dataclasses.replace(parsed, reports=keep))
    return Evaluation(not (base.problems + problems), base.problems + problems)


def evaluator(control: ParsedLog | None) -> Callable[[Scenario, ParsedLog], Evaluation]:
    """The evaluator boot_scenario takes, bound to one control boot."""
    return lambda sc, parsed: evaluate_with_control(sc, parsed, control)


def load_control(kernel: Path, version: str, scenario: str) -> ParsedLog | None:
    path = control_log(kernel, version, scenario)
    return None if path is None else parse_log(path.read_text(errors="replace"))


def derive(text: str, scenario: str, version: str, kernel: str, log: str,
           control_text: str | None = None, control: str = "") -> SelftestRecord:
    """A boot's record from its console log (and the control log it is compared with,
    for a series boot): pure, so that a test derives the committed one again."""
    parsed = parse_log(text)
    if kernel == PRISTINE:
        reports = [Attributed(r.kind, r.title, r.line, TREE, r.line) for r in parsed.reports]
    else:
        reports = attribute(parsed.reports, None if control_text is None
                            else parse_log(control_text))
    steps = {path.split("/", 1)[1]: status for doc in parsed.ktap if doc.name == "s2m-init"
             for path, status in doc.leaves()}
    m = _AFTER.search(parsed.harness)
    return SelftestRecord(scenario, version, kernel, log, parsed.verdict,
                          read_selftests(text), parsed.debug_locks,
                          float(m[1]) if m else None, steps, reports, control)


def write_record(log_path: Path, dest: Path, scenario: str, version: str, kernel: str,
                 control_path: Path | None = None) -> SelftestRecord:
    """Copy a boot's console log to dest/<scenario>.log and write its record beside it;
    the control log is named relative to dest."""
    dest.mkdir(parents=True, exist_ok=True)
    log = dest / f"{scenario}.log"
    if log_path.resolve() != log.resolve():
        shutil.copyfile(log_path, log)
    control_text = control_path.read_text(errors="replace") if control_path else None
    name = ""
    if control_path is not None:
        cp, here = control_path.resolve(), dest.resolve()
        name = str(cp.relative_to(here) if cp.is_relative_to(here) else cp)
    rec = derive(log.read_text(errors="replace"), scenario, version, kernel, log.name,
                 control_text, name)
    (dest / f"{scenario}.json").write_text(dumps(rec.to_json()))
    return rec


def tests_line(t: Selftests) -> str:
    """What a boot's locking tests said, in a few words."""
    api = t.locking_api
    parts = [f"locking API {api.passed}/{api.total} {api.status}" if api
             else "locking API not run"]
    if t.ww_mutex:
        parts.append(f"ww_mutex {t.ww_mutex.status}")
    if t.torture:
        parts.append("locktorture " + ", ".join(f"{r.torture_type} {r.status}"
                                                for r in t.torture))
    return "; ".join(parts)


def summary_line(rec: SelftestRecord) -> str:
    """One line of a boot's record: its tests and its reports' origins (the README's
    cell, the run's summary)."""
    counts = {o: sum(a.origin == o for a in rec.reports) for o in ORIGIN_WORDS}
    said = [f"{n} report{'s' if n > 1 else ''} {ORIGIN_WORDS[o]}"
            for o, n in counts.items() if n]
    return f"{tests_line(rec.selftests)}; {'; '.join(said) if said else 'no report'}"
