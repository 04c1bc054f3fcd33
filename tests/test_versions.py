"""One series per base version: kernel-patches/<major.minor>/, picked by the tree's
version; a tree of another version gets one line naming the versions there are."""

import subprocess
import sys

import pytest

from classify import versions
from classify.paths import BUILD_ROOT, PROJECT_DIR, SERIES_ROOT, SETUP_TREES
from classify.tree import TreeError
from qemu.source import read_series
from test_tree import fake_kernel


def test_base_version():
    assert versions.base_version("6.12.118") == "6.12"
    assert versions.base_version("6.1") == "6.1"
    assert versions.base_version("6.13.0-rc1") == "6.13"
    with pytest.raises(TreeError, match="not a kernel version"):
        versions.base_version("six")


def test_the_repository_has_a_series_for_each_tree_make_setup_unpacks():
    assert versions.series_versions() == ["6.1", "6.12"] == list(SETUP_TREES)
    for v in versions.series_versions():
        patches = read_series(SERIES_ROOT / v / "series")
        # numbered without a gap, the same patches on every version (a port)
        assert [p.name for p in patches] == [
            p.name for p in read_series(SERIES_ROOT / "6.1" / "series")], v
        assert [p.name[:4] for p in patches] == [f"{i:04d}" for i in range(1, len(patches) + 1)], v
        assert all(p.is_file() for p in patches), v
        assert (SERIES_ROOT / v / "0000-cover-letter.patch").is_file()
    # nothing is left at the old place, where no version would pick it
    assert not list(SERIES_ROOT.glob("*.patch")) and not (SERIES_ROOT / "series").exists()


@pytest.mark.parametrize("patchlevel", ["1", "12"])
def test_a_tree_gets_the_series_of_its_version(tmp_path, patchlevel):
    kernel = fake_kernel(tmp_path / "linux", sublevel="7", patchlevel=patchlevel)
    assert versions.series_dir(kernel) == SERIES_ROOT / f"6.{patchlevel}"
    assert versions.series_file(kernel) == SERIES_ROOT / f"6.{patchlevel}" / "series"


def test_a_tree_of_another_version_is_refused_naming_the_versions(tmp_path):
    kernel = fake_kernel(tmp_path / "linux", sublevel="0", patchlevel="6")
    with pytest.raises(TreeError) as err:
        versions.series_dir(kernel)
    assert str(err.value) == ("Linux 6.6.0: kernel-patches/ has no series for 6.6 "
                              "(series there: 6.1, 6.12)")
    res = subprocess.run([sys.executable, "-m", "classify.versions", "series", str(kernel)],
                         cwd=PROJECT_DIR, capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "series there: 6.1, 6.12" in res.stderr


def test_a_directory_without_a_series_file_is_not_a_series(tmp_path):
    (tmp_path / "6.1").mkdir()
    (tmp_path / "6.1" / "series").write_text("0001-a.patch\n")
    (tmp_path / "5.10").mkdir()          # no series file: not offered
    (tmp_path / "6.12").mkdir()
    (tmp_path / "6.12" / "series").write_text("0001-a.patch\n")
    assert versions.series_versions(tmp_path) == ["6.1", "6.12"]
    assert versions.series_versions(tmp_path / "absent") == []


def test_tree_names_the_setup_trees():
    assert versions.tree_for("6.12") == SETUP_TREES["6.12"]
    with pytest.raises(TreeError, match=r"TREE=4.19: make setup unpacks no such tree"):
        versions.tree_for("4.19")


def test_each_version_has_its_own_build_directories():
    """work/build/allmodconfig is the default tree's; a 6.12 run does not
    configure it over (and the next 6.1 run over again)."""
    assert versions.build_dir_for("allmodconfig", "6.1.192") == BUILD_ROOT / "allmodconfig"
    assert versions.build_dir_for("allmodconfig", "6.12.118") == BUILD_ROOT / "allmodconfig-6.12"
    assert versions.build_dir_for("allmodconfig-full", "6.12") == BUILD_ROOT / "allmodconfig-full-6.12"
