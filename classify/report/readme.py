"""The runtime table of docs/runtime.md, generated from runtime.json (and the audit's classes).

    python3 -m classify.report.readme            # rewrite the table in docs/runtime.md
    python3 -m classify.report.readme --check    # exit 1 when docs/runtime.md differs

The table sits between two marker lines; a test fails when it is not what this module
makes of the committed runtime.json, so the docs cannot say what the logs do not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from classify.paths import PROJECT_DIR
from classify.records.runtime import CLEAN, NO_BUILD, VIOLATED, RuntimeRecord, SemRuntime
from classify.report.runtime import boots_line

BEGIN = ("<!-- runtime table: generated from reports/linux-{version}/runtime.json by "
         "`python3 -m classify.report.readme`; do not edit -->")
END = "<!-- end of the runtime table -->"


def rows_of(runtime: RuntimeRecord) -> list[str]:
    """The ids the table shows: every semaphore a variant leaves unmarked, and every one
    a boot ran or reported."""
    ids = {v.unmarks for v in runtime.variants.values() if v.unmarks is not None}
    ids |= {i for i, r in runtime.semaphores.items() if r.status in (CLEAN, VIOLATED,
                                                                       NO_BUILD)}
    return sorted(ids)


def role(sid: str, cls: str, runtime: RuntimeRecord) -> str:
    unmarked = any(v.unmarks == sid for v in runtime.variants.values())
    if not unmarked:
        return "trust only"
    return "challenge" if cls == "counting" else "probe"


def said(rec: SemRuntime) -> str:
    """What the kernels said about one semaphore, in one cell."""
    st = rec.status
    mutex = [b for b in rec.boots or [] if b.ran_as == "mutex"]
    if st == VIOLATED:
        text = f"{rec.kind}: {rec.title}"
        if rec.detail:
            text += f" ({rec.detail})"
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
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(runtime: RuntimeRecord, audit: dict) -> str:
    """The generated block, markers included (audit: audit.json's data)."""
    classes = {s["id"]: s["class"] for s in audit["semaphores"]}
    version = runtime.kernel_version
    out = [BEGIN.format(version=version), "",
           f"On {version}: {boots_line(runtime.boots)}. Each row is derived "
           f"from the console logs and compiler errors in `reports/linux-{version}/runtime/`.",
           "", "| semaphore | class | boot | what the kernel said |", "|---|---|---|---|"]
    for sid in rows_of(runtime):
        cls = classes.get(sid, "?")
        out.append(f"| `{sid}` | {cls} | {role(sid, cls, runtime)} | "
                   f"{_cell(said(runtime.semaphores[sid]))} |")
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m classify.report.readme", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--readme", type=Path, default=PROJECT_DIR / "docs" / "runtime.md")
    p.add_argument("--version", default="6.1.192", help="kernel version of the reports")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    args = p.parse_args(argv)
    reports = PROJECT_DIR / "reports" / f"linux-{args.version}"
    block = table(RuntimeRecord.load(reports / "runtime.json"),
                  json.loads((reports / "audit.json").read_text()))
    text = args.readme.read_text()
    new = replace_block(text, block)
    if args.check:
        if new != text:
            print(f"{args.readme}: the runtime table is not the one runtime.json gives",
                  file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(new)
    print(f"wrote the runtime table of {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
