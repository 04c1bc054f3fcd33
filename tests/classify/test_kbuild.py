"""classify/kbuild.py without a kernel: the output of one make for several objects
cut per object, and the configuration with its forced options checked."""

import subprocess

import pytest

from classify import kbuild

OUTPUT = """\
  DESCEND objtool
  CALL    scripts/checksyscalls.sh
  CC [M]  drivers/a/one.o
drivers/a/one.c:3:5: error: 'x' undeclared
  CC      drivers/b/two.o
  CHECK   drivers/b/two.c
drivers/b/two.c:9:1: warning: symbol 'y' was not declared. Should it be static?
"""


def test_one_make_is_cut_per_object():
    chunks = kbuild._chunks(OUTPUT)
    assert set(chunks) == {"drivers/a/one.c", "drivers/b/two.c"}
    assert any("error:" in ln for ln in chunks["drivers/a/one.c"])
    # the look-alike: the other object's sparse warning is not the first one's
    assert not any("warning:" in ln for ln in chunks["drivers/a/one.c"])
    assert [d.path for d in kbuild.parse_sparse("\n".join(chunks["drivers/b/two.c"]))] == \
        ["drivers/b/two.c"]


def test_compile_files_records_each_object(tmp_path, monkeypatch):
    build = tmp_path / "build"
    (build / "drivers/b").mkdir(parents=True)

    def fake_make(tree, build_dir, *targets, **kw):
        (build_dir / "drivers/b/two.o").write_text("")     # one.o fails, two.o builds
        return subprocess.CompletedProcess([], 2, OUTPUT, "")

    monkeypatch.setattr(kbuild, "make", fake_make)
    got = kbuild.compile_files(tmp_path, build, ["drivers/a/one.c", "drivers/b/two.c"])
    assert got["drivers/a/one.c"].status == "failed"
    assert got["drivers/b/two.c"].status == "ok"
    assert len(got["drivers/b/two.c"].sparse) == 1


