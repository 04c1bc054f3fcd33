"""audit.md: the unknown pool first (why, and what would settle it), then every
pool, for a maintainer reading it on a forge or in a terminal.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from classify.audit import Audit
from classify.records.audit import AuditData, AuditSem
from classify.records.patches import PatchesData
from classify.records.runtime import RuntimeRecord
from classify.report.data import _patch_cell, _runtime_intro, to_json
from classify.report.runtime import summary_line
from classify.rules import CLASSES


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def to_markdown(a: Audit, patches: PatchesData | None = None,
                runtime: RuntimeRecord | None = None) -> str:
    data = to_json(a, patches, runtime)
    out = [f"# sem2mutex audit: Linux {a.version}", ""]
    out.append(f"{data['total']} struct semaphores in {a.files} files that can matter.")
    out.append("")
    out.append("| class | count |")
    out.append("|---|---|")
    for c in CLASSES:
        out.append(f"| {c} | {data['counts'][c]} |")
    out.append("")
    if data["failures"]:
        out += ["## Files spatch could not analyse", ""]
        for f in data["failures"]:
            out.append(f"- `{f['path']}`: {f['status']}: {_md_escape(f['error'])}")
        out.append("")
    if data["unparsed_functions"]:
        out += ["## Functions and macros spatch did not analyse (with a semaphore call)", ""]
        for u in data["unparsed_functions"]:
            out.append(f"- `{u['path']}`: {u['function'] or '(file scope)'}() "
                       f"(lines {', '.join(str(x) for x in u['lines'])})")
        out.append("")
    sems = data["semaphores"]
    with_patch = [s for s in sems if "patch" in s]
    if with_patch:
        out += ["## Conversion patches (`make patches`)", "",
                f"Verified on {patches.get('config', '?')}.", "",
                "| semaphore | class | patch and its verification |", "|---|---|---|"]
        for s in with_patch:
            out.append(f"| `{s['id']}` | {s['class']} | {_md_escape(_patch_cell(s['patch']))} |")
        out.append("")
    if runtime is not None:
        out += _md_runtime(sems, runtime)
    out += ["## The unknown pool", "",
            "| semaphore | why unknown | what would settle it |", "|---|---|---|"]
    for s in sems:
        if s["class"] == "unknown":
            out.append(f"| `{s['id']}` | {_md_escape('; '.join(s['reasons']))} | "
                       f"{_md_escape(s['settle'])} |")
    out.append("")
    by_sub = defaultdict(list)
    for s in sems:
        by_sub[s["subsystem"]].append(s)
    out += ["## By subsystem", ""]
    for sub in sorted(by_sub):
        out += [f"### {sub}", "", "| semaphore | class | reasons | evidence |",
                "|---|---|---|---|"]
        for s in by_sub[sub]:
            out.append(f"| `{s['id']}` | {s['class']} | {_md_escape('; '.join(s['reasons']))}"
                       f" | {_md_escape('<br>'.join(s['evidence'][:8]))} |")
        out.append("")
    if data["unresolved_ops"]:
        out += ["## Calls whose semaphore could not be resolved", ""]
        for o in data["unresolved_ops"]:
            out.append(f"- `{o['path']}:{o['line']}` {o['op']}({_md_escape(o['expr'])}) "
                       f"in {o['function']}(): {_md_escape(o['why'])}")
        out.append("")
    out += _md_pointers(data)
    return "\n".join(out)


def _md_pointers(data: AuditData) -> list[str]:
    """The semaphores allocated at run time, and the pointers to semaphores."""
    out: list[str] = []
    if data["allocated"]:
        out += ["## Semaphores allocated at run time", "",
                "No declaration: a file allocates them and initialises them through "
                "its pointers (the family below); the marking (0004) keeps a counting "
                "family struct arch_semaphore.", "",
                "| allocated | class | reasons | pointers |", "|---|---|---|---|"]
        for f in data["allocated"]:
            out.append(f"| `{f['id']}` | {f['class']} | {_md_escape('; '.join(f['reasons']))}"
                       f" | {', '.join(f'`{p}`' for p in f['pointers'])} |")
        out.append("")
    if data["pointers"]:
        out += ["## Pointers to semaphores (not semaphores of their own)", ""]
        for p in data["pointers"]:
            ops = ", ".join(f"{o['op']}() at {o['path']}:{o['line']}" for o in p["ops"])
            out.append(f"- `{p['id']}` ({p['kind']}, {p['path']}:{p['line']})"
                       + (f": {ops}" if ops else ""))
        out.append("")
    return out


def _md_runtime(sems: list[AuditSem], runtime: RuntimeRecord) -> list[str]:
    out = ["## Runtime evidence (`make boot-test SCENARIOS=runtime`)", "",
           _runtime_intro(runtime, sems), "",
           "| semaphore | class | runtime |", "|---|---|---|"]
    for s in sems:
        out.append(f"| `{s['id']}` | {s['class']} | "
                   f"{_md_escape(summary_line(runtime.of(s['id'])))} |")
    return out + [""]


def write_markdown(a: Audit, path: Path, patches: PatchesData | None = None,
                   runtime: RuntimeRecord | None = None) -> None:
    path.write_text(to_markdown(a, patches, runtime))
