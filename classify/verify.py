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
import os
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from qemu.common import jobs as default_jobs
from qemu.config import BUILD_ENV, MAKE_ARGS   # reproducible x86_64 builds with ccache

from .tree import GIT_ENV, TreeError, git

log = logging.getLogger("sem2mutex.verify")

CONFIG_TARGET = "allmodconfig"

_KBUILD = re.compile(r"^  ([A-Z][A-Z0-9_]*)(?: \[M\])?\s+\S")
_DIAG = re.compile(r"^(?P<path>[^:\s][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? "
                   r"(?P<kind>warning|error): (?P<msg>.*)$")
_CP_LINE = re.compile(r"^(ERROR|WARNING|CHECK): (?:(\w+): )?(.*)$")
_CP_TOTAL = re.compile(r"^total: (\d+) errors, (\d+) warnings, (?:(\d+) checks, )?"
                       r"(\d+) lines checked")
_PATCH_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


# ------------------------------------------------------------------ parsers

@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int
    kind: str       # warning | error
    msg: str

    def key(self) -> tuple[str, str, str]:
        """What identifies a warning across a patch that moves lines."""
        return (self.path, self.kind, self.msg)


def _rel(path: str, tree: str) -> str:
    path = os.path.normpath(path)
    for root in (tree, os.path.realpath(tree)):
        if root and path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1:]
    return path


def parse_sparse(output: str, tree: str = "") -> list[Diagnostic]:
    """sparse's diagnostics in the output of `make C=2 file.o`, each once.

    With kbuild's quiet lines ("  CHECK   file.c"), only what follows CHECK is
    sparse's; without them (make -s), a diagnostic with gcc's "[-Wflag]" suffix is
    the compiler's and the rest sparse's.  kbuild runs sparse twice for a file
    that is also recompiled; the duplicates are dropped.
    """
    section = None
    seen: dict[Diagnostic, None] = {}
    for raw in output.splitlines():
        if m := _KBUILD.match(raw):
            section = m.group(1)
            continue
        m = _DIAG.match(raw)
        if not m:
            continue
        if section is not None and section != "CHECK":
            continue
        if section is None and re.search(r"\[-W[\w=-]+\]$", m.group("msg")):
            continue
        d = Diagnostic(_rel(m.group("path"), tree), int(m.group("line")),
                       m.group("kind"), m.group("msg").strip())
        seen.setdefault(d)
    return list(seen)


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


# ------------------------------------------------------------------ Kconfig

def _joined(text: str) -> str:
    return re.sub(r"\\\n", " ", text)


def config_symbols(tree: Path, rel: str, depth: int = 6) -> list[str]:
    """The CONFIG_ symbols that put rel's object into the build, read from the
    Makefiles: the object's line, the composite object it is part of, then the
    line of each parent directory that descends into its directory."""
    directory, want = Path(rel).parent, Path(rel).stem + ".o"
    out: list[str] = []
    for _ in range(depth):
        mk = tree / directory / "Makefile"
        if not mk.is_file():
            mk = tree / directory / "Kbuild"
        try:
            text = _joined(mk.read_text(errors="replace"))
        except OSError:
            break
        line = None
        for m in re.finditer(r"^\s*([\w-]+?)-(\$\(CONFIG_(\w+)\)|y|m|objs)\s*[:+]?=(.*)$",
                             text, re.M):
            if re.search(rf"(?:^|\s){re.escape(want)}(?:\s|$)", m.group(4)):
                line = m
                break
        if line is None:
            break
        if line.group(3):
            out.append(f"CONFIG_{line.group(3)}")
        if line.group(1) != "obj":          # part of a composite object
            want = line.group(1) + ".o"
            continue
        if str(directory) in (".", ""):
            break
        want, directory = directory.name + "/", directory.parent
    return list(dict.fromkeys(out))


