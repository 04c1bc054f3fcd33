"""Stage 3, initramfs: busybox-static, our static helpers, the workload scripts of
workloads/*.sh (as /bin/s2m-wl-NAME), /init, as a newc cpio.

For arm64 the busybox is Debian's busybox-static:arm64 (unpacked into work/arm64 by
`make setup`) and the helpers are built with aarch64-linux-gnu-gcc -static, into
work/initramfs-arm64.

The archive is written by Python (no cpio/find), every entry with uid/gid 0, mtime 0 and
sorted names, so the same inputs give the same bytes.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from qemu.arch import get_arch
from qemu.common import INITRAMFS_SRC, WORK_DIR, Timer

log = logging.getLogger("sem2mutex.qemu.rootfs")

BUSYBOX = Path("/bin/busybox")


class InitramfsStatus(enum.Enum):
    SUCCESS = "success"
    BUSYBOX_MISSING = "busybox_missing"
    COMPILE_FAILED = "compile_failed"


@dataclass(frozen=True)
class InitramfsRequest:
    out_dir: Path = WORK_DIR / "initramfs"
    src_dir: Path = INITRAMFS_SRC
    busybox: Path = BUSYBOX
    cc: str = "gcc"


def request_for(arch: str) -> InitramfsRequest:
    """The initramfs of an architecture: its busybox, its compiler, its directory."""
    a = get_arch(arch)
    if a.default:
        return InitramfsRequest()
    return InitramfsRequest(WORK_DIR / f"initramfs-{a.name}", INITRAMFS_SRC, a.busybox, a.cc)


@dataclass
class InitramfsResult:
    status: InitramfsStatus
    elapsed: float
    image: Path | None = None
    sha256: str = ""
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Entry:
    name: str          # path inside the archive, no leading "/"
    mode: int          # full st_mode (type + permissions)
    data: bytes = b""  # file contents or symlink target
    rdev: tuple[int, int] = (0, 0)


def newc(entries: list[Entry]) -> bytes:
    """A newc ("070701") cpio archive of entries, sorted by name, plus the trailer."""
    out = bytearray()
    ino = 1
    for e in sorted(entries, key=lambda e: e.name) + [Entry("TRAILER!!!", 0)]:
        name = e.name.encode() + b"\0"
        fields = [ino, e.mode, 0, 0, 2 if stat.S_ISDIR(e.mode) else 1, 0, len(e.data),
                  0, 0, e.rdev[0], e.rdev[1], len(name), 0]
        out += b"070701" + b"".join(b"%08X" % f for f in fields) + name
        out += b"\0" * (-len(out) % 4) + e.data
        out += b"\0" * (-len(out) % 4)
        ino += 1
    out += b"\0" * (-len(out) % 512)
    return bytes(out)


def compile_helpers(src_dir: Path, out_dir: Path, cc: str = "gcc"
                    ) -> tuple[dict[str, Path], list[str]]:
    """cc -static -O2 each qemu/initramfs/*.c; returns {name: binary} and errors."""
    out_dir.mkdir(parents=True, exist_ok=True)
    built: dict[str, Path] = {}
    errors: list[str] = []
    for src in sorted(src_dir.glob("*.c")):
        binary = out_dir / src.stem
        if not binary.exists() or binary.stat().st_mtime < src.stat().st_mtime:
            try:
                res = subprocess.run([cc, "-static", "-O2", "-Wall", "-Werror", "-o",
                                      str(binary), str(src)], capture_output=True, text=True)
            except OSError as err:
                errors.append(f"{src.name}: cannot run {cc}: {err}")
                continue
            if res.returncode != 0:
                errors += [f"{src.name}: {cc} failed:"] + res.stderr.splitlines()[:20]
                continue
        built[src.stem] = binary
    return built, errors


def with_modules(initramfs: Path, modules: list[Path], dest: Path) -> Path:
    """The initramfs with a kernel's modules as /lib/modules/NAME.ko, for /init's
    insmod: steps: a second newc archive appended to the first (the kernel unpacks
    each archive of a concatenation in turn), so the initramfs itself is shared by
    every kernel.  dest is written only when its bytes change."""
    d, f = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o644
    entries = [Entry("lib", d), Entry("lib/modules", d)]
    entries += [Entry(f"lib/modules/{ko.name}", f, ko.read_bytes()) for ko in modules]
    data = initramfs.read_bytes() + newc(entries)
    if not dest.is_file() or dest.read_bytes() != data:
        dest.write_bytes(data)
    return dest


def make_initramfs(req: InitramfsRequest) -> InitramfsResult:
    with Timer() as t:
        result = _make(req)
    result.elapsed = t.elapsed
    return result


def _make(req: InitramfsRequest) -> InitramfsResult:
    bb = req.busybox
    if not bb.is_file() or shutil.which(str(bb)) is None:
        how = ("apt-get install busybox-static" if bb == BUSYBOX
               else "make setup unpacks it (busybox-static of that architecture)")
        return InitramfsResult(InitramfsStatus.BUSYBOX_MISSING, 0.0, errors=[
            f"{bb} not found: {how}"])
    helpers, errors = compile_helpers(req.src_dir, req.out_dir / "bin", req.cc)
    if errors:
        return InitramfsResult(InitramfsStatus.COMPILE_FAILED, 0.0, errors=errors)
    d, x = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o755
    entries = [Entry(n, d) for n in ("bin", "dev", "proc", "sys", "tmp", "sbin")]
    entries += [Entry("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1)),
                Entry("dev/null", stat.S_IFCHR | 0o666, rdev=(1, 3)),
                Entry("dev/ttyS0", stat.S_IFCHR | 0o600, rdev=(4, 64)),
                Entry("init", x, (req.src_dir / "init").read_bytes()),
                Entry("bin/busybox", x, bb.read_bytes()),
                Entry("bin/sh", stat.S_IFLNK | 0o777, b"busybox")]
    entries += [Entry(f"bin/{name}", x, path.read_bytes()) for name, path in helpers.items()]
    # workload scripts (the runtime scenarios' `workload:NAME` steps)
    entries += [Entry(f"bin/s2m-wl-{sh.stem}", x, sh.read_bytes())
                for sh in sorted((req.src_dir / "workloads").glob("*.sh"))]
    data = newc(entries)
    image = req.out_dir / "initramfs.cpio"
    if not image.is_file() or image.read_bytes() != data:
        image.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()[:16]
    log.info("initramfs %s (%d KiB, %s)", image, len(data) // 1024, digest)
    return InitramfsResult(InitramfsStatus.SUCCESS, 0.0, image, digest)
