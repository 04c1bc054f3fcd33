"""The README's toolkit figures are the ones reports/bench.json holds.

A figure typed by hand drifts from the measurement it quotes; this reads the
rows of the README's toolkit table and compares them with the committed
benchmark, so that a new `make bench` without a README update fails here.
"""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BENCH = ROOT / "reports" / "bench.json"


def toolkit_rows(text: str) -> dict[str, str]:
    """The first column -> the second, for the table after "What the toolkit costs"."""
    table = text.split("What the toolkit costs", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 2:
            rows[cells[0]] = cells[1]
    return rows


def median_range(summary: dict) -> str:
    return f"{summary['median']} s** ({summary['min']}–{summary['max']})"


def audit_row(summary: dict, cpu: dict) -> str:
    return (f"**{median_range(summary)}; {cpu['median']} s CPU "
            f"({cpu['min']}–{cpu['max']})")


def test_the_audit_rows_quote_the_bench():
    audit = json.loads(BENCH.read_text())["toolkit"]["audit"]
    rows = toolkit_rows(README.read_text())
    assert rows["`make audit`, cold (`FRESH=1`)"] == audit_row(audit["cold"],
                                                              audit["cold_cpu"])
    assert rows["`make audit`, warm"] == audit_row(audit["warm"], audit["warm_cpu"])


def test_the_kernel_rows_quote_the_bench():
    kernel = json.loads(BENCH.read_text())["toolkit"]["kernel"]
    rows = toolkit_rows(README.read_text())
    for kind, label in (("cold", "kernel (tinyconfig + FULL + lockdep) configure / build / "
                                 "boot, cold (no ccache)"),
                        ("warm", "the same, warm (nothing changed)")):
        got = [float(x) for x in re.findall(r"([\d.]+) s", rows[label])]
        want = [kernel[kind][step]["median"] for step in ("configure", "build", "boot")]
        # the README rounds a figure over 100 s to whole seconds
        assert len(got) == 3 and all(abs(g - w) < 0.5 for g, w in zip(got, want)), \
            (kind, got, want)


def test_a_changed_figure_is_caught():
    audit = json.loads(BENCH.read_text())["toolkit"]["audit"]
    bumped = dict(audit["cold"], median=audit["cold"]["median"] + 1)
    row = toolkit_rows(README.read_text())["`make audit`, cold (`FRESH=1`)"]
    assert row != audit_row(bumped, audit["cold_cpu"])


def test_the_boot_test_row_quotes_the_bench():
    boot = json.loads(BENCH.read_text())["toolkit"]["boot_test"]
    row = [line for line in README.read_text().splitlines()
           if line.startswith("| `make boot-test`, warm: the ")]
    assert len(row) == 1
    warm = boot["warm"]
    assert f"median of 5: **{median_range(warm)}, {boot['boots']} passed" in row[0]
