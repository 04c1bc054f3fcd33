"""make full-kernel BUILD=0 on the real 6.1 tree: each architecture's defconfig merged
with the FULL + lockdep request keeps every requested option, and a config of an
earlier series kernel (DEBUG_MUTEX_NONE chosen) ends up FULL.  Writes under work/."""

import subprocess

import pytest

from classify.arches import ARCHES
from classify.kbuild import config_values, kbuild_env
from qemu.common import DEFAULT_KERNEL, WORK_DIR
from qemu.fullkernel import FRAGMENTS, FullKernelRequest, FullStatus, full_kernel

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (DEFAULT_KERNEL / ".git").exists(),
                                 reason="no 6.1 tree: run `make setup`")]


def defconfig(arch: str) -> str:
    out = WORK_DIR / "tests" / f"defconfig-{arch}"
    if not (out / ".config").is_file():
        subprocess.run(["make", "-s", "-C", str(DEFAULT_KERNEL), f"O={out}",
                        *ARCHES[arch].make_args(), "defconfig"], check=True,
                       capture_output=True, env=kbuild_env())
    return (out / ".config").read_text()


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_defconfig_keeps_every_requested_option(arch):
    user = WORK_DIR / "tests" / f"user-{arch}.config"
    user.write_text(defconfig(arch))
    res = full_kernel(FullKernelRequest(user, DEFAULT_KERNEL, "", build=False,
                                        build_dir=WORK_DIR / "tests" / f"full-{arch}"))
    assert res.status is FullStatus.CONFIGURED and res.arch == arch, res.errors
    assert res.check is not None and res.check.ok and not res.check.dropped
    values = config_values(res.build_dir / ".config")
    assert values["CONFIG_DEBUG_MUTEX_FULL"] == "y" and values["CONFIG_PROVE_LOCKING"] == "y"
    assert len(res.check.survived) == res.check.requested >= 10
    assert "full-lockdep.config" in {c.fragment for c in res.check.changed} or \
        not res.configured
    assert len(FRAGMENTS) == 2


def test_an_earlier_none_choice_becomes_full():
    user = WORK_DIR / "tests" / "user-none.config"
    user.write_text(defconfig("x86_64") + "CONFIG_DEBUG_MUTEX_NONE=y\n")
    res = full_kernel(FullKernelRequest(user, DEFAULT_KERNEL, "x86_64", build=False,
                                        build_dir=WORK_DIR / "tests" / "full-none"))
    assert res.status is FullStatus.CONFIGURED, [d.line() for d in res.check.dropped]
    values = config_values(res.build_dir / ".config")
    assert values["CONFIG_DEBUG_MUTEX_FULL"] == "y"
    assert values.get("CONFIG_DEBUG_MUTEX_NONE", "n") == "n"
