"""Which semaphores get a patch: the audit's mutex and completion verdicts,
narrowed by SUBSYS= and ID=, and the series each one goes to.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from classify.convert.transform import SCRIPTS


class PatchError(Exception):
    """Bad arguments or a missing input: nothing can be done."""


@dataclass
class Outcome:
    """What became of one selected (or asked-for) semaphore."""
    id: str
    status: str                 # converted | refused | skipped
    why: list[str] = field(default_factory=list)
    cls: str = ""
    series: str = ""            # slug of work/patches/<slug>
    patch: str = ""             # file name of its patch in the series
    files: list[str] = field(default_factory=list)
    hand: str = ""              # the hand-written conversion it came from, if any

    def to_json(self) -> dict:
        return {"id": self.id, "status": self.status, "why": self.why, "class": self.cls,
                "series": self.series, "patch": self.patch, "files": self.files,
                **({"hand": self.hand} if self.hand else {})}


def in_prefix(path: str, prefix: str) -> bool:
    """path lies under the directory (or is the file) prefix names."""
    prefix = prefix.strip().rstrip("/")
    return not prefix or prefix == "." or path == prefix or path.startswith(prefix + "/")


def sem_paths(sem: dict) -> list[str]:
    """The declaration's file and the files of its operations."""
    return sorted({sem["declared"]["path"]} | {o["path"] for o in sem.get("ops", [])} |
                  {i["path"] for i in sem.get("init", [])})


def under(sem: dict, prefix: str) -> bool:
    """sem belongs to the subsystem at prefix: declared there, or used there (a
    member declared in include/linux/parport.h belongs to drivers/parport too)."""
    return any(in_prefix(p, prefix) for p in sem_paths(sem))


def series_subsystem(sem: dict) -> str:
    """The subsystem whose series a semaphore's patch goes to: the audit's, except
    for a declaration in a shared header, which goes with the code using it."""
    from classify.census import subsystem
    if sem["declared"]["path"].startswith(("include/", "arch/")):
        users = sorted({p for p in sem_paths(sem) if p.endswith(".c")})
        if users:
            return subsystem(users[0])
    return sem["subsystem"]


def select(sems: list[dict], subsys: str | None, ids: list[str], hand: dict | None = None
           ) -> tuple[list[dict], list[Outcome]]:
    """The convertible semaphores chosen by SUBSYS and/or ID, and the skipped ones.

    No SUBSYS and no ID chooses every semaphore; with both, either chooses.
    hand: {id: Handmade}, the hand-written conversions (classify.convert.handmade):
    a semaphore one of them converts is chosen even where its pointer is shared.
    """
    hand = hand or {}
    by_id = {s["id"]: s for s in sems}
    skipped = [Outcome(i, "skipped", ["no semaphore with this id in the audit"])
               for i in ids if i not in by_id]
    if subsys is None and not ids:
        # a conversion whose files the audit read, naming an id it does not have, is
        # stale (an audit of another part of the tree just did not look there)
        read = {p for s in sems for p in sem_paths(s)}
        skipped += [Outcome(i, "skipped", [f"{h.name} converts it, but the audit has no "
                                          "semaphore with this id"], hand=h.name)
                    for i, h in sorted(hand.items())
                    if i not in by_id and read & set(h.files)]
    chosen = []
    for s in sorted(sems, key=lambda s: s["id"]):
        by_path = subsys is not None and under(s, subsys)
        if not (by_path or s["id"] in ids or (subsys is None and not ids)):
            continue
        if s["class"] not in SCRIPTS:
            if s["id"] in hand:  # a maintainer's conversion the audit does not back
                skipped.append(Outcome(s["id"], "skipped", [
                    f"{hand[s['id']].name} converts it, but the audit classes it "
                    f"{s['class']}: only mutex and completion verdicts are converted"],
                    cls=s["class"], hand=hand[s["id"]].name))
            elif s["id"] in ids:   # asked for by name: say why not
                skipped.append(Outcome(s["id"], "skipped", [
                    f"classed {s['class']}, only mutex and completion are converted"],
                    cls=s["class"]))
            continue
        through = [f for f in s.get("followed", []) if f["kind"] != "local" or f["also"]]
        if through and s["id"] not in hand:
            f = through[0]
            also = f" (it also holds {', '.join(f['also'])})" if f["also"] else ""
            skipped.append(Outcome(s["id"], "refused", [
                f"classed {s['class']}, but {f['at']} stores its address in the "
                f"{f['kind']} pointer {f['pointer']}{also}: that pointer's type changes "
                "with it, which a patch of one semaphore cannot do (convert them "
                "together, by hand: kernel-patches/<version>/conversions/)"],
                cls=s["class"]))
            continue
        chosen.append(s)
    if subsys is not None and not any(under(s, subsys) for s in chosen):
        there = [s for s in sems if under(s, subsys)]
        why = (f"{len(there)} semaphore(s) there, none classed mutex or completion"
               if there else "no semaphore is declared or used there")
        skipped.append(Outcome(f"SUBSYS={subsys}", "skipped", [why]))
    return chosen, skipped


def load_audit(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise PatchError(f"{path}: no audit: run `make audit` (KERNEL=...) first") from None
    except json.JSONDecodeError as err:
        raise PatchError(f"{path}: not an audit.json: {err}") from None
