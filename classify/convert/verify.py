"""Verification of the conversion patches, one semaphore at a time.

For each series of work/patches/<slug>/, in order, in a worktree of the kernel
(work/trees/verify, reset to the kernel's HEAD first):

1. compile every .c file the patch touches, and every .c file that includes a header
   it touches (``make O=<build> C=2 <dir>/<file>.o``,
   x86_64 allmodconfig, ccache, a persistent O= directory under work/build/):
   whether it builds and what sparse says, before the patch;
2. ``git am`` the patch (so patch n is tried on top of patches 1..n-1: every
   prefix of a series must build);
3. ``scripts/checkpatch.pl --strict`` on the patch file;
4. compile the same files again: they must build, and sparse must say nothing it
   did not say before (warnings compared by file and message, line numbers aside).

Verified means built in a configuration that enables it: before compiling, each
object's CONFIG_ symbols (kbuild.config_symbols) must be y or m in the build's
.config.  A file x86_64 allmodconfig leaves out is built on the first other
architecture whose allmodconfig enables it (classify.crossbuild: arch/<arch>/,
or the arch symbols its Kconfig depends on), and the record names that
architecture; a file no architecture builds is not compiled ("not built here:
CONFIG_INTEL_IFS depends on BROKEN", the symbol's unmet `depends on` read from
its Kconfig entry, and the reason of each architecture tried),
and a patch touching such a file is "not built", not verified.  A header counts
as built when at least one file that includes it is.  An includer the
configuration enables that fails before the patch too is a problem, not a note.  Parsers
(``parse_sparse``, ``parse_checkpatch``) work on saved output, without a tree.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from classify.crossbuild import Builds
from classify.kbuild import Compile, Diagnostic, compile_files
from classify.tree import git_am

log = logging.getLogger("sem2mutex.verify")

_CP_LINE = re.compile(r"^(ERROR|WARNING|CHECK): (?:(\w+): )?(.*)$")
_CP_TOTAL = re.compile(r"^total: (\d+) errors, (\d+) warnings, (?:(\d+) checks, )?"
                       r"(\d+) lines checked")
_PATCH_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


# ------------------------------------------------------------------ parsers

def new_warnings(before: list[Diagnostic], after: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics of after that before does not have (as many times)."""
    left = Counter(d.key() for d in before)
    out = []
    for d in after:
        if left[d.key()] > 0:
            left[d.key()] -= 1
        else:
            out.append(d)
    return out


@dataclass
class Checkpatch:
    errors: int
    warnings: int
    checks: int
    messages: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"errors": self.errors, "warnings": self.warnings, "checks": self.checks,
                "messages": self.messages}


def parse_checkpatch(output: str) -> Checkpatch:
    """checkpatch.pl's counts and its ERROR/WARNING/CHECK lines ("TYPE: text")."""
    messages = []
    for line in output.splitlines():
        m = _CP_LINE.match(line)
        if m:
            messages.append(f"{m.group(1)}: {m.group(2) + ': ' if m.group(2) else ''}"
                            f"{m.group(3)}")
    m = None
    for line in output.splitlines():
        m = _CP_TOTAL.match(line) or m
    if m is None:
        # no totals line: count what is there (and never call it clean)
        kinds = Counter(msg.split(":", 1)[0] for msg in messages)
        return Checkpatch(kinds["ERROR"] or 1, kinds["WARNING"], kinds["CHECK"],
                          messages or ["checkpatch.pl printed no totals"])
    return Checkpatch(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), messages)


def patch_files(text: str) -> list[str]:
    return sorted({m.group(2) for m in _PATCH_FILE.finditer(text)})


def includers(tree: Path, header: str) -> list[str]:
    """The .c files that #include header directly: <linux/x.h> for a header under
    include/ (or arch/*/include/), "x.h" from its own directory otherwise.  A
    changed struct or include line in a header must also build where it is used."""
    parts = Path(header).parts
    if "include" in parts:
        name = "/".join(parts[parts.index("include") + 1:])
        pattern, where = f"#include <{name}>", []
    else:
        name = Path(header).name
        pattern, where = f'#include "{name}"', [str(Path(header).parent)]
    res = subprocess.run(["git", "-C", str(tree), "grep", "-l", "-F", pattern, "--",
                          *(where or ["."])], capture_output=True, text=True)
    return sorted(f for f in res.stdout.split() if f.endswith(".c"))


# ------------------------------------------------------------------ stages

def checkpatch(tree: Path, patch: Path) -> Checkpatch:
    """checkpatch --strict; a patch made with SIGNOFF=0 carries no Signed-off-by on
    purpose (the sender adds theirs), so the sign-off check is left out for it."""
    text = patch.read_text(errors="replace")
    message = text.split("\n---\n", 1)[0]
    unsigned = ["--no-signoff"] if "Signed-off-by:" not in message else []
    res = subprocess.run(["perl", str(tree / "scripts/checkpatch.pl"), "--strict",
                          "--color=never", *unsigned, str(patch)], cwd=tree,
                         capture_output=True, text=True, timeout=300)
    return parse_checkpatch(res.stdout + res.stderr)


# ------------------------------------------------------------------ one patch

def _compile_json(c: Compile) -> dict:
    return {"status": c.status, "why": c.why, "errors": c.errors,
            "sparse": len(c.sparse)}


