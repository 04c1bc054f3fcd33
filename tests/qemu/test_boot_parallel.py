"""Two boots at a time: the results come back in the scenarios' order, and never more
than PARALLEL_BOOTS run at once."""

import threading
import time

import pytest

from qemu.boot import PARALLEL_BOOTS, BootResult, in_parallel


def test_boots_run_two_at_a_time_and_keep_their_order():
    running, peak = [0], [0]
    lock = threading.Lock()

    def job(name, seconds):
        def run():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(seconds)
            with lock:
                running[0] -= 1
            return BootResult(name, True, "completed", [])
        return run
    # the first is the slowest: the others finish before it, the order stays
    jobs = [job("a", 0.4), job("b", 0.1), job("c", 0.1), job("d", 0.1)]
    start = time.monotonic()
    results = in_parallel(jobs)
    took = time.monotonic() - start
    assert [r.scenario for r in results] == ["a", "b", "c", "d"]
    assert PARALLEL_BOOTS == 2 and peak[0] == 2
    assert took < 0.4 + 0.1 + 0.1 + 0.1 - 0.05        # not one after the other


def test_one_worker_is_one_after_the_other():
    order = []

    def job(name):
        return lambda: (order.append(name), BootResult(name, True, "completed", []))[1]
    assert [r.scenario for r in in_parallel([job("x"), job("y")], workers=1)] == ["x", "y"]
    assert order == ["x", "y"]


def test_boot_test_builds_every_kernel_before_the_first_boot(monkeypatch, tmp_path):
    """Two fragment sets: both kernels are built (each once) before any boot, and the
    boots come back in the scenarios' order."""
    from types import SimpleNamespace
    from qemu import boot
    from qemu.scenarios import Scenario
    events = []
    monkeypatch.setattr(boot, "prepare_source", lambda k: SimpleNamespace(series=["x"]))
    monkeypatch.setattr(boot, "make_initramfs", lambda req: SimpleNamespace(image=None))

    def fake_build(source, fragments, arch):
        events.append(("build", fragments))
        return boot.Kernel(fragments, None, None)
    monkeypatch.setattr(boot, "build_kernel", fake_build)

    def fake_boot(sc, kernel, initramfs, source, accel, out_dir, arch):
        events.append(("boot", sc.name))
        return BootResult(sc.name, True, "completed", [])
    monkeypatch.setattr(boot, "boot_scenario", fake_boot)
    full, partial = ("base", "mode-full"), ("base", "mode-partial")
    scs = [Scenario("a", "", full), Scenario("p", "", partial), Scenario("b", "", full)]
    results = boot.boot_test(scs, tmp_path, out_dir=tmp_path)
    assert [r.scenario for r in results] == ["a", "p", "b"]
    assert events[:2] == [("build", full), ("build", partial)]
    assert sorted(e[1] for e in events[2:]) == ["a", "b", "p"]


def test_boot_test_arm64_builds_and_boots_for_arm64_under_tcg(monkeypatch, tmp_path):
    """ARCH=arm64 reaches every build and boot; kvm (x86_64 hosts only) becomes tcg
    without a probe boot."""
    from types import SimpleNamespace
    from qemu import boot
    from qemu.scenarios import Scenario
    seen = []
    monkeypatch.setattr(boot, "prepare_source", lambda k: SimpleNamespace(series=["x"]))
    monkeypatch.setattr(boot, "make_initramfs", lambda req: SimpleNamespace(image=None))
    monkeypatch.setattr(boot, "kvm_or_tcg", lambda *a: pytest.fail("probed kvm for arm64"))
    monkeypatch.setattr(boot, "build_kernel", lambda source, fragments, arch: (
        seen.append(("build", arch)), boot.Kernel(fragments, None, None))[1])

    def fake_boot(sc, kernel, initramfs, source, accel, out_dir, arch):
        seen.append(("boot", arch, accel))
        return BootResult(sc.name, True, "completed", [])
    monkeypatch.setattr(boot, "boot_scenario", fake_boot)
    boot.boot_test([Scenario("a", "", ("base",))], tmp_path, "kvm", tmp_path, arch="arm64")
    assert seen == [("build", "arm64"), ("boot", "arm64", "tcg")]


def test_the_longest_boots_start_first_and_come_back_in_order(monkeypatch, tmp_path):
    """The selftest boot (the longest timeout) starts first, so that the short boots
    fill the other worker meanwhile; the results keep the scenarios' order."""
    from types import SimpleNamespace
    from qemu import boot
    from qemu.scenarios import Scenario
    started = []
    monkeypatch.setattr(boot, "prepare_source", lambda k: SimpleNamespace(series=["x"]))
    monkeypatch.setattr(boot, "make_initramfs", lambda req: SimpleNamespace(image=None))
    monkeypatch.setattr(boot, "build_kernel", lambda source, fragments, arch: boot.Kernel(
        fragments, None, None))

    def fake_boot(sc, kernel, initramfs, source, accel, out_dir, arch):
        started.append(sc.name)
        return BootResult(sc.name, True, "completed", [])
    monkeypatch.setattr(boot, "boot_scenario", fake_boot)
    scs = [Scenario("clean", "", ("b",), timeout=180), Scenario("hang", "", ("b",), timeout=40),
           Scenario("selftest", "", ("b",), timeout=300)]
    results = boot.boot_test(scs, tmp_path, out_dir=tmp_path, workers=1)
    assert started == ["selftest", "clean", "hang"]
    assert [r.scenario for r in results] == ["clean", "hang", "selftest"]


def test_the_locking_test_records_stay_in_the_work_area_unless_recorded(monkeypatch, tmp_path):
    """make boot-test writes its locking-test records under its OUT (work/), not over
    the committed ones; RECORD=1 (record=True) writes them beside the tree's audit."""
    from types import SimpleNamespace
    from qemu import boot, control
    from qemu.scenarios import Scenario
    monkeypatch.setattr(boot, "prepare_source", lambda k: SimpleNamespace(series=["x"],
                                                                         kernel=k))
    monkeypatch.setattr(boot, "make_initramfs", lambda req: SimpleNamespace(image=None))
    monkeypatch.setattr(boot, "build_kernel", lambda source, fragments, arch: boot.Kernel(
        fragments, None, None))
    monkeypatch.setattr(boot, "kernel_version", lambda k: "6.1.192")
    monkeypatch.setattr(control, "load_control", lambda *a: None)
    monkeypatch.setattr(control, "evaluator", lambda c: None)
    monkeypatch.setattr(control, "selftest_dir", lambda k, v: tmp_path / "reports" / v)
    monkeypatch.setattr(boot, "boot_scenario", lambda sc, *a, **kw: BootResult(
        sc.name, True, "completed", []))
    dests = []
    monkeypatch.setattr(boot, "write_control_records",
                        lambda scs, results, out_dir, dest, *a: dests.append(dest))
    scs = [Scenario("selftest", "", ("b",), control=True)]
    boot.boot_test(scs, tmp_path, out_dir=tmp_path / "out")
    boot.boot_test(scs, tmp_path, out_dir=tmp_path / "out", record=True)
    assert dests == [tmp_path / "out" / "selftest", tmp_path / "reports" / "6.1.192"]
