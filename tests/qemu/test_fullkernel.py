"""make full-kernel: the merge of a tester's .config with the FULL + lockdep request,
and the check of what survived olddefconfig, on fixtures (tests/qemu/fullkernel/):
the real merge_config.sh output and .config of an x86_64 defconfig run, and an excerpt
of 6.1's lib/Kconfig.debug for the reasons an option is dropped."""

from pathlib import Path

import pytest

from classify.kbuild import kconfig_depends, parse_config_text, sourced_if
from qemu import fullcli, fullkernel, userconfig
from qemu.config import load_fragment, merge_fragments

FIX = Path(__file__).parent / "fullkernel"
TREE = FIX / "tree"


def requested() -> dict[str, str]:
    return merge_fragments([load_fragment(f) for f in fullkernel.FRAGMENTS])


def lookups():
    return (lambda s: kconfig_depends(TREE, s, near="lib/Kconfig.debug"),
            lambda f: sourced_if(TREE, f))


def real_values() -> dict[str, str]:
    return parse_config_text((FIX / "x86_64-defconfig-olddefconfig.config").read_text())


def test_merge_changes_reads_merge_config_output():
    changes = userconfig.merge_changes((FIX / "merge_config-x86_64-defconfig.out").read_text())
    assert [c.symbol for c in changes] == [
        "CONFIG_DEBUG_MUTEXES", "CONFIG_DEBUG_LOCK_ALLOC", "CONFIG_PROVE_LOCKING",
        "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DETECT_HUNG_TASK"]
    assert all(c.before == "n" and c.after == "y" for c in changes)
    assert {c.fragment for c in changes} == {"full-lockdep.config"}


def test_merge_changes_ignores_the_other_lines():
    assert userconfig.merge_changes("Using x as base\nMerging y\nValue of CONFIG_A is "
                                    "redundant by fragment y:\nPrevious value: CONFIG_A=y\n"
                                    "New value: CONFIG_A=y\n") == []


def test_every_requested_option_survives_the_x86_64_defconfig():
    check = userconfig.check_options(requested(), real_values(), [], *lookups())
    assert check.ok and not check.dropped
    assert "CONFIG_DEBUG_MUTEX_FULL" in check.survived
    assert len(check.survived) == check.requested == len(requested())


def test_an_unmet_depends_on_is_named():
    values = dict(real_values(), CONFIG_ARCH_NO_PREEMPT="y", CONFIG_DEBUG_ATOMIC_SLEEP="n")
    check = userconfig.check_options(requested(), values, [], *lookups())
    assert [d.symbol for d in check.dropped] == ["CONFIG_DEBUG_ATOMIC_SLEEP"]
    drop = check.dropped[0]
    assert drop.reason == "depends on !ARCH_NO_PREEMPT (lib/Kconfig.debug)"
    assert drop.line() == ("CONFIG_DEBUG_ATOMIC_SLEEP=y did not survive (not set): "
                           "depends on !ARCH_NO_PREEMPT (lib/Kconfig.debug)")


def test_a_plain_chain_names_the_unset_symbol():
    values = dict(real_values(), CONFIG_DEBUG_KERNEL="n", CONFIG_DEBUG_LOCKDEP="n")
    reason = userconfig.why_dropped("CONFIG_DEBUG_LOCKDEP", values, *lookups())
    assert reason == "depends on DEBUG_KERNEL (lib/Kconfig.debug)"


def test_a_symbol_no_kconfig_defines():
    values = dict(real_values(), CONFIG_DEBUG_MUTEX_FULL="n")
    check = userconfig.check_options(requested(), values, [], *lookups())
    assert [d.symbol for d in check.dropped] == ["CONFIG_DEBUG_MUTEX_FULL"]
    assert check.dropped[0].reason.startswith("no Kconfig entry defines it")


def test_met_dependencies_point_at_the_entry():
    values = dict(real_values(), CONFIG_DEBUG_MUTEXES="n")
    reason = userconfig.why_dropped("CONFIG_DEBUG_MUTEXES", values, *lookups())
    assert reason.startswith("its dependencies are met") and "lib/Kconfig.debug" in reason


