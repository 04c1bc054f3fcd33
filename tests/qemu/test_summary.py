"""The boot-test summary: configure and build are counted once per kernel image,
boots and parses once per scenario; a boot that never ran adds nothing."""

from qemu.boot import BootResult, stage_times, summary

FULL = ("base", "mode-full")


def result(name, fragments=FULL, run=2.0, passed=True, **stages):
    seconds = {"config": 1.0, "build": 300.0, **stages}
    if run is not None:
        seconds.update(run=run, parse=0.002)
    return BootResult(name, passed, "completed", [], None, [], run or 0.0, fragments, seconds)


def test_kernel_stages_count_once_per_image():
    line = stage_times([result("a", run=2.0), result("b", run=40.0), result("c", run=3.0),
                        result("d", fragments=("base",), build=10.0, run=None)])
    assert line == ("boot-test: stages: configure 2.0 s, build 310.0 s (2 kernel(s)), "
                    "boot 45.0 s for 3 boots (median 3.0 s), parse 6 ms")


def test_summary_counts_failures():
    text = summary([result("a"), result("b", passed=False)])
    assert text.splitlines()[-1] == "boot-test: 1 passed, 1 failed"
    assert "FAIL b (completed" in text
