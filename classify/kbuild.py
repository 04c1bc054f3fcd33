"""Kbuild, defined once: make in a persistent O= directory, a configuration made
from a base target and forced options, one object compiled (with sparse), and the
Kconfig symbols that put a file into the build.

The conversion patches' verification, the marking check, the .text bench and the
boot kernels all build through these functions, so that every build is reproducible
(Documentation/kbuild/reproducible-builds.rst) and cached (ccache, persistent O=).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from classify import distcc
from classify.arches import NATIVE, Arch, arch_of, builds_path, set_arch
from classify.kconfig import (config_symbols, kbuild_object, kconfig_depends,  # noqa: F401
                              kconfig_true, sourced_if, unmet_depends)
from classify.tree import TreeError, kernel_version

log = logging.getLogger("sem2mutex.kbuild")

# Reproducible kernel builds (Documentation/kbuild/reproducible-builds.rst).
BUILD_ENV = {
    "KBUILD_BUILD_TIMESTAMP": "Mon Dec 19 02:34:16 CET 2005",
    "KBUILD_BUILD_USER": "sem2mutex",
    "KBUILD_BUILD_HOST": "sem2mutex",
    "KBUILD_BUILD_VERSION": "1",
    "LC_ALL": "C",
    "TZ": "UTC",
}
# x86_64's make arguments (a build directory's own: arches.arch_of(d).make_args())
MAKE_ARGS = NATIVE.make_args()
ALLMODCONFIG = "allmodconfig"
# The forced options, as a KCONFIG_ALLCONFIG file in the O= directory, and the
# hash of the request they were configured from.
FORCED_FILE = "s2m-allconfig.config"
STAMP_FILE = ".s2m-allconfig-hash"

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")
_KBUILD = re.compile(r"^  ([A-Z][A-Z0-9_]*)(?: \[M\])?\s+\S")
_DIAG = re.compile(r"^(?P<path>[^:\s][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? "
                   r"(?P<kind>warning|error): (?P<msg>.*)$")


class KbuildError(TreeError):
    """A configuration or a `make prepare` failed: the message says which."""


def default_jobs() -> int:
    """make -j: SEM2MUTEX_JOBS (make's JOBS=, for a machine shared with others);
    with DISTCC_HOSTS, the host list's total; else cores + 1."""
    wanted = os.environ.get("SEM2MUTEX_JOBS", "")
    if wanted.isdigit() and int(wanted) > 0:
        return int(wanted)
    if distcc.enabled(dict(os.environ)):
        return distcc.jobs(dict(os.environ))
    return (os.cpu_count() or 1) + 1


# ------------------------------------------------------------------ .config text

def parse_config_text(text: str) -> dict[str, str]:
    """A .config or fragment as {CONFIG_X: value}; '# CONFIG_X is not set' is 'n'."""
    options: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if m := _SET.match(line):
            options[m.group(1)] = m.group(2)
        elif m := _UNSET.match(line):
            options[m.group(1)] = "n"
    return options


def format_option(sym: str, value: str) -> str:
    return f"# {sym} is not set" if value == "n" else f"{sym}={value}"


def missing_options(requested: dict[str, str], actual: dict[str, str]) -> list[str]:
    """Every requested option .config does not have, as 'Missing: CONFIG_X=y'."""
    missing = []
    for sym in sorted(requested):
        want = requested[sym]
        have = actual.get(sym, "n")
        if want != have:
            missing.append(f"Missing: {format_option(sym, want)}"
                           + ("" if sym in actual else " (not in .config: unknown "
                              "symbol or unmet dependency)"))
    return missing


def config_values(dotconfig: Path) -> dict[str, str]:
    """A .config file as {CONFIG_X: value}; {} when there is none."""
    try:
        return parse_config_text(dotconfig.read_text(errors="replace"))
    except OSError:
        return {}


def not_enabled(tree: Path, build_dir: Path, rel: str) -> str:
    """"" when every CONFIG_ symbol that builds rel's object is y or m in the
    build's .config; else why not, the symbol's unmet `depends on` named
    ("CONFIG_INTEL_IFS depends on BROKEN")."""
    values = config_values(build_dir / ".config")
    if not values:
        return ""
    parts, arch = Path(rel).parts, arch_of(build_dir)
    # arch/<other>/...: only that architecture's build descends there
    if not builds_path(arch, rel):
        return f"{rel} belongs to ARCH={parts[1]}, not built on {arch.name}"
    for sym in config_symbols(tree, rel):
        if values.get(sym, "n") in ("y", "m"):
            continue
        found = kconfig_depends(tree, sym, rel)
        if found is None:
            return f"{sym} is not defined by any Kconfig file"
        unmet = unmet_depends(found[1], values)
        if unmet:
            return f"{sym} depends on {' && '.join(unmet)}"
        cond = sourced_if(tree, found[0])
        if cond and kconfig_true(cond, values) is not True:
            return f"{sym}: {found[0]} is read only if {cond}"
        return f"{sym} is not set in {build_dir.name}/.config"
    return ""


def why_not_built(tree: Path, build_dir: Path, rel: str,
                  target: str = ALLMODCONFIG) -> str:
    values = config_values(build_dir / ".config")
    syms = config_symbols(tree, rel)
    off = [s for s in syms if values.get(s, "n") == "n"]
    on = arch_of(build_dir).name
    if off:
        return (f"{', '.join(off)} not set by {target} on {on} "
                "(another architecture or an unmet dependency)")
    if syms:
        return f"not built by {target} on {on} although {', '.join(syms)} is set"
    return f"no Makefile entry found for it: not built by {target} on {on}"


# ------------------------------------------------------------------ make

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


@dataclass
class Compile:
    path: str
    status: str                 # ok | failed | not built
    why: str = ""
    sparse: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    arch: str = NATIVE.name     # the architecture of the build it was tried in


def kbuild_env() -> dict[str, str]:
    """The environment of a kernel make: BUILD_ENV, and none of the MAKEFLAGS of the
    make that ran us (`make full-kernel BUILD=1 ...` would pass BUILD=1 on as an
    override into the kernel's tools/build)."""
    drop = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **BUILD_ENV}


