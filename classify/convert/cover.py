"""The cover letter of a series: why (the 2005 migration, what a mutex gives),
what each patch does, what was left out, the base.  The
testing paragraph is added by the verification (classify.convert.testing).
"""

from __future__ import annotations

from pathlib import Path

from classify.convert.message import Converted, and_list, lock_name, wrap
from classify.convert.select import Outcome


# why, said for the kinds of lock the series converts
HISTORY = (
    "The generic mutex subsystem was merged in 2006 with a path for moving the "
    "kernel's semaphores over that was never finished; these patches continue it "
    "for the code below.")
WHY = {
    "mutex": ("Each semaphore converted to a mutex here is binary and held by one task "
              "at a time. A mutex gets lockdep and CONFIG_DEBUG_MUTEXES checking (owner, "
              "recursion, a release by another task, freeing while held) and "
              "optimistic spinning."),
    "completion": ("Each semaphore converted to a completion here only counts events: "
                   "one side waits for them, the other signals them. A completion counts "
                   "them the same way, and its type says what it is for."),
}


def motivation(classes: set[str]) -> str:
    """Why: the mutex migration's history only where the series makes mutexes."""
    return " ".join([HISTORY] * ("mutex" in classes)
                    + [WHY[c] for c in ("mutex", "completion") if c in classes])


def _kinds(classes: set[str], many: bool) -> str:
    names = {"mutex": ("a mutex", "mutexes"), "completion": ("a completion", "completions")}
    return " and ".join(names[c][many] for c in sorted(classes, reverse=True))


def cover_subject(prefix: str, classes: set[str]) -> str:
    return f"{prefix}Convert semaphores to {_kinds(classes, True)}"


def patch_summary(items: list[Converted]) -> str:
    """One sentence per patch for the cover letter: what it converts."""
    parts = []
    for cls, many in (("mutex", "mutexes"), ("completion", "completions")):
        names = [lock_name(i.sem) for i in items if i.sem["class"] == cls]
        if names:
            parts.append(f"{and_list(names)} to {many if len(names) > 1 else 'a ' + cls}")
    return "converts " + " and ".join(parts) + "."


def cover_text(patches: list[tuple[str, str]], refused: list[Outcome], version: str,
               classes: set[str]) -> str:
    """The blurb of a series' cover letter: why, what each patch does (patches:
    (subject without [PATCH], summary)), what was left out and why, the base;
    classes: the kinds of lock the series converts.  The testing paragraph is
    added by the verification; where to send it is the sender's
    (notes.sending_notes)."""
    lines = wrap(motivation(classes)) + [""]
    for n, (subj, what) in enumerate(patches, 1):
        lines += wrap(f"Patch {n} ({subj.rsplit(': ', 1)[0]}) {what}") + [""]
    for o in refused:
        lines += wrap(f"Not converted: {o.id}: {'; '.join(o.why)}") + [""]
    lines += wrap(f"Based on Linux {version}.") + [""]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def fill_cover(cover: Path, subject: str, blurb: str) -> None:
    text = cover.read_text()
    text = text.replace("*** SUBJECT HERE ***", subject, 1)
    text = text.replace("*** BLURB HERE ***", blurb, 1)
    cover.write_text(text)
