"""The testing statement of each patch and cover letter, written from what the
verification ran, after it ran: the architectures, configuration and compilers
of the builds, or why a file was not built, and the QEMU boots that took the
lock with no report.  A patch made with VERIFY=0 says nothing of testing: it
was not tested.  checkpatch then runs again on the file as it will be mailed.
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

from classify.arches import ARCHES
from classify.convert.message import and_list, wrap
from classify.convert.verify import checkpatch, status_of



@functools.lru_cache(maxsize=None)
def compiler_version(gcc: str) -> str:
    """"gcc 12.2.0", "m68k-linux-gnu-gcc 12.2.0"; the name alone when it cannot run."""
    try:
        res = subprocess.run([gcc, "-dumpfullversion"], capture_output=True, text=True,
                             timeout=30)
    except OSError:
        return gcc
    return f"{gcc} {res.stdout.strip()}" if res.returncode == 0 else gcc


def _built_on(record: dict) -> list[str]:
    """The architectures on which the patch's files were built after it."""
    return sorted({b.get("arch", "x86_64") for b in record.get("build", {}).values()
                   if b["after"]["status"] == "ok"},
                  key=lambda a: (a != "x86_64", a))


def boot_line(sems: list[dict]) -> str:
    """The QEMU boots that took a converted lock as a debug mutex with no report
    (the audit's runtime record says "exercised-clean"), "" when none did."""
    boots = sorted({b["boot"] for s in sems for b in (s.get("runtime") or {}).get("boots", [])
                    if (s.get("runtime") or {}).get("status") == "exercised-clean"
                    and b.get("result") == "clean" and b.get("ops")})
    if not boots:
        return ""
    return (f"Booted {_times(boots)} in QEMU (x86_64) with lockdep and CONFIG_DEBUG_MUTEXES, "
            "the semaphore made a debug mutex by a debug series, running a workload "
            "that takes it: no warning.")


def _times(boots: list[str]) -> str:
    """How many boots, in words: the boots' names are the project's own."""
    n = len(set(boots))
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _diff(patch_text: str) -> str:
    """A format-patch file's diff: what a boot ran, whatever its message said
    (and whether or not a signature ends it)."""
    diff = patch_text.partition("\ndiff --git ")[2]
    body, signature, _ = diff.rpartition("\n-- \n")
    return (body if signature else diff).rstrip("\n")


def converted_line(sems: list[dict], patch: Path | None, booted: Path | None) -> str:
    """The QEMU boots of a kernel with this very patch (the runtime record's
    convert:<id> boots, and the patch they booted, kept beside their logs in
    booted): "" unless every semaphore of the patch has such boots, all clean,
    of a patch whose diff is this one's."""
    if patch is None or booted is None:
        return ""
    boots: list[str] = []
    for s in sems:
        runs = (s.get("runtime") or {}).get("converted") or []
        ran = booted / runs[0]["patch"] if runs else None
        if not runs or any(c["result"] != "clean" for c in runs) or ran is None \
                or not ran.is_file() or _diff(ran.read_text()) != _diff(patch.read_text()):
            return ""
        boots += [c["boot"] for c in runs]
    # options that exist upstream (the kernel also carried the debug series that
    # checks the semaphores left, which upstream has no option for)
    return (f"Booted {_times(boots)} in QEMU (x86_64) with this patch, with lockdep and "
            "CONFIG_DEBUG_MUTEXES (and a debug series that checks the semaphores "
            "left), running a workload that reaches the converted code: no warning.")


def testing_sentence(record: dict, sems: list[dict] = (), patch: Path | None = None,
                     booted: Path | None = None) -> str:
    """What the verification of one patch ran, in words; booted: the runtime
    record's artifacts (converted_line)."""
    status = status_of(record)
    boots = " ".join(x for x in (converted_line(list(sems), patch, booted),
                                 boot_line(list(sems))) if x)
    if status == "not applied":
        return ""
    if status == "not built":
        why = "; ".join(record.get("not_built", [])) or "no configuration here builds it"
        text = f"Not compile-tested: {why}."
    else:
        arches = _built_on(record)
        # a forced choice has a directory of its own: "mips+SGI_IP32"
        bases = [a.split("+")[0] for a in arches]
        gccs = [compiler_version(ARCHES[b].gcc) if b in ARCHES else b for b in bases]
        named = [a if "+" not in a else
                 f"{a.split('+')[0]} (with CONFIG_{a.split('+', 1)[1]}=y)" for a in arches]
        # "Compile-tested" heads a paragraph that says nothing else
        text = (("Built" if boots else "Compile-tested only: built") + " with sparse before "
                f"and after on {and_list(named)} allmodconfig ({', '.join(dict.fromkeys(gccs))})"
                + (", no new warning." if not record.get("new_sparse") else "."))
        if status == "problem":
            text += " Problems: " + "; ".join(record.get("problems", [])) + "."
    return text + (" " + boots if boots else "")


