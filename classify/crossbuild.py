"""Each file compiled on an architecture whose allmodconfig builds it.

x86_64 first (work/build/allmodconfig).  A file x86_64's configuration leaves
out goes to the candidates classify.archfind reads from Kconfig, in order, each
in its own persistent O= directory beside the x86_64 one
(work/build/allmodconfig-m68k), configured the first time a file needs it; the
first whose .config enables the file builds it.  When the unmet dependency there
is an entry of a Kconfig `choice` allmodconfig does not take (the MIPS system
type: SGI_IP32, CAVIUM_OCTEON_SOC), the choice is forced in a directory of its
own (allmodconfig-mips+SGI_IP32).  A file no architecture builds keeps the
reasons, one per architecture tried ("CONFIG_PPS_GENERATOR_PARPORT depends on
BROKEN").  Records name the architecture each file was built on.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from classify.archfind import KconfigArches, candidates
from classify.arches import ARCHES, NATIVE, Arch, arch_build_dir
from classify.kbuild import (ALLMODCONFIG, Compile, KbuildError, compile_files,
                             config_values, ensure_config, not_enabled)
from classify.kconfig import config_symbols, kconfig_depends, unmet_depends

log = logging.getLogger("sem2mutex.crossbuild")


@dataclass
class Placement:
    rel: str
    build_dir: Path | None      # None: no architecture tried builds it
    arch: str
    why: str = ""               # why not, one reason per architecture tried


class Builds:
    """The allmodconfig build directories of one tree (with the same forced
    options), one per architecture and forced choice, configured on first use."""

    def __init__(self, tree: Path, base_dir: Path, forced: dict[str, str] | None = None,
                 base: str = ALLMODCONFIG, cross: bool = True):
        self.tree, self.base_dir, self.base, self.cross = tree, base_dir, base, cross
        self.forced = dict(forced or {})
        self.seconds: dict[str, float] = {}     # configure + prepare, per directory
        self._dirs: dict[tuple[str, str], Path | str] = {}
        self._placed: dict[str, Placement] = {}
        self._index: KconfigArches | None = None

    @property
    def index(self) -> KconfigArches:
        if self._index is None:
            self._index = KconfigArches(self.tree)
        return self._index

    def native(self) -> Path:
        """x86_64's directory, configured (raises KbuildError)."""
        got = self.configured(NATIVE)
        if isinstance(got, str):
            raise KbuildError(got)
        return got

    def configured(self, arch: Arch, choice: str = "") -> Path | str:
        """The configured directory of arch (with choice forced), or why not."""
        key = (arch.name, choice)
        if key not in self._dirs:
            build_dir = arch_build_dir(self.base_dir, arch, choice)
            forced = {**self.forced, **({choice: "y"} if choice else {})}
            try:
                done = ensure_config(self.tree, build_dir, forced, self.base, arch)
                self.seconds[build_dir.name] = done.seconds
                self._dirs[key] = build_dir
            except KbuildError as e:
                log.warning("%s: %s", build_dir.name, e)
                self._dirs[key] = f"{arch.name} {self.base}{'+' + choice if choice else ''}: " \
                    + str(e).splitlines()[0][:200]
        return self._dirs[key]

    # ---------------------------------------------------------------- where

    def place(self, rel: str) -> Placement:
        """Where rel builds: x86_64 when its configuration enables it, else the
        first candidate architecture (or forced choice) that does."""
        if rel not in self._placed:
            self._placed[rel] = self._place(rel)
        return self._placed[rel]

    def _place(self, rel: str) -> Placement:
        native = self.native()
        why = not_enabled(self.tree, native, rel)
        if not why:
            return Placement(rel, native, NATIVE.name)
        reasons = [why]
        tried = candidates(self.index, rel, config_values(native / ".config")) \
            if self.cross else []
        # a directory configured already first: the others cost minutes each
        tried.sort(key=lambda name: (ARCHES[name].name, "") not in self._dirs)
        for name in tried:
            got, reason = self._try(ARCHES[name], rel)
            if got is not None:
                log.info("%s: not built on x86_64 (%s); built on %s", rel, why, got.arch)
                return got
            reasons.append(reason)
        return Placement(rel, None, NATIVE.name, "; ".join(reasons))

    def _try(self, arch: Arch, rel: str) -> tuple[Placement | None, str]:
        got = self.configured(arch)
        if isinstance(got, str):
            return None, got
        why = not_enabled(self.tree, got, rel)
        if not why:
            return Placement(rel, got, arch.name), ""
        choice = self.choice_to_force(got, rel)
        if choice:
            forced = self.configured(arch, choice)
            if isinstance(forced, str):
                return None, f"{arch.name} {self.base}: {why}; {forced}"
            if not not_enabled(self.tree, forced, rel):
                return Placement(rel, forced, f"{arch.name}+{choice.removeprefix('CONFIG_')}"), ""
        return None, f"{arch.name} {self.base}: {why}"

    def choice_to_force(self, build_dir: Path, rel: str) -> str:
        """The entry of a Kconfig choice that keeps rel out of build_dir's
        configuration (one of its own symbols, or a symbol it depends on),
        as CONFIG_X; "" when there is none."""
        values = config_values(build_dir / ".config")
        for sym in config_symbols(self.tree, rel):
            if values.get(sym, "n") in ("y", "m"):
                continue
            found = kconfig_depends(self.tree, sym, rel)
            unmet = unmet_depends(found[1], values) if found else []
            for name in [sym.removeprefix("CONFIG_")] + unmet:
                if re.fullmatch(r"\w+", name) and self.index.in_choice(name):
                    return f"CONFIG_{name}"
        return ""

    # ---------------------------------------------------------------- build

    def compile(self, rels: list[str], logfile: Path | None = None, sparse: bool = True,
                unplaced_native: bool = False) -> dict[str, Compile]:
        """compile_files on the directory each file is placed in; a file no
        architecture builds is "not built here: <reasons>", or, with
        unplaced_native, compiled on x86_64 all the same (a type error shows even
        in a file the configuration leaves out)."""
        groups: dict[Path, list[str]] = {}
        out: dict[str, Compile] = {}
        for rel in rels:
            p = self.place(rel)
            if p.build_dir is None and unplaced_native:
                groups.setdefault(self.native(), []).append(rel)
            elif p.build_dir is None:
                out[rel] = Compile(rel, "not built", f"not built here: {p.why}", [], [], 0.0)
            else:
                groups.setdefault(p.build_dir, []).append(rel)
        for build_dir, group in groups.items():
            log_here = logfile
            if logfile is not None and build_dir != self.native():
                log_here = logfile.with_name(f"{logfile.stem}-{build_dir.name}{logfile.suffix}")
            got = compile_files(self.tree, build_dir, group, log_here, sparse,
                                check_config=False)
            for rel, c in got.items():
                p = self.place(rel)
                c.arch = p.arch if p.build_dir is not None else NATIVE.name
                if p.build_dir is None and c.status != "ok":
                    c.why = f"not built here: {p.why}"
                out[rel] = c
        return {rel: out[rel] for rel in rels}
