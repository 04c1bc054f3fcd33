"""The Makefile is the interface: every target honours KERNEL=, refuses a path that
is not a kernel tree in one line."""

import subprocess
from pathlib import Path

import pytest

from test_tree import fake_kernel

REPO = Path(__file__).resolve().parent.parent
TARGETS_WITH_KERNEL = ["check", "audit", "patches", "reports", "boot-test", "bitcheck",
                       "bench", "selftest-control"]


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("target", TARGETS_WITH_KERNEL)
def test_target_refuses_a_kernel_that_is_not_a_tree(tmp_path, target):
    result = make(target, f"KERNEL={tmp_path}")
    assert result.returncode != 0
    assert f"make {target}: error: {tmp_path}: no top-level Makefile" in result.stderr


@pytest.mark.parametrize("target", TARGETS_WITH_KERNEL)
def test_target_works_on_the_kernel_it_is_given(tmp_path, target):
    kernel = fake_kernel(tmp_path / "other-linux", sublevel="999")
    # -n: show what the target would run on that tree without running its stages;
    # the preflight line is what proves that KERNEL= reached the target.
    result = make("-n", target, f"KERNEL={kernel}")
    assert result.returncode == 0, result.stderr
    assert f"--kernel {kernel}" in result.stdout


def test_missing_tree_says_run_make_setup(tmp_path):
    result = make("audit", f"KERNEL={tmp_path}/absent")
    assert result.returncode != 0
    assert "no such directory (run `make setup`" in result.stderr


def test_tree_names_a_tree_make_setup_unpacks():
    result = make("-n", "audit", "TREE=6.12")
    assert result.returncode == 0, result.stderr
    assert f"--kernel {REPO}/work/linux-6.12" in result.stdout


def test_tree_of_another_version_is_refused_in_one_line():
    result = make("-n", "audit", "TREE=5.4")
    assert result.returncode != 0
    assert "TREE=5.4: make setup unpacks no such tree (trees: 6.1 6.12)" in result.stderr
