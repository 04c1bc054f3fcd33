"""The machines the boot harness builds for and boots: one record per architecture.

x86_64 boots a bzImage on QEMU's default PC with the 8250 UART; arm64 boots the
uncompressed Image on `-M virt -cpu cortex-a57` with the PL011 UART.  Both run under
TCG here.  What builds the kernel (ARCH=, CROSS_COMPILE=, the compiler) is
classify.arches', the one table of architectures: this one adds only what booting
needs.  The userspace of the initramfs (busybox and our static helpers) comes
from Debian: busybox-static of the same architecture, gcc or its cross compiler.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from classify import arches
from classify.paths import WORK_DIR


@dataclass(frozen=True)
class Arch:
    name: str                       # a key of classify.arches.ARCHES
    image_target: str               # make target
    image: Path                     # relative to the O= directory
    qemu: str                       # the QEMU system binary
    machine: tuple[str, ...]        # machine and CPU arguments
    console: str                    # the serial console device
    busybox: Path                   # a static busybox for this architecture
    packages: str                   # what `apt-get install` gives the tools above

    @property
    def kbuild(self) -> arches.Arch:
        """The build side: make arguments, cross compiler (set_arch on its O= dirs)."""
        return arches.ARCHES[self.name]

    @property
    def cc(self) -> str:
        """Compiles the static initramfs helpers: the kernel's (cross) gcc."""
        return self.kbuild.gcc

    @property
    def default(self) -> bool:
        return self.name == "x86_64"

    def tag(self) -> str:
        """'' for x86_64 (the paths it always had), else the arch name."""
        return "" if self.default else self.name


ARCHES = {
    "x86_64": Arch("x86_64", "bzImage", Path("arch/x86/boot/bzImage"),
                   "/usr/bin/qemu-system-x86_64", (), "ttyS0", Path("/bin/busybox"),
                   "qemu-system-x86 busybox-static gcc"),
    "arm64": Arch("arm64", "Image", Path("arch/arm64/boot/Image"),
                  "/usr/bin/qemu-system-aarch64", ("-M", "virt", "-cpu", "cortex-a57"),
                  "ttyAMA0", WORK_DIR / "arm64" / "busybox",
                  "qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross "
                  "(busybox-static:arm64, unpacked by make setup)"),
}
assert set(ARCHES) <= set(arches.ARCHES)


def get_arch(name: str) -> Arch:
    """The record of ARCH=name; a one-line ValueError for any other name."""
    try:
        return ARCHES[name]
    except KeyError:
        raise ValueError(f"unknown ARCH {name!r}: known are {', '.join(sorted(ARCHES))}") \
            from None
