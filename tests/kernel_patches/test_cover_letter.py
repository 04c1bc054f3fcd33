"""Fast: each series' cover letter is about the patches beside it: its diffstat
names exactly the files the patches change (git format-patch --cover-letter wrote
it; a patch regenerated since, such as the marking, must be reflected)."""

import re

import pytest

from classify.paths import SERIES_ROOT
from classify.versions import series_versions


def changed_files(version: str) -> set[str]:
    series = SERIES_ROOT / version / "series"
    out: set[str] = set()
    for name in series.read_text().split():
        text = (SERIES_ROOT / version / name).read_text()
        out |= set(re.findall(r"^diff --git a/(\S+) b/", text, re.M))
    return out


def diffstat(version: str) -> tuple[list[str], int]:
    """The cover letter's diffstat: its paths (a long one shortened to
    ".../tail") and its "N files changed"."""
    text = (SERIES_ROOT / version / "0000-cover-letter.patch").read_text()
    paths = re.findall(r"^ (\S+)\s+\|\s+\d+ [+-]*$", text, re.M)
    total = re.search(r"^ (\d+) files changed", text, re.M)
    return paths, int(total.group(1))


@pytest.mark.parametrize("version", series_versions())
def test_the_cover_letter_diffstat_is_the_series(version):
    files = changed_files(version)
    paths, total = diffstat(version)
    assert total == len(files) == len(paths)
    for p in paths:
        if p.startswith(".../"):
            assert [f for f in files if f.endswith(p[3:])], p
        else:
            assert p in files, p
