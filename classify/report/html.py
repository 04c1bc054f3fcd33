"""audit.html: the same report for a browser, with a chart of the classes per
subsystem (CSS only, no script).
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from pathlib import Path

from classify.audit import Audit
from classify.records.audit import AuditData, AuditSem
from classify.records.patches import PatchesData
from classify.records.runtime import RuntimeRecord
from classify.report.data import _patch_cell, _runtime_intro, to_json
from classify.report.runtime import summary_line
from classify.rules import CLASSES


COLOURS = {"unknown": "#9e9e9e", "mutex": "#2e7d32", "completion": "#1565c0",
           "counting": "#ef6c00"}


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _chart(by_sub: dict[str, list[AuditSem]]) -> str:
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


_STYLE = ("<style>body{font-family:sans-serif;margin:2em;max-width:80em}"
          "table{border-collapse:collapse;margin-bottom:1.5em}"
          "td,th{border:1px solid #ccc;padding:.25em .5em;vertical-align:top;font-size:90%}"
          "code{font-size:95%}.chart .row{display:flex;align-items:center;margin:1px 0}"
          ".lbl{width:16em;font-size:85%}.bar{flex:1;display:flex;height:1em}"
          ".seg{display:inline-block;height:1em}.n{width:3em;text-align:right;font-size:85%}"
          ".key{display:inline-block;width:1em;height:1em;margin:0 .3em 0 1em;"
          "vertical-align:middle}"
          ".unknown{color:#555}.mutex{color:#2e7d32}.completion{color:#1565c0}"
          ".counting{color:#ef6c00}.rt-violated{color:#c62828}.rt-exercised-clean{color:#2e7d32}"
          ".rt-does-not-build-as-a-mutex{color:#ad1457}"
          ".rt-not-built,.rt-not-exercised{color:#757575}</style></head><body>")


def _cls_cell(s: AuditSem) -> str:
    return f"<td class=\"{_e(s['class'])}\">{_e(s['class'])}</td>"


def _html_head(a: Audit, data: AuditData, by_sub: dict[str, list[AuditSem]]) -> list[str]:
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>sem2mutex audit: Linux {_e(a.version)}</title>", _STYLE,
        f"<h1>sem2mutex audit: Linux {_e(a.version)}</h1>",
        f"<p>{data['total']} struct semaphores in {a.files} files that can matter.</p>",
        "<table><tr><th>class</th><th>count</th></tr>",
    ]
    for c in CLASSES:
        parts.append(f'<tr><td class="{c}">{_e(c)}</td><td>{data["counts"][c]}</td></tr>')
    parts.append("</table>")
    parts.append("<h2>Classes per subsystem</h2>" + _chart(by_sub))
    return parts


def _html_not_analysed(data: AuditData) -> list[str]:
    parts = []
    if data["failures"]:
        parts.append("<h2>Files spatch could not analyse</h2><ul>")
        for f in data["failures"]:
            parts.append(f"<li><code>{_e(f['path'])}</code>: {_e(f['status'])}: "
                         f"{_e(f['error'])}</li>")
        parts.append("</ul>")
    if data["unparsed_functions"]:
        parts.append("<h2>Functions and macros spatch did not analyse (with a semaphore "
                     "call)</h2><ul>")
        for u in data["unparsed_functions"]:
            parts.append(f"<li><code>{_e(u['path'])}</code>: "
                         f"{_e(u['function'] or '(file scope)')}() "
                         f"(lines {_e(', '.join(str(x) for x in u['lines']))})</li>")
        parts.append("</ul>")
    return parts


def _html_patches(sems: list[AuditSem], patches: PatchesData | None) -> list[str]:
    with_patch = [s for s in sems if "patch" in s]
    if not with_patch:
        return []
    parts = ["<h2>Conversion patches (<code>make patches</code>)</h2>"
             f"<p>Verified on {_e(patches.get('config', '?'))}.</p>"
             "<table><tr><th>semaphore</th><th>class</th>"
             "<th>patch and its verification</th></tr>"]
    for s in with_patch:
        parts.append(f"<tr><td><code>{_e(s['id'])}</code></td>{_cls_cell(s)}"
                     f"<td>{_e(_patch_cell(s['patch']))}</td></tr>")
    parts.append("</table>")
    return parts


def _html_runtime(sems: list[AuditSem], runtime: RuntimeRecord | None) -> list[str]:
    if runtime is None:
        return []
    parts = ["<h2>Runtime evidence (<code>make boot-test SCENARIOS=runtime</code>)"
             f"</h2><p>{_e(_runtime_intro(runtime, sems))}</p>"
             "<table><tr><th>semaphore</th><th>class</th><th>runtime</th></tr>"]
    for s in sems:
        rec = runtime.of(s["id"])
        parts.append(f"<tr><td><code>{_e(s['id'])}</code></td>{_cls_cell(s)}"
                     f"<td class=\"rt-{_e(rec.status)}\">{_e(summary_line(rec))}</td></tr>")
    parts.append("</table>")
    return parts


def _html_pools(sems: list[AuditSem], by_sub: dict[str, list[AuditSem]]) -> list[str]:
    parts = ["<h2>The unknown pool</h2><table><tr><th>semaphore</th><th>why unknown</th>"
             "<th>what would settle it</th><th>evidence</th></tr>"]
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
            parts.append(f"<tr><td><code>{_e(s['id'])}</code></td>{_cls_cell(s)}"
                         f"<td>{'<br>'.join(_e(x) for x in s['reasons'])}</td>"
                         f"<td>{'<br>'.join(_e(x) for x in s['evidence'][:10])}</td></tr>")
        parts.append("</table>")
    return parts


def _html_unresolved(data: AuditData) -> list[str]:
    parts = []
    if data["unresolved_ops"]:
        parts.append("<h2>Calls whose semaphore could not be resolved</h2><ul>")
        for o in data["unresolved_ops"]:
            parts.append(f"<li><code>{_e(o['path'])}:{o['line']}</code> "
                         f"<code>{_e(o['op'])}({_e(o['expr'])})</code> in "
                         f"{_e(o['function'])}(): {_e(o['why'])}</li>")
        parts.append("</ul>")
    if data["allocated"]:
        parts.append("<h2>Semaphores allocated at run time</h2><ul>")
        for f in data["allocated"]:
            parts.append(f"<li><code>{_e(f['id'])}</code> ({_e(f['class'])}): "
                         f"{_e('; '.join(f['reasons']))}; pointers: "
                         + ", ".join(f"<code>{_e(p)}</code>" for p in f["pointers"])
                         + "</li>")
        parts.append("</ul>")
    if data["pointers"]:
        parts.append("<h2>Pointers to semaphores</h2><ul>")
        for p in data["pointers"]:
            ops = ", ".join(f"{_e(o['op'])}() at {_e(o['path'])}:{o['line']}"
                            for o in p["ops"])
            parts.append(f"<li><code>{_e(p['id'])}</code> ({_e(p['kind'])})"
                         + (f": {ops}" if ops else "") + "</li>")
        parts.append("</ul>")
    return parts


def to_html(a: Audit, patches: PatchesData | None = None,
            runtime: RuntimeRecord | None = None) -> str:
    data = to_json(a, patches, runtime)
    sems = data["semaphores"]
    by_sub = defaultdict(list)
    for s in sems:
        by_sub[s["subsystem"]].append(s)
    parts = (_html_head(a, data, by_sub) + _html_not_analysed(data)
             + _html_patches(sems, patches) + _html_runtime(sems, runtime)
             + _html_pools(sems, by_sub) + _html_unresolved(data))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_html(a: Audit, path: Path, patches: PatchesData | None = None,
               runtime: RuntimeRecord | None = None) -> None:
    path.write_text(to_html(a, patches, runtime))
