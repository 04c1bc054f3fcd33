"""Stage 2, build: the boot image (x86_64 bzImage, arm64 Image) in a persistent O=
directory, with ccache, -j cores+1 (SEM2MUTEX_JOBS).  The architecture is the
directory's own (classify.arches.arch_of: configure wrote it), so that the make
arguments and the image always agree with the .config.

A failed build is reported by name with the compiler/linker lines that matter (and
their next lines), not as a traceback; the whole make output is kept in
<build_dir>/build.log.
"""

from __future__ import annotations

import enum
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from qemu.arch import get_arch
from qemu.common import WORK_DIR, Timer
from classify.arches import arch_of
from classify.kbuild import default_jobs, make

log = logging.getLogger("sem2mutex.qemu.build")

IMAGE = get_arch("x86_64").image
_ERROR = re.compile(r"(error:|Error \d+|undefined reference|\*\*\*|multiple definition"
                    r"|No rule to make target|fatal error|Segmentation fault)")


class BuildStatus(enum.Enum):
    SUCCESS = "success"
    FAILURE = "failure"


@dataclass(frozen=True)
class BuildRequest:
    tree: Path
    build_dir: Path
    jobs: int = field(default_factory=default_jobs)
    target: str = ""          # "": the arch's boot image (bzImage, Image); words: several


@dataclass
class BuildResult:
    status: BuildStatus
    elapsed: float
    image: Path | None = None
    errors: list[str] = field(default_factory=list)
    log: Path | None = None


def build_dir_for(fragments: tuple[str, ...], kernel_key: str = "",
                  root: Path = WORK_DIR / "build", arch: str = "x86_64") -> Path:
    """One O= directory per configuration, named by its fragment set (and the
    architecture, other than x86_64)."""
    name = "+".join(fragments)
    if arch != "x86_64":
        name = f"{arch}-{name}"
    return root / (f"{kernel_key}-{name}" if kernel_key else name)


def error_lines(output: str, limit: int = 40) -> list[str]:
    """The lines of a make log that say what broke, each with the line after it."""
    lines = output.splitlines()
    picked: list[str] = []
    seen: set[int] = set()
    for i, line in enumerate(lines):
        if _ERROR.search(line):
            for j in (i, i + 1):
                if j < len(lines) and j not in seen and lines[j].strip():
                    seen.add(j)
                    picked.append(lines[j])
    return picked[:limit] or lines[-limit:]


def build(req: BuildRequest) -> BuildResult:
    with Timer() as t:
        arch = get_arch(arch_of(req.build_dir).name)
        targets = (req.target or arch.image_target).split()
        logfile = req.build_dir / "build.log"
        log.info("building %s (make -j%d %s)", req.build_dir.name, req.jobs,
                 " ".join(targets))
        with logfile.open("w") as out:
            res = make(req.tree, req.build_dir, *targets, jobs=req.jobs,
                       timeout=None, out=out)
    if res.returncode != 0:
        return BuildResult(BuildStatus.FAILURE, t.elapsed, None,
                           error_lines(logfile.read_text(errors="replace")), logfile)
    image = req.build_dir / (arch.image if arch.image_target in targets else targets[0])
    if not image.is_file():
        return BuildResult(BuildStatus.FAILURE, t.elapsed, None,
                           [f"make succeeded but {image} is missing"], logfile)
    log.info("built %s in %.1f s", image, t.elapsed)
    return BuildResult(BuildStatus.SUCCESS, t.elapsed, image, [], logfile)
