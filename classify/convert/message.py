"""The words of a conversion patch: its commit message with the audit's evidence,
the risks for a reviewer, the cover letter, and the identity that signs off.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

from classify.convert.select import Outcome
from classify.convert.subject import common_prefix, summary
from classify.convert.transform import SCRIPTS, cocci_id
from classify.paths import PROJECT_DIR
from classify.tree import GIT_ENV


SIGNATURE = "sem2mutex"


def _ops_named(sem: dict) -> set[str]:
    return {o["op"] for o in sem.get("ops", [])}


def risks(sem: dict) -> list[str]:
    """What a reviewer should look at, from the operations the semaphore has."""
    ops = _ops_named(sem)
    out = []
    if sem["class"] == "mutex":
        out.append("A mutex must be released by the task that took it, never from "
                   "interrupt context. The audit found every up() in the function that "
                   "took the semaphore and none in atomic context; that proof covers "
                   "this source only, not callers reached through function pointers.")
        if ops & {"down_interruptible", "down_killable"}:
            out.append("mutex_lock_interruptible() and mutex_lock_killable() return "
                       "-EINTR like down_interruptible() and down_killable(): the "
                       "values passed on are unchanged.")
        if "down_trylock" in ops:
            out.append("down_trylock() returns 0 on success, mutex_trylock() 1: the "
                       "tests are inverted, check each one.")
        out.append("A mutex may not be taken recursively, nor freed while held "
                   "(CONFIG_DEBUG_MUTEXES and lockdep now check both).")
    else:
        out.append("A completion counts complete() calls as the semaphore counted up() "
                   "calls, so a signal sent before the wait is not lost.")
        if ops & {"down_interruptible", "down_killable"}:
            out.append("wait_for_completion_interruptible()/_killable() return "
                       "-ERESTARTSYS where down_interruptible()/down_killable() "
                       "returned -EINTR: where the value is passed on, the patch keeps "
                       "-EINTR explicitly; switching to -ERESTARTSYS is left to the "
                       "maintainer.")
        if "down_timeout" in ops:
            out.append("wait_for_completion_timeout() returns 0 on timeout, "
                       "down_timeout() 0 on success: the tests are inverted.")
        if "down_trylock" in ops:
            out.append("down_trylock() returns 0 on success, try_wait_for_completion() "
                       "true: the tests are inverted.")
        if len(sem.get("init", [])) > 1:
            out.append("The semaphore is initialised more than once: check that each "
                       "init_completion() runs while nobody waits.")
    if sem["declared"]["path"].endswith(".h"):
        out.append(f"The declaration is in {sem['declared']['path']}: only the files "
                   "the audit ties to the semaphore were converted and compiled.")
    return out


def wrap(text: str, indent: str = "", width: int = 72) -> list[str]:
    """text as lines of at most width columns; a "- " indent hangs."""
    return textwrap.wrap(" ".join(text.split()), width, initial_indent=indent,
                         subsequent_indent=" " * len(indent), break_long_words=False,
                         break_on_hyphens=False)


def commit_message(sem: dict, prefix: str, version: str, signoff: str) -> str:
    d = sem["declared"]
    name = sem["id"].rsplit(":", 1)[-1]
    where = (f"struct {d['struct']} member {name.split('.')[-1]}" if d["kind"] == "member"
             else f"{d['kind']} {name.split('@')[0]}")
    target = {"mutex": "a mutex", "completion": "a completion"}[sem["class"]]
    body = wrap(f"The semaphore {where} ({d['path']}:{d['line']}) is used as {target}:")
    body += [line for r in sem["reasons"] for line in wrap(r, "- ")]
    body += [""]
    body += wrap(
        {"mutex": "A mutex states that intent: it has an owner, lockdep and "
                  "CONFIG_DEBUG_MUTEXES check how it is used, and it spins "
                  "optimistically instead of sleeping at once.",
         "completion": "A completion states that intent (one side waits for an event "
                       "the other signals) and is what the kernel uses for it; "
                       "struct semaphore is left to real counting uses."}[sem["class"]])
    body += ["", f"Evidence (sem2mutex audit of Linux {version}):"]
    # checkpatch wants commit description lines of at most 75 columns
    body += [line for e in sem["evidence"] for line in wrap(e, "  ", 75)]
    body += ["", "For the reviewer:"]
    body += [line for r in risks(sem) for line in wrap(r, "- ")]
    # the short id: the script matches a path by its end, and checkpatch wants
    # lines of at most 75 columns
    short = re.sub(r"^.*/", "", cocci_id(sem))
    body += [""] + wrap(f"Generated with sem2mutex: spatch --sp-file "
                         f"{SCRIPTS[sem['class']]}.cocci -D patch -D sem={short}")
    body += ["", f"Signed-off-by: {signoff}"]
    return f"{prefix}{summary(sem)}\n\n" + "\n".join(body) + "\n"


def identity(repo: Path = PROJECT_DIR) -> tuple[str, str, bool]:
    """(name, email, from_config): git config user.name/email of this repository,
    else the fixed GIT_ENV identity (from_config False)."""
    def cfg(key: str) -> str:
        res = subprocess.run(["git", "-C", str(repo), "config", key],
                             capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else ""
    name, email = cfg("user.name"), cfg("user.email")
    if name and email:
        return name, email, True
    return GIT_ENV["GIT_AUTHOR_NAME"], GIT_ENV["GIT_AUTHOR_EMAIL"], False


def commit_env(name: str, email: str) -> dict[str, str]:
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
    if os.environ.get("SOURCE_DATE_EPOCH"):
        date = f"@{os.environ['SOURCE_DATE_EPOCH']} +0000"
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


def cover_text(subsystem: str, outcomes: list[Outcome], version: str,
               prefixes: list[str] | None = None) -> tuple[str, str]:
    """(subject, blurb) of a series' cover letter: the counts, what was refused and why."""
    done = [o for o in outcomes if o.status == "converted"]
    refused = [o for o in outcomes if o.status == "refused"]
    kinds = sorted({o.cls for o in done})
    plural = {"mutex": ("a mutex", "mutexes"), "completion": ("a completion", "completions")}
    subject = (common_prefix(prefixes or [], subsystem)
               + (f"convert {len(done)} semaphores to " if len(done) > 1
                  else "convert a semaphore to ")
               + " and ".join(plural[k][len(done) > 1] for k in kinds))
    lines = wrap(f"These patches convert the struct semaphores of {subsystem} that the "
                  f"sem2mutex audit of Linux {version} classes as a mutex or a "
                  "completion. Each patch converts one semaphore, says why it is one "
                  "(with file:line evidence) and what to check.")
    lines += ["", f"Converted: {len(done)} "
              f"({sum(o.cls == 'mutex' for o in done)} to a mutex, "
              f"{sum(o.cls == 'completion' for o in done)} to a completion)",
              f"Refused: {len(refused)}"]
    for o in refused:
        lines += wrap(f"{o.id}: {'; '.join(o.why)}", "- ")
    lines += ["", "Every patch was generated by a semantic patch from sem2mutex and "
              "checked with git am,", "an x86_64 allmodconfig build of the touched "
              "files, sparse (C=2) and", "checkpatch.pl --strict before sending."]
    return subject, "\n".join(lines)


def fill_cover(cover: Path, subject: str, blurb: str) -> None:
    text = cover.read_text()
    text = text.replace("*** SUBJECT HERE ***", subject, 1)
    text = text.replace("*** BLURB HERE ***", blurb, 1)
    cover.write_text(text)
