"""Which architecture builds a file x86_64 allmodconfig leaves out
(classify/archfind.py), and the builds placed there (classify/crossbuild.py),
on a small fixture tree: Kconfig, Makefiles and .config files, no compiler."""

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from classify import crossbuild
from classify.archfind import KconfigArches, candidates
from classify.arches import ARCHES, arch_build_dir, arch_of
from classify.convert.cli import stable_record
from classify.convert.select import Outcome
from classify.kbuild import Compile

FILES = {
    "arch/x86/Kconfig": "config X86_64\n\tdef_bool y\n\nconfig 64BIT\n\tdef_bool y\n\n"
                        "config SBUS\n\tbool\n",
    "arch/m68k/Kconfig": 'config M68K\n\tdef_bool y\n\nconfig AMIGA\n\tbool "Amiga"\n',
    "arch/sparc/Kconfig": "config SBUS\n\tbool\n\tdefault y\n",
    "arch/parisc/Kconfig": 'source "drivers/parisc/Kconfig"\n',
    "arch/mips/Kconfig": 'choice\n\tprompt "System type"\n\nconfig MIPS_GENERIC\n\tbool "g"\n\n'
                         'config SGI_IP32\n\tbool "SGI IP32"\n\nendchoice\n',
    "drivers/parisc/Kconfig": 'config GSC\n\tbool "GSC bus"\n\tdefault y\n',
    "drivers/Kconfig": 'source "drivers/pp/Kconfig"\n',
    "drivers/pp/Kconfig": (
        'config PP\n\ttristate "pp"\n\n'
        'config PP_AMIGA\n\ttristate "amiga"\n\tdepends on PP && AMIGA\n\n'
        'config PP_SUN\n\ttristate "sun"\n\tdepends on SBUS\n\n'
        'config PP_GSC\n\ttristate\n\tdefault GSC\n\n'
        'config PP_IP32\n\ttristate "ip32"\n\tdepends on SGI_IP32\n\n'
        'config PP_OLD\n\ttristate "old"\n\tdepends on PP && !64BIT\n\n'
        'config PP_GONE\n\ttristate "gone"\n\tdepends on BROKEN\n\n'
        'config PP_EITHER\n\ttristate "either"\n\tdepends on SBUS || AMIGA\n\n'
        # look-alikes: named like an architecture's, not defined under arch/
        'config AMIGA_CLONE\n\tbool "clone"\n\n'
        'config PP_CLONE\n\ttristate "clone"\n\tdepends on AMIGA_CLONE && PCI\n'),
    "drivers/pp/Makefile": "".join(f"obj-$(CONFIG_PP_{n.upper()}) += pp_{n}.o\n" for n in
                                   ("amiga", "sun", "gsc", "ip32", "old", "gone", "clone", "either"))
                           + "obj-$(CONFIG_PP) += pp_pc.o\n",
    "drivers/Makefile": "obj-$(CONFIG_PP) += pp/\n",
    "arch/m68k/amiga/Makefile": "obj-y += config.o\n",
    "arch/m68k/Makefile": "core-$(CONFIG_AMIGA) += arch/m68k/amiga/\n",
    "arch/mips/Kbuild": "include arch/mips/Kbuild.platforms\nobj-y += kernel/\n",
    "arch/mips/Kbuild.platforms": "platform-$(CONFIG_SGI_IP32) += sgi-ip32/\n",
    "arch/mips/sgi-ip32/Makefile": "obj-y += ip32-setup.o\n",
    "arch/mips/other/Makefile": "obj-y += other.o\n",
}
X86 = "CONFIG_X86_64=y\nCONFIG_64BIT=y\nCONFIG_PP=m\nCONFIG_PCI=y\n"


