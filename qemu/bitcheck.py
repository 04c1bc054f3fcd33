"""Bit for bit: with DEBUG_MUTEX_NONE the series must not change the kernel's code.

This is the seed's promise ("the generated code is unchanged"), measured: the same
tinyconfig + serial console vmlinux is built from a pristine worktree of --kernel
and from the worktree with kernel-patches/series applied (plus mode-none), and the
two .text sections are compared by size, raw sha256 and normalised disassembly
(qemu.textcmp).  Both builds live in their own persistent O= directory, so a second
run only relinks what changed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from qemu.build import BuildRequest, BuildStatus, build, build_dir_for
from qemu.common import DEFAULT_KERNEL, WORK_DIR
from qemu.config import ConfigRequest, ConfigStatus, configure
from qemu.source import Source, kernel_key, prepare_source
from qemu.textcmp import measure

log = logging.getLogger("sem2mutex.qemu.bitcheck")

FRAGMENT = "tiny-serial"
NO_SERIES = Path("/dev/null")     # read_series() of a non-file is []


@dataclass
class TextFigures:
    label: str                    # "without series" / "with series"
    vmlinux: Path | None
    size: int = 0
    raw_sha256: str = ""
    disasm_sha256: str = ""
    build_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def _build_vmlinux(label: str, source: Source, fragments: tuple[str, ...]) -> TextFigures:
    bdir = build_dir_for(fragments, kernel_key(source.kernel), WORK_DIR / "build" / "bitcheck"
                         / ("series" if source.series else "pristine"))
    cres = configure(ConfigRequest(source.tree, bdir, fragments))
    if cres.status is not ConfigStatus.SUCCESS:
        return TextFigures(label, None, problems=[f"{label}: config {cres.status.value}"]
                           + cres.errors)
    bres = build(BuildRequest(source.tree, bdir, target="vmlinux"))
    if bres.status is not BuildStatus.SUCCESS:
        return TextFigures(label, None, build_seconds=bres.elapsed,
                           problems=[f"{label}: build failed ({bres.log}):"] + bres.errors)
    size, raw, disasm = measure(str(bres.image))
    return TextFigures(label, bres.image, size, raw, disasm, bres.elapsed)


def bitcheck(kernel: Path = DEFAULT_KERNEL) -> list[TextFigures]:
    """[without series, with series]; each carries its problems, if any."""
    pristine = prepare_source(kernel, NO_SERIES, WORK_DIR / "trees" / "bitcheck")
    patched = prepare_source(kernel)
    if not patched.series:
        raise FileNotFoundError("kernel-patches/series lists no patches: nothing to compare")
    return [_build_vmlinux("without series", pristine, (FRAGMENT,)),
            _build_vmlinux("with series", patched, (FRAGMENT, "mode-none"))]


def verdict(figures: list[TextFigures]) -> tuple[bool, list[str]]:
    """(identical, lines to print)."""
    lines = [p for f in figures for p in f.problems]
    if lines:
        return False, lines
    for f in figures:
        lines.append(f"bitcheck: {f.label:14} .text {f.size} bytes, raw sha256 "
                     f"{f.raw_sha256[:16]}, disasm sha256 {f.disasm_sha256[:16]} "
                     f"(built in {f.build_seconds:.0f} s)")
    a, b = figures
    differ = [what for what, x, y in (("size", a.size, b.size),
                                      ("raw bytes", a.raw_sha256, b.raw_sha256),
                                      ("disassembly", a.disasm_sha256, b.disasm_sha256))
              if x != y]
    lines.append("bitcheck: identical .text" if not differ
                 else "bitcheck: DIFFERENT .text: " + ", ".join(differ))
    return not differ, lines
