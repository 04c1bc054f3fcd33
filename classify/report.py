"""Report writers: audit.json (stable, sorted), audit.md and audit.html.

The JSON is the record: a top-level object whose ``semaphores`` list holds, for
each semaphore, ``id``, ``class``, ``reasons``, ``evidence``, ``ops`` and ``init``
(plus ``settle`` for the unknown pool), and whose ``failures`` list names the files
spatch could not analyse.  Timings are left out on purpose so that a regenerated
report is byte-identical to the committed one.
"""

from __future__ import annotations

import html
import json
from collections import Counter, defaultdict
from pathlib import Path

from classify.audit import Audit, SemResult
from classify.rules import CLASSES
from classify.evidence import summary_line

SCHEMA = "sem2mutex-audit-1"
COLOURS = {"unknown": "#9e9e9e", "mutex": "#2e7d32", "completion": "#1565c0",
           "counting": "#ef6c00"}


def _sem_json(r: SemResult) -> dict:
    d, sf, v = r.decl, r.facts, r.verdict
    return {
        "id": d.id,
        "class": v.cls,
        "reasons": v.reasons,
        "settle": v.settle,
        "evidence": v.evidence,
        "subsystem": r.subsystem,
        "declared": {"path": d.path, "line": d.line, "kind": d.kind,
                     "array": d.array, "struct": d.struct, "function": d.func},
        "init": [{"path": i.path, "line": i.line, "form": i.form, "count": i.count,
                  "value": i.value} for i in sorted(set(sf.inits),
                                                     key=lambda i: (i.path, i.line))],
        "ops": [{"path": o.path, "line": o.line, "op": o.op, "function": o.func,
                 "analysed": o.analysed, "balanced": o.balanced, "atomic": o.atomic}
                for o in sorted(set(sf.ops), key=lambda o: (o.path, o.line, o.op))],
        "possible_ops": [{"path": o.path, "line": o.line, "op": o.op, "function": o.func,
                          "note": o.note} for o in sf.possible_ops],
        "escapes": [{"path": e.path, "line": e.line, "function": e.func, "to": e.to}
                    for e in sf.escapes],
    }


def load_runtime(path: Path) -> dict | None:
    """runtime.json (written by `make boot-test SCENARIOS=runtime`) next to an audit."""
    return load_patches(path)


