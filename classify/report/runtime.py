"""The runtime records in words: one line per semaphore for the report tables (and for
the runtime set's and triage's summaries), one for the boots of a record."""

from __future__ import annotations

from classify.records.runtime import (CLEAN, NO_BUILD, NOT_BUILT, VIOLATED, BootRecord,
                                      SemRuntime)


def repeat_text(rec: SemRuntime) -> str:
    """"over 5 boots of runtime-btrfs-challenge: A 3, B 2 (depends on timing)"."""
    parts = []
    for r in rec.repeats or []:
        seen = ", ".join(f"{o.outcome} {o.seen}" for o in r.outcomes)
        timing = " (depends on timing)" if len(r.outcomes) > 1 else " (every time)"
        parts.append(f"over {r.boots} boots of {r.scenario}: {seen}{timing}")
    return "; ".join(parts)


def _status_text(rec: SemRuntime) -> str:
    st = rec.status
    if st == VIOLATED:
        text = f"violated: {rec.kind}: {rec.title} ({rec.boot})"
        if rec.detail:
            text += f" [{rec.detail}]"
        return text
    if st == NO_BUILD:
        return f"does not build as a mutex: {rec.compiler} ({rec.boot})"
    if st == CLEAN:
        return f"exercised, clean: {rec.evidence or ''} ({rec.boot})"
    if st == NOT_BUILT:
        return "not-built: " + ", ".join((rec.files or [])[:3])
    return st


def reports_word(n: int) -> str:
    return "report" if n == 1 else "reports"


def more_reports(rec: SemRuntime) -> int:
    """How many other reports the boot that decided a violated record printed (the
    boot's record lists them all, in order)."""
    if rec.status != VIOLATED:
        return 0
    return next((e.more or 0 for e in rec.boots or [] if e.boot == rec.boot), 0)


def summary_line(rec: SemRuntime) -> str:
    """One line for the report tables: the first report, and how many others its boot
    printed."""
    text = _status_text(rec)
    if more := more_reports(rec):
        text += f"; {more} more {reports_word(more)} in {rec.boot}"
    if rep := repeat_text(rec):
        text += f"; {rep}"
    boots = rec.boots or []
    shown = {rec.boot} | {b.boot for b in boots
                          if any(b.boot != rec.boot and b.boot.rsplit(".", 1)[0] == r.scenario
                                 for r in rec.repeats or [])}
    others = [e for e in boots if e.boot not in shown]
    more = len(others) - 3
    for e in others[:3]:
        text += f"; {e.boot} (as {e.ran_as}): {e.result}"
        if e.result == "violated":
            text += f": {e.kind}: {e.title}"
        elif e.ops is not None:
            text += f", OPS {e.ops}"
    if more > 0:
        text += f"; {more} more boot(s)"
    if rec.finding:
        text += f"; FINDING: {rec.finding}"
    if rec.converted:
        text += f"; {converted_text(rec.converted)}"
    return text


def converted_text(boots: list) -> str:
    """The boots of its conversion patch: "converted by P: booted clean in B" or
    what broke, each boot once (classify.records.runtime.Converted)."""
    said = []
    for c in boots:
        if c.result == "clean":
            said.append(f"booted clean in {c.boot}")
            continue
        why = [f"{c.kind}: {c.title}"] if c.kind else []
        why += [f"{', '.join(c.failed)} not ok"] if c.failed else []
        why += [c.verdict] if c.verdict != "completed" else []
        said.append(f"BROKE in {c.boot}: {'; '.join(why)}")
    patch = boots[0].patch
    return f"converted{f' by {patch}' if patch else ''}: " + ", ".join(said)


def boots_line(boots: dict[str, BootRecord]) -> str:
    """How many kernels booted how many times, and which were never booted (the
    "boots" of a runtime record)."""
    booted = [b for b in boots.values() if b.verdict not in ("not_built", "not_made")]
    kernels = {b.variant for b in booted}
    failed = sorted({b.variant for b in boots.values() if b.verdict == "not_built"})
    not_made = sorted({b.variant for b in boots.values() if b.verdict == "not_made"})
    text = f"{len(booted)} boots of {len(kernels)} kernels"
    if failed:
        text += f"; {len(failed)} kernel(s) did not build, not booted: " + ", ".join(failed)
    if not_made:
        text += f"; {len(not_made)} variant(s) not made: " + ", ".join(not_made)
    return text
