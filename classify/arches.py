"""The architectures a kernel build can target here, defined once.

x86_64 is the host's; i386 uses the host's gcc too (-m32: the kernel needs no
32-bit libc); the others use the cross compilers Debian ships
(gcc-<triplet>, installed by `make setup`).  A persistent build directory
knows the architecture it was configured for (ARCH_FILE, written by
kbuild.ensure_config), so that every later make in it uses the same ARCH= and
CROSS_COMPILE=.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

# written into an O= directory by ensure_config: the Arch.name it is for
ARCH_FILE = ".s2m-arch"


@dataclass(frozen=True)
class Arch:
    name: str                   # how records name it
    make_arch: str              # make ARCH=
    cross: str                  # make CROSS_COMPILE= ("" for the host's gcc)
    package: str                # the Debian package of its compiler
    dirs: tuple[str, ...]       # the arch/ directories its build descends into
    bits: int = 64

    @property
    def gcc(self) -> str:
        return f"{self.cross}gcc"

    def make_args(self) -> list[str]:
        """ARCH=, CROSS_COMPILE= and the compiler through ccache."""
        args = [f"ARCH={self.make_arch}", f"CC=ccache {self.gcc}", "HOSTCC=gcc"]
        return args[:1] + ([f"CROSS_COMPILE={self.cross}"] if self.cross else []) + args[1:]

    def missing_compiler(self) -> str:
        """"" when its compiler is installed, else the one-line reason."""
        if shutil.which(self.gcc):
            return ""
        return (f"ARCH={self.make_arch}: {self.gcc} is not installed (Debian package "
                f"{self.package}; `make setup` installs it)")


# In the order they are tried: the host's compiler first, then by how much of
# what x86_64 leaves out each one builds.
ARCHES: dict[str, Arch] = {a.name: a for a in (
    Arch("x86_64", "x86_64", "", "gcc", ("x86",)),
    Arch("i386", "i386", "", "gcc", ("x86",), bits=32),
    Arch("arm", "arm", "arm-linux-gnueabi-", "gcc-arm-linux-gnueabi", ("arm",), bits=32),
    # arch/arm64/xen/Makefile builds arch/arm/xen/'s objects
    Arch("arm64", "arm64", "aarch64-linux-gnu-", "gcc-aarch64-linux-gnu", ("arm64", "arm/xen")),
    Arch("powerpc", "powerpc", "powerpc64le-linux-gnu-", "gcc-powerpc64le-linux-gnu",
         ("powerpc",)),
    Arch("mips", "mips", "mips-linux-gnu-", "gcc-mips-linux-gnu", ("mips",), bits=32),
    Arch("m68k", "m68k", "m68k-linux-gnu-", "gcc-m68k-linux-gnu", ("m68k",), bits=32),
    Arch("parisc", "parisc", "hppa-linux-gnu-", "gcc-hppa-linux-gnu", ("parisc",), bits=32),
    Arch("sparc", "sparc64", "sparc64-linux-gnu-", "gcc-sparc64-linux-gnu", ("sparc",)),
)}
NATIVE = ARCHES["x86_64"]
# the Debian packages of the cross compilers (make setup)
CROSS_PACKAGES = sorted({a.package for a in ARCHES.values() if a.cross})


def arches_of_dir(name: str) -> list[Arch]:
    """The architectures whose build descends into arch/<name>/ (x86: i386 after
    x86_64)."""
    return [a for a in ARCHES.values() if name in a.dirs]


def builds_path(arch: Arch, rel: str) -> bool:
    """Whether arch's build descends where rel is (anything outside arch/ is
    everyone's; arch/arm/xen/ is arm's and arm64's)."""
    parts = Path(rel).parts
    if len(parts) <= 2 or parts[0] != "arch":
        return True
    return any(rel.startswith(f"arch/{d}/") for d in arch.dirs)


def arches_of_path(rel: str) -> list[Arch]:
    """The architectures whose build descends where rel is, under arch/."""
    return [a for a in ARCHES.values() if builds_path(a, rel)]


def arch_of(build_dir: Path) -> Arch:
    """The architecture a build directory was configured for (x86_64 when it
    says nothing: every directory made before cross builds is one)."""
    try:
        name = (build_dir / ARCH_FILE).read_text().strip()
    except OSError:
        return NATIVE
    if name not in ARCHES:
        raise ValueError(f"{build_dir / ARCH_FILE}: unknown architecture {name!r}")
    return ARCHES[name]


def set_arch(build_dir: Path, arch: Arch) -> None:
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / ARCH_FILE).write_text(arch.name + "\n")


def arch_build_dir(base: Path, arch: Arch, forced_choice: str = "") -> Path:
    """The persistent O= directory of arch beside base (work/build/allmodconfig:
    work/build/allmodconfig-m68k, and -mips+SGI_IP32 for a forced choice)."""
    if arch is NATIVE and not forced_choice:
        return base
    suffix = "" if arch is NATIVE else f"-{arch.name}"
    return base.parent / (base.name + suffix
                          + (f"+{forced_choice.removeprefix('CONFIG_')}" if forced_choice else ""))
