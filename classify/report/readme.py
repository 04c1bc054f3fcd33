"""The runtime figures of the documents, generated from runtime.json (and the audit's
classes): the runtime table of docs/runtime.md, with the figures of the run above it,
and the runtime row of the README's figures.

    python3 -m classify.report.readme            # rewrite both
    python3 -m classify.report.readme --check    # exit 1 when a document differs

The table sits between two marker lines, the README row is the one whose first cell
is ROW_LABEL; a test fails when either is not what this module makes of the committed
runtime.json, so the docs cannot say what the logs do not.  The figures:

    ran         a semaphore whose lock class shows operations (OPS > 0) in some boot,
                as a semaphore or as a debug mutex
    boots       the boots that ran, each with its console log: trust, challenge (a
                counting semaphore left a debug mutex), probe (any other left a debug
                mutex) or converted (a semaphore's conversion patch applied)
    kernels     the kernel variants booted; the variants that did not build
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from classify.paths import PROJECT_DIR
from classify.records.runtime import (CLEAN, NO_BUILD, VIOLATED, BootRecord, RuntimeRecord,
                                      SemRuntime)
from classify.report.runtime import converted_text, more_reports, reports_word

BEGIN = ("<!-- runtime table: generated from reports/linux-{version}/runtime.json by "
         "`python3 -m classify.report.readme`; do not edit -->")
END = "<!-- end of the runtime table -->"
ROW_LABEL = "the runtime set: semaphores a DEBUG_MUTEX_FULL kernel ran"
NOT_BOOTED = ("not_built", "not_made")


def ran(rec: SemRuntime) -> bool:
    """Its lock class shows operations in some boot (as a semaphore or a debug mutex)."""
    return any(e.ops is not None and e.ops > 0 for e in rec.boots or [])


@dataclass(frozen=True)
class Figures:
    """The figures of one runtime record, each counted the one way the docs say."""
    semaphores: int           # of the audit
    ran: int                  # OPS > 0 in some boot
    boots: int                # booted, a console log each
    trust: int                # of those, boots of the trust kernel
    challenge: int
    probe: int
    converted: int            # boots of a kernel with a conversion patch
    kernels: int              # variants booted
    variants: int
    not_built: int            # variants that did not build


def figures(runtime: RuntimeRecord, audit: dict) -> Figures:
    classes = {s["id"]: s["class"] for s in audit["semaphores"]}
    booted = [b for b in runtime.boots.values() if b.verdict not in NOT_BOOTED]
    roles = [boot_role(b, classes) for b in booted]
    return Figures(
        semaphores=len(runtime.semaphores),
        ran=sum(ran(r) for r in runtime.semaphores.values()),
        boots=len(booted), trust=roles.count("trust"), challenge=roles.count("challenge"),
        probe=roles.count("probe"), converted=roles.count("converted"),
        kernels=len({b.variant for b in booted}),
        variants=len(runtime.variants),
        not_built=len({b.variant for b in runtime.boots.values()
                       if b.verdict == "not_built"}))


def boot_role(boot: BootRecord, classes: dict[str, str]) -> str:
    if boot.variant.startswith("convert:"):
        return "converted"
    if not boot.variant.startswith("unmark:"):
        return "trust"
    return "challenge" if classes.get(boot.variant[len("unmark:"):]) == "counting" \
        else "probe"


def rows_of(runtime: RuntimeRecord) -> list[str]:
    """The ids the table shows: every semaphore a variant leaves unmarked, and every one
    a boot ran or reported."""
    ids = {v.unmarks or v.converts for v in runtime.variants.values()
           if v.unmarks or v.converts}
    ids |= {i for i, r in runtime.semaphores.items() if r.status in (CLEAN, VIOLATED,
                                                                       NO_BUILD)}
    return sorted(ids)


def role(sid: str, cls: str, runtime: RuntimeRecord) -> str:
    unmarked = any(v.unmarks == sid for v in runtime.variants.values())
    converted = any(v.converts == sid for v in runtime.variants.values())
    if not unmarked:
        return "converted" if converted else "trust only"
    return ("challenge" if cls == "counting" else "probe") + (
        ", converted" if converted else "")


def others(rec: SemRuntime, boots: dict[str, BootRecord]) -> str:
    """The other reports of the boot whose first report the cell shows, counted by kind
    ("; 4 more reports in B: mutex_debug_context, hung_task 2, hang"), or ""."""
    more = more_reports(rec)
    boot = boots.get(rec.boot or "")
    if not more or boot is None:
        return ""
    kinds: dict[str, int] = {}
    shown = False
    for r in boot.reports:
        if not shown and (r.kind, r.title) == (rec.kind, rec.title):
            shown = True
            continue
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    listed = ", ".join(k if n == 1 else f"{k} {n}" for k, n in kinds.items())
    return f"; {more} more {reports_word(more)} in {rec.boot}: {listed}"


def said(rec: SemRuntime, boots: dict[str, BootRecord] | None = None) -> str:
    """What the kernels said about one semaphore, in one cell: the first report, and
    the others its boot printed, counted."""
    st = rec.status
    mutex = [b for b in rec.boots or [] if b.ran_as == "mutex"]
    if st == VIOLATED:
        text = f"{rec.kind}: {rec.title}"
        if rec.detail:
            text += f" ({rec.detail})"
        text += others(rec, boots or {})
    elif st == NO_BUILD:
        text = f"does not build as a mutex: `{rec.compiler}`"
    elif st == CLEAN and mutex:
        ops = mutex[0].ops if mutex[0].ops is not None else "?"
        text = f"ran as a debug mutex, no report (OPS {ops})"
    elif st == CLEAN:
        text = f"ran as a semaphore only: {rec.evidence or ''}"
    else:
        text = st
    for r in rec.repeats or []:
        seen = "; ".join(f"{o.outcome}: {o.seen}" for o in r.outcomes)
        text += (f"; over {r.boots} boots: {seen}" +
                 (" (depends on timing)" if len(r.outcomes) > 1 else ""))
    if rec.finding:
        text += f"; **finding**: {rec.finding}"
    if rec.converted:
        text += f"; {converted_text(rec.converted)}"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def figures_text(runtime: RuntimeRecord, audit: dict) -> str:
    """The figures of the run, in the words the docs use."""
    f = figures(runtime, audit)
    version = runtime.kernel_version
    text = (f"On {version}: {f.ran} of the audit's {f.semaphores} semaphores ran: their "
            "lock class shows operations (OPS > 0) in some boot, as a semaphore or as a "
            f"debug mutex. {f.boots} boots of {f.kernels} kernels, each boot with its "
            f"console log in `reports/linux-{version}/runtime/`: {f.trust} boots of the "
            f"trust kernel, {f.challenge} of challenges"
            + (f", {f.probe} of probes and {f.converted} of conversion patches."
               if f.converted else f" and {f.probe} of probes."))
    failed = sorted({b.variant for b in runtime.boots.values() if b.verdict == "not_built"})
    not_made = sorted({b.variant for b in runtime.boots.values() if b.verdict == "not_made"})
    text += f" Of the {f.variants} kernel variants, {len(failed)} did not build"
    text += (": " + ", ".join(failed) if failed else "")
    if not_made:
        text += f"; {len(not_made)} were not made: " + ", ".join(not_made)
    return text + (". Each row is derived from those logs and the compiler errors beside "
                   "them.")


def table(runtime: RuntimeRecord, audit: dict) -> str:
    """The generated block, markers included (audit: audit.json's data)."""
    classes = {s["id"]: s["class"] for s in audit["semaphores"]}
    out = [BEGIN.format(version=runtime.kernel_version), "", figures_text(runtime, audit),
           "", "| semaphore | class | boot | what the kernel said |", "|---|---|---|---|"]
    for sid in rows_of(runtime):
        cls = classes.get(sid, "?")
        out.append(f"| `{sid}` | {cls} | {role(sid, cls, runtime)} | "
                   f"{_cell(said(runtime.semaphores[sid], runtime.boots))} |")
    out += ["", "All semaphores of the audit: " + ", ".join(
        f"{k} {v}" for k, v in runtime.counts.items()) + ".", "", END]
    return "\n".join(out)


def replace_block(text: str, block: str) -> str:
    """text with its generated block replaced (the first line names the version)."""
    start = text.find(BEGIN.split("{version}")[0])
    end = text.find(END)
    if start < 0 or end < 0:
        raise ValueError("no runtime table markers (see BEGIN and END)")
    return text[:start] + block + text[end + len(END):]


# ------------------------------------------------------------------ the README's row

def readme_cell(reports: Path, version: str) -> str:
    """The README's figure for one version: the semaphores that ran, or "not run"."""
    path = reports / f"linux-{version}" / "runtime.json"
    if not path.is_file():
        return "not run"
    runtime = RuntimeRecord.load(path)
    audit = json.loads((path.parent / "audit.json").read_text())
    return f"{figures(runtime, audit).ran} of {len(audit['semaphores'])} " \
           "([docs/runtime.md](docs/runtime.md))"


def replace_row(text: str, reports: Path) -> str:
    """text with the README's runtime row made again, one cell per version of its
    table's header."""
    lines = text.split("\n")
    at = next((i for i, ln in enumerate(lines) if ln.startswith(f"| {ROW_LABEL} |")), None)
    if at is None:
        raise ValueError(f"no row {ROW_LABEL!r}")
    head = at
    while head > 0 and lines[head - 1].startswith("|"):
        head -= 1
    versions = [c.strip() for c in lines[head].strip().strip("|").split("|")][1:]
    cells = [readme_cell(reports, v) for v in versions]
    lines[at] = f"| {ROW_LABEL} | " + " | ".join(cells) + " |"
    return "\n".join(lines)


# ------------------------------------------------------------------ the command

def _update(path: Path, new: str, check: bool, what: str) -> bool:
    """Write path (or with check only compare); False when it differed under check."""
    if path.read_text() == new:
        return True
    if check:
        print(f"{path}: the {what} is not the one runtime.json gives", file=sys.stderr)
        return False
    path.write_text(new)
    print(f"wrote the {what} of {path}")
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m classify.report.readme", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--readme", type=Path, default=PROJECT_DIR / "docs" / "runtime.md",
                   help="the document with the runtime table")
    p.add_argument("--start-page", type=Path, default=PROJECT_DIR / "README.md",
                   help="the document with the runtime row of the figures")
    p.add_argument("--reports", type=Path, default=PROJECT_DIR / "reports")
    p.add_argument("--version", default="6.1.192", help="kernel version of the table")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    args = p.parse_args(argv)
    reports = args.reports / f"linux-{args.version}"
    block = table(RuntimeRecord.load(reports / "runtime.json"),
                  json.loads((reports / "audit.json").read_text()))
    ok = _update(args.readme, replace_block(args.readme.read_text(), block), args.check,
                 "runtime table")
    ok &= _update(args.start_page, replace_row(args.start_page.read_text(), args.reports),
                  args.check, "runtime row")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
