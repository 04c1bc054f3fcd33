"""What goes below the --- of a conversion patch, where git am drops it: what
the reviewer should check, where the patch goes, what made it; and the
audit's full listing for the patch (who calls each function that uses a
lock, every use with the tree's line numbers, the spatch command), written
to a file of its own beside the series for the one who sends it.
"""

from __future__ import annotations

import re
from pathlib import Path

from classify.census.contexts import HELD_BY_CORE
from classify.convert.message import Converted, and_list, functions, lock_name, some_of, wrap
from classify.convert.transform import SCRIPTS, cocci_id


def risks(sem: dict) -> list[str]:
    """What a reviewer should check for this semaphore that is its own: a
    completion initialised twice."""
    name = lock_name(sem)
    out = []
    if sem["class"] != "mutex" and len(sem.get("init", [])) > 1:
        out.append(f"{name} is initialised in more than one place: check that "
                   "each init_completion() runs while nobody waits.")
    held = held_by_core(sem)
    if held:
        callbacks, (lock, how) = held
        out.append(f"Every take of {name} is in {callbacks}, which the core calls with "
                   f"{lock} held ({how}): if {name} protects nothing {lock} does not, "
                   "removing it is the simpler change.")
    return out


_CALLBACK = re.compile(r"^\S+ (\w+\(\)) is ([\w.]+) \(\w+\)$")


def held_by_core(sem: dict) -> tuple[str, tuple[str, str]] | None:
    """(the callbacks, the core's lock) when every path to every take of a
    mutex starts at a callback the core calls with one lock held
    (census.contexts.HELD_BY_CORE), all paths known; else None."""
    takes = [o for o in sem.get("ops", []) if o["op"].startswith("down")]
    if sem["class"] != "mutex" or not takes or any(o.get("callers_more") for o in takes):
        return None
    starts = [_CALLBACK.match(c.split(" -> ")[0]) for o in takes
              for c in o.get("callers") or [""]]
    held = {HELD_BY_CORE.get(m.group(2)) if m else None for m in starts}
    if len(held) != 1 or None in held:
        return None
    callbacks = list(dict.fromkeys(f"{m.group(1)}, the {m.group(2)} callback"
                                   for m in starts))
    return and_list(callbacks), held.pop()


def shared_risks(items: list[Converted]) -> list[str]:
    """What holds for several locks of a patch, said once: the callers that
    were not followed where a context matters."""
    out = []
    unfollowed = list(dict.fromkeys(
        f for i in items if i.sem["class"] == "mutex"
        for f in functions({"ops": _unproven(i.sem)}, ("",))))
    if unfollowed:
        out.append(f"Some paths to {some_of(unfollowed, 3)} start at a function stored "
                   "in a structure whose callers were not followed: check that they "
                   "do not run in interrupt context, where a mutex may not be "
                   "released or tried.")
    return out


def _unproven(sem: dict) -> list[dict]:
    """A mutex's operations on a path whose context is unknown that matter: a
    take sleeps (its context was always process), and so does a release in a
    function that takes it too; a trylock, or a release elsewhere, might run
    in interrupt context, where a mutex may not be tried or released."""
    ops = sem.get("ops", [])
    if sem.get("rule") == "lock.paired_on_one_task":
        # the pairing proof puts every release on the task that took the lock
        ops = [o for o in ops if o["op"] == "down_trylock"]
    sleeping = {o.get("function") for o in ops
                if o["op"].startswith("down") and o["op"] != "down_trylock"}
    return [o for o in ops if "unknown" in o.get("context", "").split(": ", 1)[0]
            and (o["op"] == "down_trylock"
                 or (o["op"] == "up" and o.get("function") not in sleeping))]


def provenance(items: list[Converted], version: str) -> list[str]:
    """How the patch was made: per semaphore, the audit's rule and every use
    with the line numbers of the tree it read, and the command."""
    lines = [f"Made by sem2mutex from its audit of Linux {version}:"]
    for item in items:
        sem = item.sem
        lines += [f"- {sem['id']}", f"  {sem['class']}, by the rule {sem.get('rule', '')}:"]
        lines += [ln for e in sem.get("evidence", []) for ln in wrap(e, "    ", 75, hang=2)]
        short = re.sub(r"^.*/", "", cocci_id(sem))
        # one line, to copy as it is
        lines += [f"    spatch --sp-file {SCRIPTS[sem['class']]}.cocci -D patch -D sem={short}"]
    return lines


def evidence(items: list[Converted], version: str) -> str:
    """The audit's full listing for one patch, for the one who sends it: who
    calls each function that uses a lock, every use with the line numbers of
    the tree it read, and the spatch command that made the change."""
    callers = callers_notes(items)
    return "\n".join(callers + ([""] if callers else []) + provenance(items, version)) + "\n"


def callers_notes(items: list[Converted]) -> list[str]:
    """Below the ---: every path the audit's call graph found to each function
    that takes, releases, waits for or signals a lock, with its file:line."""
    lines: list[str] = []
    for item in items:
        seen: set[str] = set()
        for o in sorted(item.sem.get("ops", []), key=lambda o: (o["path"], o["line"])):
            f = o.get("function")
            if not f or f in seen or not (o.get("callers") or o.get("context")):
                continue
            seen.add(f)
            chains = o.get("callers") or [o["context"].split(": ", 1)[-1]]
            lines += [f"  {lock_name(item.sem)}: {f}() ({o['context'].split(': ', 1)[0]}):"]
            for chain in chains:
                first, *hops = chain.split(" -> ")
                lines += wrap(first, "    ", 75, hang=2)
                lines += [ln for hop in hops for ln in wrap("-> " + hop, "      ", 75, hang=3)]
            if o.get("callers_more"):
                lines += [f"    and {o['callers_more']} more paths"]
    return ["Who calls them (the audit's call graph):"] + lines if lines else []


def reviewer_notes(items: list[Converted]) -> str:
    """What goes below the --- of the patch: what to check ("" for nothing).
    Where to send it and what made it are the sender's (sending_notes), not
    the list's."""
    checks = [r for item in items for r in risks(item.sem)]
    checks += shared_risks(items) + [n for item in items for n in item.notes]
    checks += [f"{lock_name(i.sem)} keeps its name: {i.name_kept}" for i in items
               if i.name_kept]
    if not checks:
        return ""
    lines = ["Notes for the reviewer:"] + [ln for r in checks for ln in wrap(r, "- ")]
    return "\n".join(lines) + "\n"


def sending_notes(routing: list[str], evidence_files: list[str]) -> str:
    """For the one who sends a series, not for the list: where it goes (what
    MAINTAINERS says about the entry, the tree to rebase onto, recipients read
    from a stable release) and where each patch's evidence is."""
    lines = ["Before sending:"]
    lines += [ln for r in routing for ln in wrap(r, "- ")]
    if evidence_files:
        lines += [""] + wrap(
            "Every use of each lock and every path to it that the audit found, with "
            "the line numbers of the tree it read, per patch:")
        lines += [f"- {name}" for name in evidence_files]
    return "\n".join(lines) + "\n"


def insert_notes(patch: Path, notes: str) -> None:
    """Put notes right after the --- line that ends the commit message of a
    format-patch file (where `git format-patch --notes` puts them): git am
    ignores them, a reviewer reads them."""
    if not notes:
        return
    text = patch.read_text()
    head, sep, rest = text.partition("\n---\n")
    if not sep:
        raise ValueError(f"{patch}: no --- line")
    patch.write_text(head + sep + notes + "\n" + rest)
