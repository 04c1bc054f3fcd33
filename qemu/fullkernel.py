"""`make full-kernel CONFIG=...`: a DEBUG_MUTEX_FULL + lockdep kernel of the tester's
own configuration.

Stages, each a function of a small request: the source (a worktree of KERNEL with
the series of its version, kernel-patches/<major.minor>/series, the marking
included: qemu.source), the configuration (the user's .config merged with the
mode-full and full-lockdep fragments by the tree's own
scripts/kconfig/merge_config.sh, `make olddefconfig`, every requested option checked:
qemu.userconfig), the build (the arch's boot image, `modules` too with MODULES=1), and
on request a boot of the image to our initramfs in QEMU.  One persistent O= directory
per architecture and tree, work/build/full-<arch>[-<tree key>], reconfigured only when
the user's config, the fragments or the tree change, so that a second run (and the
runtime-coverage work that reuses it) is incremental.  Its s2m-full-kernel.json records
the last run: the config check, the image, the times.
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from classify import arches
from classify.kbuild import (config_values, default_jobs, kconfig_depends, make,
                             sourced_if)
from qemu import userconfig
from qemu.arch import get_arch
from qemu.build import BuildRequest, BuildStatus, build
from qemu.common import WORK_DIR, Timer, dumps
from qemu.config import fragment_path, load_fragment, merge_fragments
from qemu.source import kernel_key, prepare_source

log = logging.getLogger("sem2mutex.qemu.fullkernel")

FRAGMENTS = ("mode-full", "full-lockdep")
RECORD = "s2m-full-kernel.json"
STAMP = ".s2m-full-kernel-hash"


class FullStatus(enum.Enum):
    CONFIGURED = "configured"          # BUILD=0: stopped before the build
    BUILT = "built"
    DROPPED = "dropped"                # a requested option did not survive
    FAILURE = "failure"
    REFUSED = "refused"                # the input: no such file, not a .config, wrong arch


@dataclass(frozen=True)
class FullKernelRequest:
    config: Path                       # the tester's .config (only read)
    kernel: Path                       # the tree (only read; built from a worktree)
    arch: str = ""                     # "": the one the config was made for
    build: bool = True
    modules: bool = False
    build_dir: Path | None = None      # default: work/build/full-<arch>[-<key>]
    jobs: int = field(default_factory=default_jobs)


@dataclass
class FullKernelResult:
    status: FullStatus
    arch: str = ""
    build_dir: Path | None = None
    tree: Path | None = None
    image: Path | None = None
    check: userconfig.Check | None = None
    errors: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    configured: bool = True            # False: the .config of the last run was kept


def full_build_dir(arch: str, kernel: Path, root: Path = WORK_DIR / "build") -> Path:
    key = kernel_key(kernel)
    return root / (f"full-{arch}-{key}" if key else f"full-{arch}")


def request_hash(user_text: str, fragment_files: list[Path], head: str, arch: str) -> str:
    digest = hashlib.sha256()
    for part in [user_text, *(p.read_text() for p in fragment_files), head, arch]:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:16]


def merge(tree: Path, build_dir: Path, user_config: Path, fragment_files: list[Path]
          ) -> tuple[int, str]:
    """merge_config.sh -m (merge only), then make olddefconfig; (status, output)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "KCONFIG_CONFIG": str(build_dir / ".config")}
    res = subprocess.run(["sh", str(tree / "scripts/kconfig/merge_config.sh"), "-m",
                          "-O", str(build_dir), str(user_config.resolve()),
                          *map(str, fragment_files)], cwd=tree, env=env,
                         capture_output=True, text=True)
    output = res.stdout + res.stderr
    if res.returncode != 0:
        return res.returncode, output
    old = make(tree, build_dir, "olddefconfig")
    return old.returncode, output + old.stdout