def make(tree: Path, build_dir: Path, *targets: str, jobs: int | None = None,
         extra: tuple[str, ...] = (), timeout: float | None = 3600,
         out=None) -> subprocess.CompletedProcess:
    """make in the O= directory, reproducible and through ccache; stderr goes into
    stdout so that each diagnostic stays after the kbuild line (CC, CHECK) of the
    tool that printed it.  out: an open file to stream the output to instead.
    The ARCH= (and cross compiler) is the build directory's (arches.arch_of);
    with DISTCC_HOSTS, ccache hands its misses to distcc (classify.distcc)."""
    env = kbuild_env()
    try:
        distcc.check_hosts(env, warn=False)
    except distcc.DistccError as e:
        raise KbuildError(str(e)) from None
    return subprocess.run(["nice", "-n", "10", "make", "-C", str(tree), f"O={build_dir}",
                           *arch_of(build_dir).make_args(), f"-j{jobs or default_jobs()}",
                           *extra, *targets],
                          stdout=out or subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, env={**env, **distcc.build_env(env)})


@dataclass
class Configured:
    """A configured and prepared O= directory."""
    build_dir: Path
    base: str
    forced: dict[str, str]
    hash: str
    seconds: float


def ensure_config(tree: Path, build_dir: Path, forced: dict[str, str] | None = None,
                  base: str = ALLMODCONFIG, arch: Arch = NATIVE) -> Configured:
    """`make <base>` for arch with the forced options (KCONFIG_ALLCONFIG) in
    build_dir, configured once and again only when the request changes, every
    forced option checked in .config, then `make prepare`.  Raises KbuildError
    (a cross compiler that is not installed included)."""
    started = time.monotonic()
    forced = dict(forced or {})
    if arch.missing_compiler():
        raise KbuildError(arch.missing_compiler())
    try:
        distcc.check_hosts(dict(os.environ))
    except distcc.DistccError as e:
        raise KbuildError(str(e)) from None
    set_arch(build_dir, arch)
    text = "".join(format_option(s, forced[s]) + "\n" for s in sorted(forced))
    # The tree's version is in the stamp: a directory configured for 6.12 is
    # configured again for 6.1, never prepared with the other version's .config
    # (Kconfig would only default what 6.12 lacks, not give allmodconfig).
    salt = kernel_version(tree) + "\0" + ("" if arch is NATIVE else arch.name + "\0")
    digest = hashlib.sha256((salt + base + "\0" + text).encode()).hexdigest()[:16]
    stamp, dot = build_dir / STAMP_FILE, build_dir / ".config"
    if not (dot.is_file() and stamp.is_file() and stamp.read_text().strip() == digest):
        stamp.unlink(missing_ok=True)
        allconfig = build_dir / FORCED_FILE
        allconfig.write_text(text)
        log.info("configuring %s: %s %s%s", build_dir, arch.name, base,
                 f" + {len(forced)} forced option(s)" if forced else "")
        res = make(tree, build_dir, base, extra=(f"KCONFIG_ALLCONFIG={allconfig}",))
        if res.returncode != 0:
            dot.unlink(missing_ok=True)
            raise KbuildError(f"make {base} failed: {res.stdout.strip()[-300:]}")
    missing = missing_options(forced, config_values(dot))
    if missing:
        raise KbuildError(f"{dot}: the forced options did not all make it: "
                          + "; ".join(missing))
    stamp.write_text(digest + "\n")
    if not (build_dir / "include/generated/autoconf.h").is_file():
        log.info("make prepare in %s (minutes when cold)", build_dir)
    res = make(tree, build_dir, "prepare")
    if res.returncode != 0:
        raise KbuildError(f"make prepare failed: {res.stdout.strip()[-300:]}")
    return Configured(build_dir, base, forced, digest,
                      round(time.monotonic() - started, 1))