def _runtime_counts(sems: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in sems:
        st = s["runtime"]["status"]
        out[st] = out.get(st, 0) + 1
    return out


def _runtime_intro(runtime: dict, sems: list[dict]) -> str:
    c = _runtime_counts(sems)
    return (f"DEBUG_MUTEX_FULL boots on {runtime.get('config', '?')} "
            f"({len(runtime.get('boots', {}))} boots; trust kernels mark the counting pool "
            "struct arch_semaphore, each challenge or probe kernel leaves one semaphore a "
            "debug mutex): " + ", ".join(f"{k} {c[k]}" for k in
                                         ("clean", "violated", "not-exercised", "not-built")
                                         if k in c) + ".")


def load_patches(path: Path) -> dict | None:
    """patches.json (written by `make patches`) next to an audit, if there is one."""
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _patch_cell(rec: dict) -> str:
    """One line: the patch and its verification, or why there is none."""
    if rec.get("status") != "converted":
        return f"{rec.get('status', '?')}: " + "; ".join(rec.get("why", [])[:2])
    text = f"{rec.get('series', '')}/{rec.get('patch', '')}"
    if "verify" in rec:
        text += f": {rec['verify']}"
        cp = rec.get("checkpatch") or {}
        if cp:
            text += (f" (checkpatch {cp.get('errors', 0)} errors, {cp.get('warnings', 0)} "
                     f"warnings, {cp.get('checks', 0)} checks; "
                     f"{len(rec.get('new_sparse', []))} new sparse warnings)")
        nb = [f"{f}: {b}" for f, b in rec.get("build", {}).items() if b.startswith("not built")]
        if nb:
            text += "; " + "; ".join(nb)
        if rec.get("problems"):
            text += "; " + "; ".join(rec["problems"])
    else:
        text += ": not verified"
    return text


def to_json(a: Audit, patches: dict | None = None,
            runtime: dict | None = None) -> dict:
    counts = Counter(r.verdict.cls for r in a.results)
    sems = [_sem_json(r) for r in sorted(a.results, key=lambda r: r.decl.id)]
    if patches is not None:
        recs = patches.get("semaphores", {})
        for s in sems:
            if s["id"] in recs:
                s["patch"] = recs[s["id"]]
    if runtime is not None:
        recs = runtime.get("semaphores", {})
        for s in sems:
            s["runtime"] = recs.get(s["id"], {"status": "not-run"})
    return {
        "schema": SCHEMA,
        "kernel_version": a.version,
        "files_scanned": a.files,
        "counts": {c: counts.get(c, 0) for c in CLASSES},
        "total": len(a.results),
        "semaphores": sems,
        "failures": [{"path": f.path, "status": f.status, "error": f.error}
                     for f in a.failures],
        "unparsed_functions": _unparsed(a),
        "unresolved_ops": [{"path": o.path, "line": o.line, "op": o.op, "expr": o.expr,
                            "function": o.func, "why": o.note,
                            "candidates": list(o.candidates)} for o in a.unresolved_ops],
        "pointers": [{"id": d.id, "path": d.path, "line": d.line, "kind": d.kind,
                      "ops": [{"path": o.path, "line": o.line, "op": o.op,
                               "function": o.func} for o in ops]}
                     for d, ops in a.pointers],
    }


def _unparsed(a: Audit) -> list[dict]:
    """Functions holding a semaphore call that spatch did not see (parse failure)."""
    seen = {}
    for r in a.results:
        for o in r.facts.ops:
            if not o.analysed:
                key = (o.path, o.func)
                seen.setdefault(key, []).append(o.line)
    return [{"path": p, "function": f, "lines": sorted(set(lines))}
            for (p, f), lines in sorted(seen.items())]


def write_json(a: Audit, path: Path, patches: dict | None = None,
               runtime: dict | None = None) -> None:
    path.write_text(json.dumps(to_json(a, patches, runtime), indent=1, sort_keys=True) + "\n")


# ------------------------------------------------------------------ markdown

def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def to_markdown(a: Audit, patches: dict | None = None,
                runtime: dict | None = None) -> str:
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
        out += ["## Runtime evidence (`make boot-test SCENARIOS=runtime`)", "",
                _runtime_intro(runtime, sems), "",
                "| semaphore | class | runtime |", "|---|---|---|"]
        for s in sems:
            out.append(f"| `{s['id']}` | {s['class']} | "
                       f"{_md_escape(summary_line(s['runtime']))} |")
        out.append("")
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
    if data["pointers"]:
        out += ["## Pointers to semaphores (not semaphores of their own)", ""]
        for p in data["pointers"]:
            ops = ", ".join(f"{o['op']}() at {o['path']}:{o['line']}" for o in p["ops"])
            out.append(f"- `{p['id']}` ({p['kind']}, {p['path']}:{p['line']})"
                       + (f": {ops}" if ops else ""))
        out.append("")
    return "\n".join(out)


def write_markdown(a: Audit, path: Path, patches: dict | None = None,
                   runtime: dict | None = None) -> None:
    path.write_text(to_markdown(a, patches, runtime))


# ------------------------------------------------------------------ HTML

def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _chart(by_sub: dict[str, list[dict]]) -> str:
    """CSS bars: one row per subsystem, one segment per class."""
    rows = []
    widest = max((len(v) for v in by_sub.values()), default=1)
    for sub in sorted(by_sub, key=lambda s: (-len(by_sub[s]), s)):
        counts = Counter(s["class"] for s in by_sub[sub])
        segs = "".join(
            f'<span class="seg" style="width:{100 * counts[c] / widest:.2f}%;'
            f'background:{COLOURS[c]}" title="{_e(c)}: {counts[c]}"></span>'
            for c in CLASSES if counts.get(c))
        rows.append(f'<div class="row"><span class="lbl">{_e(sub)}</span>'
                    f'<span class="bar">{segs}</span><span class="n">{len(by_sub[sub])}</span></div>')
    legend = " ".join(f'<span class="key" style="background:{COLOURS[c]}"></span>{_e(c)}'
                      for c in CLASSES)
    return f'<div class="chart"><p>{legend}</p>{"".join(rows)}</div>'


def to_html(a: Audit, patches: dict | None = None,
            runtime: dict | None = None) -> str:
    data = to_json(a, patches, runtime)
    sems = data["semaphores"]
    by_sub = defaultdict(list)
    for s in sems:
        by_sub[s["subsystem"]].append(s)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>sem2mutex audit: Linux {_e(a.version)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:80em}"
        "table{border-collapse:collapse;margin-bottom:1.5em}"
        "td,th{border:1px solid #ccc;padding:.25em .5em;vertical-align:top;font-size:90%}"
        "code{font-size:95%}.chart .row{display:flex;align-items:center;margin:1px 0}"
        ".lbl{width:16em;font-size:85%}.bar{flex:1;display:flex;height:1em}"
        ".seg{display:inline-block;height:1em}.n{width:3em;text-align:right;font-size:85%}"
        ".key{display:inline-block;width:1em;height:1em;margin:0 .3em 0 1em;vertical-align:middle}"
        ".unknown{color:#555}.mutex{color:#2e7d32}.completion{color:#1565c0}"
        ".counting{color:#ef6c00}.rt-violated{color:#c62828}.rt-clean{color:#2e7d32}"
        ".rt-not-built,.rt-not-exercised{color:#757575}</style></head><body>",
        f"<h1>sem2mutex audit: Linux {_e(a.version)}</h1>",
        f"<p>{data['total']} struct semaphores in {a.files} files that can matter.</p>",
        "<table><tr><th>class</th><th>count</th></tr>",
    ]
    for c in CLASSES:
        parts.append(f'<tr><td class="{c}">{_e(c)}</td><td>{data["counts"][c]}</td></tr>')
    parts.append("</table>")
    parts.append("<h2>Classes per subsystem</h2>" + _chart(by_sub))
    if data["failures"]:
        parts.append("<h2>Files spatch could not analyse</h2><ul>")
        for f in data["failures"]:
            parts.append(f"<li><code>{_e(f['path'])}</code>: {_e(f['status'])}: "
                         f"{_e(f['error'])}</li>")
        parts.append("</ul>")
    if data["unparsed_functions"]:
        parts.append("<h2>Functions and macros spatch did not analyse (with a semaphore call)</h2><ul>")
        for u in data["unparsed_functions"]:
            parts.append(f"<li><code>{_e(u['path'])}</code>: {_e(u['function'] or '(file scope)')}() "
                         f"(lines {_e(', '.join(str(x) for x in u['lines']))})</li>")
        parts.append("</ul>")
    with_patch = [s for s in sems if "patch" in s]
    if with_patch:
        parts.append("<h2>Conversion patches (<code>make patches</code>)</h2>"
                     f"<p>Verified on {_e(patches.get('config', '?'))}.</p>"
                     "<table><tr><th>semaphore</th><th>class</th>"
                     "<th>patch and its verification</th></tr>")
        for s in with_patch:
            parts.append(f"<tr><td><code>{_e(s['id'])}</code></td>"
                         f"<td class=\"{_e(s['class'])}\">{_e(s['class'])}</td>"
                         f"<td>{_e(_patch_cell(s['patch']))}</td></tr>")
        parts.append("</table>")
    if runtime is not None:
        parts.append("<h2>Runtime evidence (<code>make boot-test SCENARIOS=runtime</code>)"
                     f"</h2><p>{_e(_runtime_intro(runtime, sems))}</p>"
                     "<table><tr><th>semaphore</th><th>class</th><th>runtime</th></tr>")
        for s in sems:
            st = s["runtime"]["status"]
            parts.append(f"<tr><td><code>{_e(s['id'])}</code></td>"
                         f"<td class=\"{_e(s['class'])}\">{_e(s['class'])}</td>"
                         f"<td class=\"rt-{_e(st)}\">{_e(summary_line(s['runtime']))}</td></tr>")
        parts.append("</table>")
    parts.append("<h2>The unknown pool</h2><table><tr><th>semaphore</th><th>why unknown</th>"
                 "<th>what would settle it</th><th>evidence</th></tr>")
    for s in sems:
        if s["class"] == "unknown":
            parts.append(f"<tr><td><code>{_e(s['id'])}</code></td>"
                         f"<td>{_e('; '.join(s['reasons']))}</td><td>{_e(s['settle'])}</td>"
                         f"<td>{'<br>'.join(_e(x) for x in s['evidence'][:8])}</td></tr>")
    parts.append("</table><h2>By subsystem</h2>")
    for sub in sorted(by_sub):
        parts.append(f"<h3>{_e(sub)}</h3><table><tr><th>semaphore</th><th>class</th>"
                     "<th>reasons</th><th>evidence</th></tr>")
        for s in by_sub[sub]:
            parts.append(f"<tr><td><code>{_e(s['id'])}</code></td>"
                         f"<td class=\"{_e(s['class'])}\">{_e(s['class'])}</td>"
                         f"<td>{'<br>'.join(_e(x) for x in s['reasons'])}</td>"
                         f"<td>{'<br>'.join(_e(x) for x in s['evidence'][:10])}</td></tr>")
        parts.append("</table>")
    if data["unresolved_ops"]:
        parts.append("<h2>Calls whose semaphore could not be resolved</h2><ul>")
        for o in data["unresolved_ops"]:
            parts.append(f"<li><code>{_e(o['path'])}:{o['line']}</code> "
                         f"<code>{_e(o['op'])}({_e(o['expr'])})</code> in "
                         f"{_e(o['function'])}(): {_e(o['why'])}</li>")
        parts.append("</ul>")
    if data["pointers"]:
        parts.append("<h2>Pointers to semaphores</h2><ul>")
        for p in data["pointers"]:
            ops = ", ".join(f"{_e(o['op'])}() at {_e(o['path'])}:{o['line']}" for o in p["ops"])
            parts.append(f"<li><code>{_e(p['id'])}</code> ({_e(p['kind'])})"
                         + (f": {ops}" if ops else "") + "</li>")
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_html(a: Audit, path: Path, patches: dict | None = None,
               runtime: dict | None = None) -> None:
    path.write_text(to_html(a, patches, runtime))


def write_all(a: Audit, out_dir: Path, patches: dict | None = None,
              runtime: dict | None = None) -> list[Path]:
    """The three reports; patches: the content of patches.json (each semaphore's
    conversion patch and its verification), shown when given."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "audit.json", out_dir / "audit.md", out_dir / "audit.html"]
    write_json(a, paths[0], patches, runtime)
    write_markdown(a, paths[1], patches, runtime)
    write_html(a, paths[2], patches, runtime)
    return paths