def _insert_before_trailers(message: str, paragraph: list[str]) -> str:
    """paragraph as the last paragraph of message, before its trailers
    (Signed-off-by: and the like)."""
    paras = message.rstrip("\n").split("\n\n")
    last = paras[-1].splitlines()
    at = len(paras) - 1 if last and all(re.match(r"^[\w-]+: ", ln) for ln in last) \
        and len(paras) > 1 else len(paras)
    paras.insert(at, "\n".join(paragraph))
    return "\n\n".join(paras) + "\n"


# the first words of a testing paragraph, which a second verification replaces
_TESTING = re.compile(r"^(Compile-tested|Not compile-tested|Built with sparse|Booted|Each patch)")


def _without_testing(message: str) -> str:
    return "\n\n".join(p for p in message.split("\n\n") if not _TESTING.match(p))


def write_testing(patch: Path, sentence: str) -> None:
    """The testing paragraph into a format-patch file's message (in place of
    the one an earlier verification wrote)."""
    text = patch.read_text()
    head, sep, rest = text.partition("\n---\n")
    headers, _, message = head.partition("\n\n")
    message = _without_testing(message)
    message = _insert_before_trailers(message + "\n", wrap(sentence))
    patch.write_text(headers + "\n\n" + message.rstrip("\n") + sep + rest)


_SHORTLOG = re.compile(r"^\S.* \(\d+\):$", re.M)


def write_cover_testing(cover: Path, sentences: list[str]) -> None:
    """The cover letter's testing paragraph, before the shortlog."""
    if not sentences:
        return
    kinds = list(dict.fromkeys(sentences))
    text = ("Each patch: " + kinds[0][0].lower() + kinds[0][1:] if len(kinds) == 1
            else "Each patch says how it was tested.")
    body = _without_testing(cover.read_text())
    m = _SHORTLOG.search(body)
    at = m.start() if m else len(body)
    cover.write_text(body[:at] + "\n".join(wrap(text)) + "\n\n" + body[at:])


def finish_series(tree: Path, series_dir: Path, records: dict[str, dict],
                  sems: dict[str, dict], booted: Path | None = None) -> None:
    """Write each verified patch's testing paragraph (and the cover letter's),
    then run checkpatch again on the file as it will be mailed.  records:
    {semaphore id: verification record}, one record shared by the semaphores of
    a patch; sems: the audit's records by id; booted: the runtime record's
    artifacts, where the patches its convert:<id> kernels booted are kept."""
    by_patch: dict[str, tuple[dict, list[dict]]] = {}
    for sid, rec in records.items():
        if (series_dir / rec.get("patch", "")).is_file():
            by_patch.setdefault(rec["patch"], (rec, []))[1].append(sems.get(sid, {}))
    sentences = []
    for name, (rec, its) in sorted(by_patch.items()):
        sentence = testing_sentence(rec, its, series_dir / name, booted)
        rec["testing"] = sentence
        if not sentence:
            continue
        write_testing(series_dir / name, sentence)
        sentences.append(sentence)
        cp = checkpatch(tree, series_dir / name)
        rec["checkpatch"] = cp.to_json()
        rec["problems"] = [p for p in rec.get("problems", [])
                           if not p.startswith("checkpatch:")]
        if cp.errors:
            rec["problems"].append(f"checkpatch: {cp.errors} error(s)")
    cover = next(iter(sorted(series_dir.glob("0000-cover-letter.patch"))), None)
    if cover is not None:
        write_cover_testing(cover, sentences)