def make_tree(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    return root


@pytest.fixture
def tree(tmp_path):
    return make_tree(tmp_path / "linux")


def values(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.split())


def test_the_architecture_of_a_file_is_read_from_kconfig(tree):
    index = KconfigArches(tree)
    x86 = values(X86)
    assert candidates(index, "drivers/pp/pp_amiga.c", x86) == ["m68k"]
    # SBUS: x86's is a bare bool nothing selects, sparc's defaults to y
    assert candidates(index, "drivers/pp/pp_sun.c", x86) == ["sparc"]
    # no prompt: wherever its default (GSC, read from arch/parisc only) holds
    assert candidates(index, "drivers/pp/pp_gsc.c", x86) == ["parisc"]
    assert candidates(index, "drivers/pp/pp_ip32.c", x86) == ["mips"]
    assert candidates(index, "drivers/pp/pp_old.c", x86)[:2] == ["i386", "arm"]
    assert candidates(index, "arch/m68k/amiga/config.c", x86) == ["m68k"]
    # arch/arm/xen/ is built by arm64 too (arch/arm64/xen/Makefile)
    assert candidates(index, "arch/arm/xen/enlighten.c", x86) == ["arm", "arm64"]
    assert candidates(index, "arch/arm/kernel/setup.c", x86) == ["arm"]     # look-alike
    assert index.in_choice("SGI_IP32") and not index.in_choice("AMIGA")


def test_an_arch_directory_is_found_through_its_makefiles(tree):
    from classify.kconfig import config_symbols
    # named from the tree's top, and through a file the Kbuild includes
    assert config_symbols(tree, "arch/m68k/amiga/config.c") == ["CONFIG_AMIGA"]
    assert config_symbols(tree, "arch/mips/sgi-ip32/ip32-setup.c") == ["CONFIG_SGI_IP32"]
    # the look-alike: a directory no Makefile names
    assert config_symbols(tree, "arch/mips/other/other.c") == []


def test_a_look_alike_gets_no_architecture(tree):
    index = KconfigArches(tree)
    x86 = values(X86)
    # BROKEN: no architecture builds it
    assert candidates(index, "drivers/pp/pp_gone.c", x86) == []
    # AMIGA_CLONE is defined in drivers/: nothing ties it to an architecture
    assert candidates(index, "drivers/pp/pp_clone.c", x86) == []
    # built on x86_64 already: nothing to look for
    assert candidates(index, "drivers/pp/pp_pc.c", x86) == []


CONFIGS = {
    "x86_64": X86,
    "m68k": "CONFIG_M68K=y\nCONFIG_AMIGA=y\nCONFIG_PP=m\nCONFIG_PP_AMIGA=m\nCONFIG_PP_EITHER=m\n",
    "sparc": "CONFIG_SBUS=y\nCONFIG_PP=m\nCONFIG_PP_SUN=m\nCONFIG_PP_EITHER=m\n",
    "mips": "CONFIG_MIPS_GENERIC=y\nCONFIG_PP=m\n",
    "mips+SGI_IP32": "CONFIG_SGI_IP32=y\nCONFIG_PP=m\nCONFIG_PP_IP32=m\n",
}


@pytest.fixture
def builds(tree, tmp_path, monkeypatch):
    """Builds whose ensure_config writes the .config of CONFIGS (a compiler not
    there: KbuildError, as a missing cross compiler)."""
    calls: list[str] = []

    def ensure_config(tree, build_dir, forced, base, arch):
        choice = [s.removeprefix("CONFIG_") for s in forced if s.startswith("CONFIG_SGI")]
        key = arch.name + "".join(f"+{c}" for c in choice)
        calls.append(key)
        if key not in CONFIGS:
            raise crossbuild.KbuildError(f"{arch.gcc} is not installed")
        build_dir.mkdir(parents=True, exist_ok=True)
        (build_dir / ".config").write_text(CONFIGS[key])
        (build_dir / ".s2m-arch").write_text(arch.name + "\n")
        return SimpleNamespace(seconds=1.0)

    monkeypatch.setattr(crossbuild, "ensure_config", ensure_config)
    b = crossbuild.Builds(tree, tmp_path / "build" / "allmodconfig")
    b.calls = calls
    return b


def test_each_file_is_placed_on_an_architecture_that_builds_it(builds):
    assert builds.place("drivers/pp/pp_pc.c").arch == "x86_64"
    assert builds.calls == ["x86_64"]                   # no cross build needed yet
    amiga = builds.place("drivers/pp/pp_amiga.c")
    assert (amiga.arch, amiga.build_dir.name) == ("m68k", "allmodconfig-m68k")
    assert arch_of(amiga.build_dir) is ARCHES["m68k"]
    # the MIPS system type is a choice allmodconfig does not take: forced
    ip32 = builds.place("drivers/pp/pp_ip32.c")
    assert ip32.arch == "mips+SGI_IP32"
    assert ip32.build_dir.name == "allmodconfig-mips+SGI_IP32"
    # the look-alike: BROKEN is built nowhere, and says so
    gone = builds.place("drivers/pp/pp_gone.c")
    assert gone.build_dir is None and gone.why == "CONFIG_PP_GONE depends on BROKEN"
    # a candidate whose compiler is missing is named, the next one is not tried twice
    gsc = builds.place("drivers/pp/pp_gsc.c")
    assert gsc.build_dir is None and "parisc allmodconfig: hppa-linux-gnu-gcc is not " \
        "installed" in gsc.why
    assert builds.calls.count("m68k") == 1


def test_a_directory_configured_already_is_tried_first(builds):
    assert candidates(builds.index, "drivers/pp/pp_either.c", values(X86)) == ["m68k", "sparc"]
    assert builds.place("drivers/pp/pp_sun.c").arch == "sparc"
    # m68k comes first, but sparc is configured already and builds it too
    assert builds.place("drivers/pp/pp_either.c").arch == "sparc"
    assert "m68k" not in builds.calls


def test_compile_goes_to_each_directory_and_names_the_architecture(builds, monkeypatch):
    made = []

    def compile_files(tree, build_dir, rels, logfile, sparse, check_config):
        made.append((build_dir.name, tuple(rels), logfile.name))
        return {r: Compile(r, "ok", "", [], [], 0.0, arch_of(build_dir).name) for r in rels}

    monkeypatch.setattr(crossbuild, "compile_files", compile_files)
    got = builds.compile(["drivers/pp/pp_pc.c", "drivers/pp/pp_amiga.c",
                          "drivers/pp/pp_gone.c"], Path("/logs/0001-before.log"))
    assert sorted(made) == [("allmodconfig", ("drivers/pp/pp_pc.c",), "0001-before.log"),
                            ("allmodconfig-m68k", ("drivers/pp/pp_amiga.c",),
                             "0001-before-allmodconfig-m68k.log")]
    assert {r: (c.status, c.arch) for r, c in got.items()} == {
        "drivers/pp/pp_pc.c": ("ok", "x86_64"), "drivers/pp/pp_amiga.c": ("ok", "m68k"),
        "drivers/pp/pp_gone.c": ("not built", "x86_64")}
    assert got["drivers/pp/pp_gone.c"].why == \
        "not built here: CONFIG_PP_GONE depends on BROKEN"


def test_the_record_names_the_architecture():
    outcome = Outcome("include/linux/pp.h:x.sem", "converted", series="pp", patch="0001.patch")
    ok = {"status": "ok", "why": "", "errors": [], "sparse": 0}
    rec = stable_record(outcome, {"apply": "ok", "build": {
        "drivers/pp/pp_amiga.c": {"before": ok, "after": ok, "arch": "m68k"},
        "drivers/pp/pp_pc.c": {"before": ok, "after": ok, "arch": "x86_64"}}})
    assert rec["build"] == {"drivers/pp/pp_amiga.c": "ok on m68k", "drivers/pp/pp_pc.c": "ok"}
    assert rec["verify"] == "verified"


def test_build_directories_are_named_per_architecture(tmp_path):
    base = tmp_path / "allmodconfig"
    assert arch_build_dir(base, ARCHES["x86_64"]) == base
    assert arch_build_dir(base, ARCHES["sparc"]).name == "allmodconfig-sparc"
    assert arch_build_dir(base, ARCHES["mips"], "CONFIG_SGI_IP32").name == \
        "allmodconfig-mips+SGI_IP32"
    assert ARCHES["m68k"].make_args() == ["ARCH=m68k", "CROSS_COMPILE=m68k-linux-gnu-",
                                          "CC=ccache m68k-linux-gnu-gcc", "HOSTCC=gcc"]
    assert ARCHES["x86_64"].make_args() == ["ARCH=x86_64", "CC=ccache gcc", "HOSTCC=gcc"]


def test_make_setup_installs_every_cross_compiler():
    from classify.arches import CROSS_PACKAGES
    text = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    line = text.split("CROSS_PACKAGES :=", 1)[1].split("\n\n", 1)[0].split("\n#")[0]
    assert sorted(line.replace("\\", " ").split()) == CROSS_PACKAGES
    assert "$(CROSS_PACKAGES)" in text.split("DEB_PACKAGES :=", 1)[1].split("\n\n")[0]