def test_ensure_config_forces_and_checks(tmp_path, monkeypatch):
    calls = []

    def fake_make(tree, build_dir, *targets, **kw):
        calls.append(targets)
        if targets == ("allmodconfig",):
            forced = (build_dir / kbuild.FORCED_FILE).read_text()
            # a forced option that does not survive (an unmet dependency) is dropped
            (build_dir / ".config").write_text(
                forced.replace("CONFIG_B=y", "# CONFIG_B is not set") + "CONFIG_C=y\n")
        return subprocess.CompletedProcess([], 0, "", "")

    monkeypatch.setattr(kbuild, "make", fake_make)
    (tmp_path / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 192\n")
    done = kbuild.ensure_config(tmp_path, tmp_path / "o", {"CONFIG_A": "n"})
    assert done.forced == {"CONFIG_A": "n"} and calls == [("allmodconfig",), ("prepare",)]
    kbuild.ensure_config(tmp_path, tmp_path / "o", {"CONFIG_A": "n"})
    assert calls[2:] == [("prepare",)]                  # configured once, then reused
    with pytest.raises(kbuild.KbuildError, match="Missing: CONFIG_B=y"):
        kbuild.ensure_config(tmp_path, tmp_path / "p", {"CONFIG_B": "y"})


def test_a_file_of_another_architecture_is_not_built_here(tmp_path):
    """arch/arm/xen/enlighten.c includes xen/xenbus.h, but an x86_64 build never
    descends into arch/arm/; the look-alike, arch/x86/..., is checked as usual."""
    (tmp_path / ".config").write_text("CONFIG_XEN=y\n")
    why = kbuild.not_enabled(tmp_path, tmp_path, "arch/arm/xen/enlighten.c")
    assert "ARCH=arm" in why
    assert kbuild.not_enabled(tmp_path, tmp_path, "arch/x86/xen/enlighten.c") == ""


def test_jobs_from_the_environment(monkeypatch):
    from classify.kbuild import default_jobs
    monkeypatch.delenv("SEM2MUTEX_JOBS", raising=False)
    import os
    assert default_jobs() == (os.cpu_count() or 1) + 1
    monkeypatch.setenv("SEM2MUTEX_JOBS", "2")
    assert default_jobs() == 2
    monkeypatch.setenv("SEM2MUTEX_JOBS", "lots")      # not a number: the default
    assert default_jobs() == (os.cpu_count() or 1) + 1


def test_a_directory_configured_for_another_version_is_configured_again(tmp_path, monkeypatch):
    """The same O= directory given a 6.12 tree after a 6.1 one: its .config is
    made again (allmodconfig of 6.12), not prepared as 6.1 left it."""
    calls = []

    def fake_make(tree, build_dir, *targets, **kw):
        calls.append((tree.name, targets))
        if targets == ("allmodconfig",):
            (build_dir / ".config").write_text("CONFIG_A=y\n")
        return subprocess.CompletedProcess([], 0, "", "")

    monkeypatch.setattr(kbuild, "make", fake_make)
    for name, level in (("a", "1\nSUBLEVEL = 192"), ("b", "12\nSUBLEVEL = 118")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "Makefile").write_text(f"VERSION = 6\nPATCHLEVEL = {level}\n")
    build = tmp_path / "o"
    kbuild.ensure_config(tmp_path / "a", build)
    kbuild.ensure_config(tmp_path / "a", build)
    assert [c for c in calls if c[1] == ("allmodconfig",)] == [("a", ("allmodconfig",))]
    kbuild.ensure_config(tmp_path / "b", build)
    assert [c for c in calls if c[1] == ("allmodconfig",)] == [
        ("a", ("allmodconfig",)), ("b", ("allmodconfig",))]


def test_an_object_built_from_another_directory_is_made_from_there(tmp_path):
    """amdkfd's Makefile is a fragment that amdgpu's includes (`AMDKFD_PATH :=
    ../amdkfd`): its objects are made as amdgpu/../amdkfd/x.o, with amdgpu's -I
    flags.  A directory with obj- lines of its own is made as itself, even when a
    sibling names it (the look-alike)."""
    amd = tmp_path / "drivers/gpu/drm/amd"
    for d, text in {"amdgpu": "AMDKFD_PATH := ../amdkfd\ninclude $(FULL_AMD_PATH)/amdkfd/Makefile\n"
                              "amdgpu-y += $(AMDKFD_FILES)\nobj-$(CONFIG_DRM_AMDGPU) += amdgpu.o\n"
                              "# see ../own\n",
                    "amdkfd": "AMDKFD_FILES := $(AMDKFD_PATH)/kfd_pasid.o\n",
                    "own": "obj-y += own.o\n"}.items():
        (amd / d).mkdir(parents=True)
        (amd / d / "Makefile").write_text(text)
    assert (kbuild.kbuild_object(tmp_path, "drivers/gpu/drm/amd/amdkfd/kfd_pasid.c")
            == "drivers/gpu/drm/amd/amdgpu/../amdkfd/kfd_pasid.o")
    assert kbuild.kbuild_object(tmp_path, "drivers/gpu/drm/amd/own/own.c") == \
        "drivers/gpu/drm/amd/own/own.o"
    assert kbuild.kbuild_object(tmp_path, "drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c") == \
        "drivers/gpu/drm/amd/amdgpu/amdgpu_drv.o"
    # and make's CC line of such an object is the file's own
    out = "  CC [M]  drivers/gpu/drm/amd/amdgpu/../amdkfd/kfd_pasid.o\nwarning: x\n"
    assert list(kbuild._chunks(out)) == ["drivers/gpu/drm/amd/amdkfd/kfd_pasid.c"]


def test_a_make_stopped_on_another_target_is_named():
    from classify.kbuild import _stopped
    out = ("  HDRINST usr/include/linux/x.h\n"
           "/t/scripts/headers_install.sh: 41: scripts/unifdef: Permission denied\n"
           "make[2]: *** [Makefile.headersinst:63: usr/include/linux/x.h] Error 1\n")
    assert _stopped(out).endswith("scripts/unifdef: Permission denied")
    assert _stopped("  CC [M]  drivers/a.o\n") == ""        # look-alike: nothing failed
