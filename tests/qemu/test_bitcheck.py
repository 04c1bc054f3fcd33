"""bitcheck.verdict: identical only when size, raw bytes and disassembly all agree,
and a failed build is never read as 'identical'."""

from pathlib import Path

from qemu.bitcheck import TextFigures, verdict


def figures(size=4194560, raw="a" * 64, disasm="b" * 64, problems=()):
    return TextFigures("x", Path("vmlinux"), size, raw, disasm, 1.0, list(problems))


def test_identical_text_passes():
    ok, lines = verdict([figures(), figures()])
    assert ok
    assert lines[-1] == "bitcheck: identical .text"


def test_each_measure_that_differs_is_named():
    ok, lines = verdict([figures(), figures(size=4194576, raw="c" * 64)])
    assert not ok
    assert lines[-1] == "bitcheck: DIFFERENT .text: size, raw bytes"
    ok, lines = verdict([figures(), figures(disasm="d" * 64)])
    assert not ok
    assert lines[-1] == "bitcheck: DIFFERENT .text: disassembly"


def test_a_failed_build_is_reported_not_compared():
    broken = TextFigures("with series", None, problems=["with series: build failed (log):",
                                                        "mm/x.c:1: error: boom"])
    ok, lines = verdict([figures(), broken])
    assert not ok
    assert lines == ["with series: build failed (log):", "mm/x.c:1: error: boom"]