def compile_file(tree: Path, build_dir: Path, rel: str, logfile: Path | None = None,
                 sparse: bool = True, check_config: bool = True) -> Compile:
    """_compile_file, the record naming the build's architecture."""
    c = _compile_file(tree, build_dir, rel, logfile, sparse, check_config)
    c.arch = arch_of(build_dir).name
    return c


def _compile_file(tree: Path, build_dir: Path, rel: str, logfile: Path | None = None,
                  sparse: bool = True, check_config: bool = True) -> Compile:
    """make <dir>/<file>.o from scratch (with sparse, C=2, unless sparse is False).
    With check_config, an object the build's .config does not enable is not
    compiled at all ("not built here: <why>"): `make dir/file.o` would compile
    it anyway, and a file the configuration leaves out proves nothing."""
    started = time.monotonic()
    off = not_enabled(tree, build_dir, rel) if check_config else ""
    if off:
        return Compile(rel, "not built", f"not built here: {off}", [], [],
                       time.monotonic() - started)
    obj = kbuild_object(tree, rel)
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




_CC_LINE = re.compile(r"^  CC(?: \[M\])?\s+(\S+)\.o$")


def _chunks(output: str) -> dict[str, list[str]]:
    """The output of a -j1 make of several objects, cut at each object's CC line:
    what follows belongs to it (its compiler errors, its sparse CHECK)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if m := _CC_LINE.match(line):
            # amdgpu/../amdkfd/x.o (kbuild_object) is amdkfd/x.c's
            current = out.setdefault(os.path.normpath(m.group(1)) + ".c", [])
        if current is not None:
            current.append(line)
    return out


def _stopped(output: str) -> str:
    """The first error of a make that failed outside the objects it was asked
    for ("scripts/unifdef: Permission denied"), "" when it names none."""
    for line in output.splitlines():
        if re.search(r"Permission denied|error:|\*\*\* ", line):
            return line.strip()[-160:]
    return ""


def compile_files(tree: Path, build_dir: Path, rels: list[str],
                  logfile: Path | None = None, sparse: bool = True,
                  check_config: bool = True) -> dict[str, Compile]:
    """compile_file for several files in one make (-k; -j1, or distcc's -j): the
    same records, with kbuild's start-up paid once instead of once per object.  With check_config,
    the files the .config does not enable are not compiled (as compile_file)."""
    off = {rel: why for rel in rels
           if check_config and (why := not_enabled(tree, build_dir, rel))}
    skipped = {rel: Compile(rel, "not built", f"not built here: {why}", [], [], 0.0,
                            arch_of(build_dir).name) for rel, why in off.items()}
    rels = [rel for rel in rels if rel not in off]
    if len(rels) <= 1:
        return {**skipped, **{rel: compile_file(tree, build_dir, rel, logfile, sparse,
                                                check_config=False) for rel in rels}}
    started = time.monotonic()
    objs = [kbuild_object(tree, rel) for rel in rels]
    for obj in objs:
        (build_dir / obj).unlink(missing_ok=True)
    # -j1 keeps each object's output after its CC line; through distcc, -j from
    # the host list and make's --output-sync keep it so
    jobs = default_jobs() if distcc.enabled(dict(os.environ)) else 1
    res = make(tree, build_dir, *objs, jobs=jobs,
               extra=("-k",) + (("--output-sync=target",) if jobs > 1 else ())
               + (("C=2",) if sparse else ()))
    if logfile is not None:
        logfile.parent.mkdir(parents=True, exist_ok=True)
        logfile.write_text(res.stdout)
    chunks = _chunks(res.stdout)
    each = (time.monotonic() - started) / len(rels)
    out = {}
    for rel, obj in zip(rels, objs):
        text = "\n".join(chunks.get(rel, []))
        diags = parse_sparse(text, str(tree)) if text else []
        errs = [ln for ln in text.splitlines()
                if re.search(r"error:|Error \d|No rule to make target", ln)][:20]
        if (build_dir / obj).is_file():
            out[rel] = Compile(rel, "ok", "", diags, [], each)
        elif errs:
            out[rel] = Compile(rel, "failed", "make failed", diags, errs, each)
        elif stopped := _stopped(res.stdout) if res.returncode else "":
            # the make failed on a target it needed first (headers, a host tool)
            out[rel] = Compile(rel, "not built", f"make stopped first: {stopped}", [], [],
                               each)
        else:
            out[rel] = Compile(rel, "not built", why_not_built(tree, build_dir, rel), [], [],
                               each)
    arch = arch_of(build_dir).name
    for c in out.values():
        c.arch = arch
    return {**skipped, **out}