def test_check_lines_say_what_changed_and_what_dropped():
    changes = userconfig.merge_changes((FIX / "merge_config-x86_64-defconfig.out").read_text())
    values = dict(real_values(), CONFIG_ARCH_NO_PREEMPT="y", CONFIG_DEBUG_ATOMIC_SLEEP="n")
    lines = userconfig.check_lines(userconfig.check_options(requested(), values, changes,
                                                            *lookups()))
    assert ("changed from your config: # CONFIG_PROVE_LOCKING is not set -> "
            "CONFIG_PROVE_LOCKING=y (full-lockdep.config)") in lines
    assert lines[-1] == (f"{len(requested()) - 1} of {len(requested())} requested options "
                         "are in .config; 1 did not survive")


def test_arch_comes_from_the_config_and_a_mismatch_is_refused():
    x86 = {"CONFIG_X86_64": "y", "CONFIG_64BIT": "y"}
    assert userconfig.choose_arch(x86, "", "x.config") == "x86_64"
    assert userconfig.choose_arch({"CONFIG_ARM64": "y"}, "arm64", "a.config") == "arm64"
    with pytest.raises(userconfig.UserConfigError, match="give ARCH=x86_64"):
        userconfig.choose_arch(x86, "arm64", "x.config")
    with pytest.raises(userconfig.UserConfigError, match="give ARCH="):
        userconfig.choose_arch({"CONFIG_PRINTK": "y"}, "", "n.config")


def test_not_a_config_is_refused():
    with pytest.raises(userconfig.UserConfigError, match="not a kernel .config"):
        userconfig.read_user_config("hello\n# CONFIG_A is not set\n", "notes.txt")
    assert userconfig.read_user_config("CONFIG_A=y\n", "ok")["CONFIG_A"] == "y"


def test_full_kernel_refuses_bad_input_before_any_work(tmp_path):
    missing = fullkernel.full_kernel(fullkernel.FullKernelRequest(
        tmp_path / "nope", tmp_path))
    assert missing.status is fullkernel.FullStatus.REFUSED
    assert missing.errors == [f"{tmp_path / 'nope'}: no such file"]
    cfg = tmp_path / "arm64.config"
    cfg.write_text("CONFIG_ARM64=y\n")
    wrong = fullkernel.full_kernel(fullkernel.FullKernelRequest(cfg, tmp_path, "x86_64"))
    assert wrong.status is fullkernel.FullStatus.REFUSED
    assert "made for arm64" in wrong.errors[0]
    assert fullcli.result_lines(wrong)[0].startswith("full-kernel: error: ")


def test_build_dir_is_per_arch_and_tree(tmp_path):
    from classify.paths import DEFAULT_KERNEL
    assert fullkernel.full_build_dir("x86_64", DEFAULT_KERNEL).name == "full-x86_64"
    other = fullkernel.full_build_dir("arm64", tmp_path)
    assert other.name.startswith("full-arm64-") and len(other.name) == len("full-arm64-") + 8


def test_request_hash_follows_the_config(tmp_path):
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_A=y\n")
    one = fullkernel.request_hash("CONFIG_X86_64=y\n", [frag], "abc", "x86_64")
    assert one == fullkernel.request_hash("CONFIG_X86_64=y\n", [frag], "abc", "x86_64")
    assert one != fullkernel.request_hash("CONFIG_X86_64=y\nCONFIG_B=y\n", [frag], "abc",
                                          "x86_64")
    assert one != fullkernel.request_hash("CONFIG_X86_64=y\n", [frag], "abd", "x86_64")


def test_result_lines_of_a_built_kernel_say_how_to_boot(tmp_path):
    res = fullkernel.FullKernelResult(fullkernel.FullStatus.BUILT, "arm64", tmp_path,
                                      tmp_path / "tree", tmp_path / "arch/arm64/boot/Image",
                                      userconfig.Check(11, survived=["CONFIG_A"] * 11),
                                      seconds={"build": 12.0})
    text = "\n".join(fullcli.result_lines(res))
    assert f"image: {tmp_path}/arch/arm64/boot/Image" in text
    assert "python3 -m qemu run --arch arm64 --image" in text
    assert "make triage LOG=" in text
    assert text.endswith("full-kernel: built (build 12.0 s)")