def files_to_build(tree: Path, patch_text: str) -> tuple[list[str], set[str], list[str]]:
    """(every file the patch touches, the touched .c files, the .c files to build:
    the touched ones and the includers of each touched header)."""
    files = patch_files(patch_text)
    touched = {f for f in files if f.endswith(".c")}
    cfiles = sorted(touched
                    | {c for h in files if h.endswith(".h") for c in includers(tree, h)})
    return files, touched, cfiles


def compiler(tree: Path, build_dir: Path | Builds):
    """compile(rels, logfile) -> {rel: Compile}: on the architecture that builds
    each file (a Builds), or all in one x86_64 directory (a Path)."""
    if isinstance(build_dir, Builds):
        return build_dir.compile
    return lambda rels, logfile: compile_files(tree, build_dir, rels, logfile)


def verify_patch(tree: Path, build_dir: Path | Builds, patch: Path, logs: Path) -> dict:
    """Before, git am, checkpatch, after: the record of one patch."""
    started = time.monotonic()
    files, touched, cfiles = files_to_build(tree, patch.read_text(errors="replace"))
    stem = patch.name[:4]
    compile_all = compiler(tree, build_dir)
    # one make for all the files (per architecture), before and after: kbuild's
    # start-up on allmodconfig costs more than a driver's object
    before = compile_all(cfiles, logs / f"{stem}-before.log")
    record: dict = {"patch": patch.name, "files": files, "apply": "", "build": {},
                    "checkpatch": None, "new_sparse": [], "problems": []}
    applied = git_am(tree, patch)
    if applied:
        record["apply"] = f"does not apply: {applied}"
        record["problems"].append(record["apply"])
        record["elapsed"] = round(time.monotonic() - started, 1)
        return record
    record["apply"] = "ok"
    cp = checkpatch(tree, patch)
    record["checkpatch"] = cp.to_json()
    if cp.errors:
        record["problems"].append(f"checkpatch: {cp.errors} error(s)")
    afters = compile_all(cfiles, logs / f"{stem}-after.log")
    for f in cfiles:
        after, b = afters[f], before[f]
        entry = {"before": _compile_json(b), "after": _compile_json(after), "arch": after.arch}
        record["build"][f] = entry
        if b.status == "failed" and f not in touched:
            # an includer the configuration enables that fails before the patch:
            # the header change is not checked there; say so
            entry["note"] = "includes a touched header; does not compile before the patch"
            record["problems"].append(f"{f} (includes a touched header): does not compile "
                                      "before the patch either")
        elif b.status == "failed":
            record["problems"].append(f"{f}: does not compile before the patch either")
        elif after.status == "failed":
            record["problems"].append(f"{f}: does not compile after the patch")
        elif after.status == "ok" and b.status != "ok":
            # built after but not before (the make stopped on another target):
            # no warnings to compare with, so none can be called new or old
            record["problems"].append(f"{f}: not built before the patch ({b.why}): its "
                                      "sparse warnings cannot be compared")
        elif after.status == "ok":
            fresh = new_warnings(b.sparse, after.sparse)
            record["new_sparse"] += [f"{d.path}:{d.line}: {d.kind}: {d.msg}" for d in fresh]
            if fresh:
                record["problems"].append(f"{f}: {len(fresh)} new sparse warning(s)")
    record["not_built"] = not_built(files, touched, record["build"])
    record["elapsed"] = round(time.monotonic() - started, 1)
    return record


def not_built(files: list[str], touched: set[str], build: dict[str, dict]) -> list[str]:
    """What keeps a patch from being verified: each touched .c file the build's
    configuration does not compile, and each touched header none of whose
    includers it compiles ("path: why")."""
    out = [f"{f}: {build[f]['after']['why']}" for f in sorted(touched)
           if f in build and build[f]["after"]["status"] == "not built"]
    for h in sorted(f for f in files if f.endswith(".h")):
        users = [f for f in build if f not in touched]
        if users and all(build[f]["after"]["status"] != "ok" for f in users) and \
                not any(build[f]["after"]["status"] == "ok" for f in touched):
            out.append(f"{h}: no file that includes it is built here")
    return out


def status_of(record: dict) -> str:
    """One word for the report: verified | not built | problem | not applied.
    Verified means built in a configuration that enables every touched file."""
    if not record.get("apply", "").startswith("ok"):
        return "not applied"
    if record.get("problems"):
        return "problem"
    builds = record.get("build", {})
    if record.get("not_built") or (
            builds and all(b["after"]["status"] == "not built" for b in builds.values())):
        return "not built"
    return "verified"


def verify_series(tree: Path, build_dir: Path | Builds, series_dir: Path, logs: Path
                  ) -> dict[str, dict]:
    """{semaphore id: record} for the patches of one series, applied in order on
    tree (which must be at the base already)."""
    index = json.loads((series_dir / "series.json").read_text())
    out = {}
    done: dict[str, dict] = {}  # a hand-written patch converts several: verified once
    for entry in index["patches"]:
        patch = series_dir / entry["patch"]
        if entry["patch"] in done:
            out[entry["id"]] = done[entry["patch"]]
            continue
        log.info("verifying %s", patch.name)
        if not patch.is_file():
            out[entry["id"]] = {"patch": entry["patch"], "apply": "patch file missing",
                                "problems": ["patch file missing"]}
            continue
        out[entry["id"]] = done[entry["patch"]] = verify_patch(tree, build_dir, patch,
                                                               logs / series_dir.name)
    return out
