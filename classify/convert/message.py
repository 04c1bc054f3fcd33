"""The words of a conversion patch: its commit message with the audit's evidence,
the risks for a reviewer, the cover letter, and the identity that signs off.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

from classify.convert.select import Outcome, PatchError
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
    if sem["class"] == "mutex" and sem.get("rule") == "lock.paired_on_one_task":
        out.append("A mutex must be released by the task that took it, never from "
                   "interrupt context. Here it is taken in one function and released "
                   "in another: the audit paired each take with its release on one "
                   "task (the steps in the message); a caller outside the tree that "
                   "calls one of those functions alone would break that.")
    elif sem["class"] == "mutex":
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


def wrap(text: str, indent: str = "", width: int = 72, hang: int = 0) -> list[str]:
    """text as lines of at most width columns; a "- " indent hangs, and
    continuation lines are indented hang columns more."""
    return textwrap.wrap(" ".join(text.split()), width, initial_indent=indent,
                         subsequent_indent=" " * (len(indent) + hang),
                         break_long_words=False, break_on_hyphens=False)


def reason_lines(reason: str) -> list[str]:
    """One reason as "- " lines; a caller path the audit gives as "a -> b -> c"
    is one hop per line, each indented under the reason, and a reason indented
    by two spaces (a step of the one before) is a "  - " line."""
    if reason.startswith("  "):    # one step of the reason before it
        return wrap(reason, "  - ")
    head, *hops = reason.split(" -> ")
    if not hops:
        return wrap(reason, "- ")
    head, _, first = head.rpartition(": ")
    out = wrap(head + ":", "- ")
    for i, hop in enumerate([first, *hops]):
        out += wrap(("-> " if i else "") + hop, "    ", 75, hang=3)
    return out


def tested_line(sem: dict) -> str:
    """"Compile-tested only." unless a boot exercised the semaphore as a mutex
    without a report (the audit's runtime record says "exercised-clean"): then that
    boot."""
    rt = sem.get("runtime") or {}
    boots = sorted({b["boot"] for b in rt.get("boots", []) if b.get("result") == "clean"
                    and b.get("ops")})
    if rt.get("status") != "exercised-clean" or not boots:
        return "Compile-tested only."
    return (f"Tested in QEMU: the {', '.join(boots)} boot{'s' if len(boots) > 1 else ''} "
            "(CONFIG_DEBUG_MUTEX_FULL, lockdep) took it as a mutex with no report.")


def commit_message(sem: dict, prefix: str, version: str, signoff: str | None) -> str:
    """The message: what the semaphore is used as and why (every reason, each
    caller path), the audit's evidence, whether it was tested, the sign-off.
    What is for the reviewer only goes below the --- (reviewer_notes)."""
    d = sem["declared"]
    name = sem["id"].rsplit(":", 1)[-1]
    where = (f"struct {d['struct']} member {name.split('.')[-1]}" if d["kind"] == "member"
             else f"{d['kind']} {name.split('@')[0]}")
    target = {"mutex": "a mutex", "completion": "a completion"}[sem["class"]]
    body = wrap(f"The semaphore {where} ({d['path']}:{d['line']}) is used as {target}:")
    body += [line for r in sem["reasons"] for line in reason_lines(r)]
    body += [""]
    body += wrap(
        {"mutex": "A mutex states that intent: it has an owner, lockdep and "
                  "CONFIG_DEBUG_MUTEXES check how it is used, and it spins "
                  "optimistically instead of sleeping at once.",
         "completion": "A completion states that intent (one side waits for an event "
                       "the other signals) and is what the kernel uses for it. Like "
                       "the semaphore, it counts the signals that come before a wait: "
                       "each complete() lets one wait_for_completion() through."}[sem["class"]])
    body += ["", f"Every use of it (sem2mutex audit of Linux {version}):"]
    # checkpatch wants commit description lines of at most 75 columns
    body += [line for e in sem["evidence"] for line in wrap(e, "  ", 75, hang=2)]
    body += ["", tested_line(sem)]
    if signoff:
        body += ["", f"Signed-off-by: {signoff}"]
    return f"{prefix}{summary(sem)}\n\n" + "\n".join(body) + "\n"


def reviewer_notes(sem: dict, extra: list[str] = ()) -> str:
    """What goes below the --- of the patch: the risks to check, extra notes
    (comments that still speak of the semaphore), how it was generated."""
    lines = ["Notes for the reviewer:"]
    lines += [line for r in [*risks(sem), *extra] for line in wrap(r, "- ")]
    # the short id: the script matches a path by its end
    short = re.sub(r"^.*/", "", cocci_id(sem))
    lines += [""] + wrap(f"Generated with sem2mutex: spatch --sp-file "
                         f"{SCRIPTS[sem['class']]}.cocci -D patch -D sem={short}")
    return "\n".join(lines) + "\n"


def insert_notes(patch: Path, notes: str) -> None:
    """Put notes right after the --- line that ends the commit message of a
    format-patch file (where `git format-patch --notes` puts them): git am
    ignores them, a reviewer reads them."""
    text = patch.read_text()
    head, sep, rest = text.partition("\n---\n")
    if not sep:
        raise ValueError(f"{patch}: no --- line")
    patch.write_text(head + sep + notes + "\n" + rest)


PLACEHOLDER_DOMAINS = re.compile(
    r"@(localhost|example|invalid|test)$|@.*\.(example|invalid|test|localhost)$|"
    r"@(.*\.)?example\.(com|org|net)$", re.I)


class IdentityError(PatchError):
    """No identity to sign the patches off with."""


def identity(repo: Path = PROJECT_DIR, env: dict[str, str] | None = None
             ) -> tuple[str, str]:
    """(name, email) to sign off with: GIT_AUTHOR_NAME/EMAIL from the environment,
    else git config user.name/email of this repository.  None, or a placeholder
    (sem2mutex's own identity, an address at a reserved domain such as
    example.org, .example, .invalid, localhost), is an IdentityError: a
    Signed-off-by certifies the Developer's Certificate of Origin and must be a
    person's."""
    env = os.environ if env is None else env
    def cfg(key: str) -> str:
        res = subprocess.run(["git", "-C", str(repo), "config", key],
                             capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else ""
    name = env.get("GIT_AUTHOR_NAME") or cfg("user.name")
    email = env.get("GIT_AUTHOR_EMAIL") or cfg("user.email")
    if not (name and email):
        raise IdentityError("no identity to sign off with: set git config user.name "
                            "and user.email (or GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL), or "
                            "SIGNOFF=0 (--no-signoff) for patches without Signed-off-by")
    if name == GIT_ENV["GIT_AUTHOR_NAME"] or PLACEHOLDER_DOMAINS.search(email):
        raise IdentityError(f"{name} <{email}> is a placeholder, not an identity to "
                            "sign off with: set git config user.name/user.email (or "
                            "GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL), or SIGNOFF=0 "
                            "(--no-signoff)")
    return name, email


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
               + (f"Convert {len(done)} semaphores to " if len(done) > 1
                  else "Convert a semaphore to ")
               + " and ".join(plural[k][len(done) > 1] for k in kinds))
    hand = sorted({o.hand for o in done if o.hand})
    lines = wrap(f"These patches convert the struct semaphores of {subsystem} that the "
                  f"sem2mutex audit of Linux {version} classes as a mutex or a "
                  f"completion. Each {'generated ' if hand else ''}patch converts one "
                  "semaphore, says why it is one (with file:line evidence) and what to "
                  "check.")
    lines += ["", f"Converted: {len(done)} "
              f"({sum(o.cls == 'mutex' for o in done)} to a mutex, "
              f"{sum(o.cls == 'completion' for o in done)} to a completion)",
              f"Refused: {len(refused)}"]
    for o in refused:
        lines += wrap(f"{o.id}: {'; '.join(o.why)}", "- ")
    lines += [""] + wrap("Each patch was generated by a semantic patch of sem2mutex; "
                         "its notes name the command and what to check."
                         if not hand else
                         "Each patch was generated by a semantic patch of sem2mutex "
                         f"(its notes name the command and what to check), but "
                         f"{', '.join(hand)}, written by hand and verified the same way.")
    return subject, "\n".join(lines)


def fill_cover(cover: Path, subject: str, blurb: str) -> None:
    text = cover.read_text()
    text = text.replace("*** SUBJECT HERE ***", subject, 1)
    text = text.replace("*** BLURB HERE ***", blurb, 1)
    cover.write_text(text)