def configure(req: FullKernelRequest, tree: Path, build_dir: Path, arch: str
              ) -> FullKernelResult:
    """The merge and its check, skipped when the stamp says nothing changed."""
    name = str(req.config)
    user_text = req.config.read_text(errors="replace")
    files = [fragment_path(f, arch=arch) for f in FRAGMENTS]
    requested = merge_fragments([load_fragment(f, arch=arch) for f in FRAGMENTS])
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    digest = request_hash(user_text, files, head, arch)
    # olddefconfig and the build take their ARCH= from the directory: written before
    # the stamp is read, so that a directory configured before it existed gets it too
    arches.set_arch(build_dir, arches.ARCHES[arch])
    stamp, record = build_dir / STAMP, build_dir / RECORD
    result = FullKernelResult(FullStatus.CONFIGURED, arch, build_dir, tree)
    if stamp.is_file() and stamp.read_text().strip() == digest and record.is_file():
        log.info("config %s unchanged (%s)", build_dir, digest)
        result.configured = False
        changes: list[userconfig.Change] = []
    else:
        stamp.unlink(missing_ok=True)
        log.info("merging %s with %s (merge_config.sh), make olddefconfig", name,
                 " + ".join(FRAGMENTS))
        status, output = merge(tree, build_dir, req.config, files)
        if status != 0:
            tail = [ln for ln in output.splitlines() if ln.strip()][-3:]
            return FullKernelResult(FullStatus.FAILURE, arch, build_dir, tree, errors=[
                f"merging {name} failed: " + " / ".join(tail)])
        changes = userconfig.merge_changes(output)
    values = config_values(build_dir / ".config")
    result.check = userconfig.check_options(
        requested, values, changes, lambda s: kconfig_depends(tree, s),
        lambda f: sourced_if(tree, f))
    if not result.configured:
        result.check.changed = _recorded_changes(record)
    if not result.check.ok:
        result.status = FullStatus.DROPPED
    else:
        stamp.write_text(digest + "\n")
    return result


def _recorded_changes(record: Path) -> list[userconfig.Change]:
    try:
        data = json.loads(record.read_text())
        return [userconfig.Change(**c) for c in data["check"]["changed"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def full_kernel(req: FullKernelRequest) -> FullKernelResult:
    """Source, configuration and check, then (unless build=False) the build."""
    if not req.config.is_file():
        return FullKernelResult(FullStatus.REFUSED, errors=[f"{req.config}: no such file"])
    try:
        options = userconfig.read_user_config(req.config.read_text(errors="replace"),
                                              str(req.config))
        arch = userconfig.choose_arch(options, req.arch, str(req.config))
        get_arch(arch)
    except ValueError as err:
        return FullKernelResult(FullStatus.REFUSED, req.arch, errors=[str(err)])
    seconds: dict[str, float] = {}
    with Timer() as t:
        source = prepare_source(req.kernel)
    seconds["source"] = t.elapsed
    build_dir = req.build_dir or full_build_dir(arch, source.kernel)
    with Timer() as t:
        result = configure(req, source.tree, build_dir, arch)
    seconds["configure"] = t.elapsed
    result.seconds = seconds
    if result.status is not FullStatus.CONFIGURED or not req.build:
        _record(result)
        return result
    targets = [get_arch(arch).image_target] + (["modules"] if req.modules else [])
    bres = build(BuildRequest(source.tree, build_dir, req.jobs, " ".join(targets)))
    seconds["build"] = bres.elapsed
    if bres.status is not BuildStatus.SUCCESS:
        result.status = FullStatus.FAILURE
        result.errors = [f"build failed (log {bres.log}):"] + bres.errors
    else:
        result.status = FullStatus.BUILT
        result.image = build_dir / get_arch(arch).image
    _record(result)
    return result


def _record(result: FullKernelResult) -> None:
    if result.build_dir is not None and result.build_dir.is_dir():
        (result.build_dir / RECORD).write_text(dumps(result))
