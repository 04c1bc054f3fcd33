"""arm64 beside x86_64: the QEMU command, the console, the fragments, the O= directory
and the initramfs of each architecture; x86_64 keeps what it always had."""

from pathlib import Path

import pytest

from classify import arches
from classify.kbuild import parse_config_text
from qemu.arch import ARCHES, get_arch
from qemu.build import build_dir_for
from qemu.common import CONFIGS_DIR
from qemu.config import fragment_path, load_fragment
from qemu.rootfs import InitramfsRequest, request_for
from qemu.run import RunRequest, base_cmdline, qemu_command

X86_ONLY = {"CONFIG_64BIT", "CONFIG_X86_64", "CONFIG_SERIAL_8250",
            "CONFIG_SERIAL_8250_CONSOLE", "CONFIG_UNWINDER_FRAME_POINTER",
            "CONFIG_UNWINDER_GUESS"}


def _cmd(arch: str) -> list[str]:
    return qemu_command(RunRequest(Path("img"), Path("initrd"), Path("log"), "s2m.step=none",
                                   arch=arch))


def test_arm64_boots_virt_on_cortex_a57_with_the_pl011_console():
    cmd = _cmd("arm64")
    assert cmd[:5] == ["/usr/bin/qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a57"]
    assert cmd[cmd.index("-accel") + 1] == "tcg"
    assert cmd[cmd.index("-append") + 1] == \
        "console=ttyAMA0 panic=-1 ignore_loglevel s2m.step=none"


def test_x86_64_command_is_unchanged():
    cmd = _cmd("x86_64")
    assert cmd[0] == "/usr/bin/qemu-system-x86_64" and "-M" not in cmd and "-cpu" not in cmd
    assert cmd[cmd.index("-append") + 1].startswith("console=ttyS0 ")
    assert base_cmdline() == "console=ttyS0 panic=-1 ignore_loglevel"


def test_unknown_arch_is_one_line():
    with pytest.raises(ValueError, match="unknown ARCH 'riscv': known are arm64, x86_64"):
        get_arch("riscv")


def test_make_args_cross_compile_arm64():
    """The boot machines build through classify.arches, the one table of make
    arguments: nothing here says ARCH= or CROSS_COMPILE= again."""
    arm = get_arch("arm64").kbuild.make_args()
    assert "CROSS_COMPILE=aarch64-linux-gnu-" in arm and "ARCH=arm64" in arm
    assert not any(a.startswith("CROSS_COMPILE") for a in get_arch("x86_64").kbuild.make_args())
    assert all(a.kbuild is arches.ARCHES[name] for name, a in ARCHES.items())


def test_arm64_has_its_own_base_fragment_and_shares_the_others():
    assert fragment_path("base", arch="arm64") == CONFIGS_DIR / "arm64" / "base.config"
    assert fragment_path("base") == CONFIGS_DIR / "base.config"
    assert fragment_path("mode-full", arch="arm64") == CONFIGS_DIR / "mode-full.config"
    arm = load_fragment("base", arch="arm64").options
    assert arm["CONFIG_SERIAL_AMBA_PL011_CONSOLE"] == "y"
    assert not set(arm) & X86_ONLY


def test_arm64_base_keeps_every_option_of_the_x86_64_base_but_the_x86_ones():
    """Both bases must ask for the same debugging: a change to one is a change to both."""
    x86 = parse_config_text((CONFIGS_DIR / "base.config").read_text())
    arm = load_fragment("base", arch="arm64").options
    assert {s: v for s, v in x86.items() if s not in X86_ONLY} == \
        {s: v for s, v in arm.items() if s in x86}


def test_build_dirs_are_apart_per_arch():
    frags = ("base", "mode-full")
    assert build_dir_for(frags, root=Path("/b")) == Path("/b/base+mode-full")
    assert build_dir_for(frags, root=Path("/b"), arch="arm64") == Path("/b/arm64-base+mode-full")
    assert build_dir_for(frags, "1234abcd", Path("/b"), "arm64") == \
        Path("/b/1234abcd-arm64-base+mode-full")


def test_initramfs_per_arch():
    assert request_for("x86_64") == InitramfsRequest()
    arm = request_for("arm64")
    assert arm.cc == "aarch64-linux-gnu-gcc" and arm.busybox == get_arch("arm64").busybox
    assert arm.out_dir != InitramfsRequest().out_dir
