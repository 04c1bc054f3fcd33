"""The audit as data: audit.json (sorted, stable), and the records other commands
leave beside it (patches.json, runtime.json), read back for every report.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from classify.audit import Audit, SemResult
from classify.records.audit import AUDIT_SCHEMA, AuditData, AuditSem, Call, Unparsed
from classify.records.patches import PatchesData, PatchRecord
from classify.records.runtime import STATUSES, RuntimeRecord
from classify.report.runtime import boots_line
from classify.rules import CLASSES, OpFact


def _op_json(o: OpFact) -> Call:
    """One call; with where its function runs ("context": a down_trylock()'s, and
    every call of a mutex or completion) and its callers (those calls only:
    "callers", the chains from each root to the function, shortest first, and
    "callers_more", how many more there are)."""
    out: Call = {"path": o.path, "line": o.line, "op": o.op, "function": o.func,
           "analysed": o.analysed, "balanced": o.balanced, "atomic": o.atomic}
    if o.via:
        out["via"] = list(o.via)
    if o.context:
        out["context"] = o.context
    if o.callers is not None:
        out["callers"] = list(o.callers)
        out["callers_more"] = o.callers_more
    return out


def _sem_json(r: SemResult) -> AuditSem:
    d, sf, v = r.decl, r.facts, r.verdict
    return {
        "id": d.id,
        "class": v.cls,
        "reasons": v.reasons,
        "settle": v.settle,
        "rule": v.rule,
        "evidence": v.evidence,
        "subsystem": r.subsystem,
        "declared": {"path": d.path, "line": d.line, "kind": d.kind,
                     "array": d.array, "struct": d.struct, "function": d.func},
        "init": [{"path": i.path, "line": i.line, "form": i.form, "count": i.count,
                  "value": i.value} for i in sorted(set(sf.inits),
                                                     key=lambda i: (i.path, i.line))],
        "ops": [_op_json(o) for o in sorted(set(sf.ops), key=lambda o: (o.path, o.line, o.op))],
        "possible_ops": [{"path": o.path, "line": o.line, "op": o.op, "function": o.func,
                          "note": o.note} for o in sf.possible_ops],
        "escapes": [{"path": e.path, "line": e.line, "function": e.func, "to": e.to}
                    for e in sf.escapes],
        "followed": [f.to_json() for f in sf.followed],
    }


def load_runtime(path: Path) -> RuntimeRecord | None:
    """runtime.json (written by `make boot-test SCENARIOS=runtime`) next to an audit,
    None when there is none; RecordError when the file is not a runtime record."""
    return RuntimeRecord.load(path) if path.is_file() else None


def _runtime_intro(runtime: RuntimeRecord, sems: list[AuditSem]) -> str:
    c = Counter(runtime.of(s["id"]).status for s in sems)
    return (f"DEBUG_MUTEX_FULL boots on {runtime.config} "
            f"({boots_line(runtime.boots)}; trust kernels mark the counting pool "
            "struct arch_semaphore, each challenge or probe kernel leaves one semaphore a "
            "debug mutex; every record is derived from the console logs and compiler "
            "errors committed in runtime/): "
            + ", ".join(f"{k} {c[k]}" for k in STATUSES if k in c) + ".")


def load_patches(path: Path) -> PatchesData | None:
    """patches.json (written by `make patches`) next to an audit, if there is one."""
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _patch_cell(rec: PatchRecord) -> str:
    """One line: the patch and its verification, or why there is none."""
    if rec.get("status") != "converted":
        return f"{rec.get('status', '?')}: " + "; ".join(rec.get("why", [])[:2])
    text = f"{rec.get('series', '')}/{rec.get('patch', '')}"
    if rec.get("hand"):
        text += " (written by hand)"
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


def to_json(a: Audit, patches: PatchesData | None = None,
            runtime: RuntimeRecord | None = None) -> AuditData:
    counts = Counter(r.verdict.cls for r in a.results)
    sems = [_sem_json(r) for r in sorted(a.results, key=lambda r: r.decl.id)]
    if patches is not None:
        recs = patches.get("semaphores", {})
        for s in sems:
            if s["id"] in recs:
                s["patch"] = recs[s["id"]]
    if runtime is not None:
        for s in sems:
            s["runtime"] = runtime.of(s["id"]).to_json()
    return {
        "schema": AUDIT_SCHEMA,
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
        "allocated": [f.to_json() for f in a.allocated],
    }


def _unparsed(a: Audit) -> list[Unparsed]:
    """Functions holding a semaphore call that spatch did not see (parse failure)."""
    seen = {}
    for r in a.results:
        for o in r.facts.ops:
            if not o.analysed:
                key = (o.path, o.func)
                seen.setdefault(key, []).append(o.line)
    return [{"path": p, "function": f, "lines": sorted(set(lines))}
            for (p, f), lines in sorted(seen.items())]


def write_json(a: Audit, path: Path, patches: PatchesData | None = None,
               runtime: RuntimeRecord | None = None) -> None:
    path.write_text(json.dumps(to_json(a, patches, runtime), indent=1, sort_keys=True) + "\n")