def config_values(dotconfig: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    try:
        text = dotconfig.read_text(errors="replace")
    except OSError:
        return values
    for line in text.splitlines():
        if m := re.match(r"^(CONFIG_\w+)=(.*)$", line):
            values[m.group(1)] = m.group(2)
        elif m := re.match(r"^# (CONFIG_\w+) is not set$", line):
            values[m.group(1)] = "n"
    return values


def why_not_built(tree: Path, build_dir: Path, rel: str) -> str:
    values = config_values(build_dir / ".config")
    syms = config_symbols(tree, rel)
    off = [s for s in syms if values.get(s, "n") == "n"]
    if off:
        return (f"{', '.join(off)} not set by {CONFIG_TARGET} on x86_64 "
                "(another architecture or an unmet dependency)")
    if syms:
        return f"not built by {CONFIG_TARGET} on x86_64 although {', '.join(syms)} is set"
    return f"no Makefile entry found for it: not built by {CONFIG_TARGET} on x86_64"


# ------------------------------------------------------------------ stages

@dataclass
class Compile:
    path: str
    status: str                 # ok | failed | not built
    why: str = ""
    sparse: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    elapsed: float = 0.0


def make(tree: Path, build_dir: Path, *targets: str, jobs: int = default_jobs(),
         extra: tuple[str, ...] = (), timeout: float = 3600) -> subprocess.CompletedProcess:
    """make in the O= directory; stderr goes into stdout so that each diagnostic
    stays after the kbuild line (CC, CHECK) of the tool that printed it."""
    return subprocess.run(["nice", "-n", "10", "make", "-C", str(tree), f"O={build_dir}",
                           *MAKE_ARGS, f"-j{jobs}", *extra, *targets],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, env={**os.environ, **BUILD_ENV})


def ensure_config(tree: Path, build_dir: Path, options: tuple[str, ...] = ()) -> float:
    """An allmodconfig O= directory, configured and prepared once and then reused;
    options (scripts/config arguments) are applied on top when it is configured."""
    started = time.monotonic()
    build_dir.mkdir(parents=True, exist_ok=True)
    if not (build_dir / ".config").is_file():
        log.info("configuring %s (%s)", build_dir, CONFIG_TARGET)
        res = make(tree, build_dir, CONFIG_TARGET)
        if res.returncode == 0 and options:
            subprocess.run([str(tree / "scripts" / "config"), "--file",
                            str(build_dir / ".config"), *options], check=True)
            res = make(tree, build_dir, "olddefconfig")
        if res.returncode != 0:
            (build_dir / ".config").unlink(missing_ok=True)
            raise TreeError(f"make {CONFIG_TARGET} failed: {res.stdout.strip()[-300:]}")
    if not (build_dir / "include/generated/autoconf.h").is_file() or \
            not (build_dir / "tools/objtool/objtool").is_file():
        log.info("make prepare in %s (minutes when cold)", build_dir)
    res = make(tree, build_dir, "prepare")
    if res.returncode != 0:
        raise TreeError(f"make prepare failed: {res.stdout.strip()[-300:]}")
    return time.monotonic() - started


def compile_file(tree: Path, build_dir: Path, rel: str, logfile: Path | None = None,
                 sparse: bool = True) -> Compile:
    started = time.monotonic()
    obj = rel[:-2] + ".o"
    (build_dir / obj).unlink(missing_ok=True)
    # -j1: one object gains nothing from jobs, and an object kbuild lists twice
    # (obj-y and obj-m) would be compiled twice at once and race on its .o.d
    res = make(tree, build_dir, obj, jobs=1, extra=("C=2",) if sparse else ())
    output = res.stdout
    if logfile is not None:
        logfile.parent.mkdir(parents=True, exist_ok=True)
        logfile.write_text(output)
    sparse = parse_sparse(output, str(tree))
    elapsed = time.monotonic() - started
    if res.returncode != 0:
        errs = [ln for ln in output.splitlines()
                if re.search(r"error:|Error \d|No rule to make target", ln)][:20]
        return Compile(rel, "failed", "make failed", sparse, errs, elapsed)
    if not (build_dir / obj).is_file():
        return Compile(rel, "not built", why_not_built(tree, build_dir, rel), [], [],
                       elapsed)
    return Compile(rel, "ok", "", sparse, [], elapsed)


def checkpatch(tree: Path, patch: Path) -> Checkpatch:
    res = subprocess.run(["perl", str(tree / "scripts/checkpatch.pl"), "--strict",
                          "--color=never", str(patch)], cwd=tree, capture_output=True, text=True,
                         timeout=300)
    return parse_checkpatch(res.stdout + res.stderr)


def git_am(tree: Path, patch: Path) -> str:
    """"" when the patch applies, else git's reason (the am is aborted)."""
    res = subprocess.run(["git", "-C", str(tree), "am", "-q", str(patch)],
                         capture_output=True, text=True, env={**os.environ, **GIT_ENV})
    if res.returncode == 0:
        return ""
    subprocess.run(["git", "-C", str(tree), "am", "--abort"], capture_output=True)
    lines = [ln for ln in (res.stdout + res.stderr).splitlines()
             if ln.strip() and not ln.startswith("hint:")]
    return " | ".join(lines[:4]) or "git am failed"


# ------------------------------------------------------------------ one patch

def _compile_json(c: Compile) -> dict:
    return {"status": c.status, "why": c.why, "errors": c.errors,
            "sparse": len(c.sparse)}


def verify_patch(tree: Path, build_dir: Path, patch: Path, logs: Path) -> dict:
    """Before, git am, checkpatch, after: the record of one patch."""
    started = time.monotonic()
    files = patch_files(patch.read_text(errors="replace"))
    touched = {f for f in files if f.endswith(".c")}
    cfiles = sorted(touched
                    | {c for h in files if h.endswith(".h") for c in includers(tree, h)})
    stem = patch.name[:4]
    before = {f: compile_file(tree, build_dir, f, logs / f"{stem}-before-{Path(f).name}.log")
              for f in cfiles}
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
    for f in cfiles:
        after = compile_file(tree, build_dir, f, logs / f"{stem}-after-{Path(f).name}.log")
        b = before[f]
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
