"""The committed boots of `make full-kernel CONFIG=<a defconfig> BOOT=1`
(reports/linux-<version>/full-kernel/<arch>-defconfig.log) are what docs/figures.md
says of them: a DEBUG_MUTEX_FULL kernel that ran /init to its end with no lockdep or
mutex-debug report, lockdep still on, in the time docs/figures.md quotes."""

import re
from pathlib import Path

import pytest

from qemu import parse

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted(ROOT.glob("reports/linux-*/full-kernel/*-defconfig.log"))
FIGURES = (ROOT / "docs" / "figures.md").read_text()


def quoted(text: str) -> bool:
    """docs/figures.md gives the time the log's harness line says QEMU ran."""
    m = re.search(r"^s2m-harness: qemu exited with status 0 after ([\d.]+) s$", text, re.M)
    assert m, "the harness line is missing"
    return f"exited after {m.group(1)} s" in FIGURES


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_the_defconfig_kernel_booted_clean(log):
    text = log.read_text(errors="replace")
    assert "s2m.scenario=full-kernel" in text and "s2m-init: done" in text
    parsed = parse.parse_log(text)
    assert parsed.verdict == "completed" and not parsed.reports
    assert re.search(r"# lockdep_stats:\s+debug_locks:\s+1$", text, re.M)


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_the_figures_quote_the_boot(log):
    arch = log.stem.split("-")[0]
    assert f"{arch}-defconfig.log" in FIGURES
    assert quoted(log.read_text(errors="replace"))


def test_an_edited_log_is_caught(tmp_path):
    """Negative control: a report in the log, or another time, fails the checks."""
    text = LOGS[0].read_text(errors="replace")
    splat = ("[    5.000000] WARNING: possible recursive locking detected\n"
             "[    5.000000] 6.1.192 #1 Not tainted\n")
    assert parse.parse_log(text.replace("s2m-init: done", splat + "s2m-init: done")).reports
    assert quoted(text)
    assert not quoted(re.sub(r"(exited with status 0 after )[\d.]+", r"\g<1>99.9", text))
