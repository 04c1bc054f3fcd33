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

A file allmodconfig does not build on x86_64 (another architecture, an unmet
dependency) is named with the Kconfig symbol that leaves it out.  Parsers
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
    res = subprocess.run(["perl", str(tree / "scripts/checkpatch.pl"), "--strict",
                          "--color=never", str(patch)], cwd=tree, capture_output=True, text=True,
                         timeout=300)
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


def verify_patch(tree: Path, build_dir: Path, patch: Path, logs: Path) -> dict:
    """Before, git am, checkpatch, after: the record of one patch."""
    started = time.monotonic()
    files, touched, cfiles = files_to_build(tree, patch.read_text(errors="replace"))
    stem = patch.name[:4]
    # one make for all the files, before and after: kbuild's start-up on
    # allmodconfig costs more than a driver's object
    before = compile_files(tree, build_dir, cfiles, logs / f"{stem}-before.log")
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
    afters = compile_files(tree, build_dir, cfiles, logs / f"{stem}-after.log")
    for f in cfiles:
        after, b = afters[f], before[f]
        entry = {"before": _compile_json(b), "after": _compile_json(after)}
        record["build"][f] = entry
        if b.status == "failed" and f not in touched:
            # an includer of a touched header that does not build here at all
            # (parport_amiga.c on x86_64): nothing the patch can be blamed for
            entry["note"] = "includes a touched header; does not build here before the patch"
        elif b.status == "failed":
            record["problems"].append(f"{f}: does not compile before the patch either")
        elif after.status == "failed":
            record["problems"].append(f"{f}: does not compile after the patch")
        elif after.status == "ok":
            fresh = new_warnings(b.sparse, after.sparse)
            record["new_sparse"] += [f"{d.path}:{d.line}: {d.kind}: {d.msg}" for d in fresh]
            if fresh:
                record["problems"].append(f"{f}: {len(fresh)} new sparse warning(s)")
    record["elapsed"] = round(time.monotonic() - started, 1)
    return record


def status_of(record: dict) -> str:
    """One word for the report: verified | not built | problem | not applied."""
    if not record.get("apply", "").startswith("ok"):
        return "not applied"
    if record.get("problems"):
        return "problem"
    builds = record.get("build", {})
    if builds and all(b["after"]["status"] == "not built" for b in builds.values()):
        return "not built"
    return "verified"


def verify_series(tree: Path, build_dir: Path, series_dir: Path, logs: Path
                  ) -> dict[str, dict]:
    """{semaphore id: record} for the patches of one series, applied in order on
    tree (which must be at the base already)."""
    index = json.loads((series_dir / "series.json").read_text())
    out = {}
    for entry in index["patches"]:
        patch = series_dir / entry["patch"]
        log.info("verifying %s", patch.name)
        if not patch.is_file():
            out[entry["id"]] = {"patch": entry["patch"], "apply": "patch file missing",
                                "problems": ["patch file missing"]}
            continue
        out[entry["id"]] = verify_patch(tree, build_dir, patch, logs / series_dir.name)
    return out
