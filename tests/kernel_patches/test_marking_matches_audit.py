"""Fast: each series' marking (0004) is about the counting pool of the committed
audit of its version, every one of them marked (named with its declaration) or
named as not marked, and nothing else.  The byte-for-byte regeneration, which
runs spatch on the whole pool, is in test_series.py (slow)."""

import json
import re

import pytest

from classify.convert.marking import MARKING_NAME
from classify.paths import PROJECT_DIR, SERIES_ROOT
from classify.versions import series_versions


def committed_audit(version: str) -> dict:
    found = sorted((PROJECT_DIR / "reports").glob(f"linux-{version}.*/audit.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def marking_figures(version: str) -> tuple[str, int, int]:
    """0004's message (on one line), how many it marks and how many it names as
    not marked."""
    text = (SERIES_ROOT / version / MARKING_NAME).read_text()
    message = " ".join(text.split("\n---\n", 1)[0].split())
    marked = re.search(r"the (\d+) semaphores it classes as counting", message)
    unmarked = message.split("Not marked here, though classed counting:")[1:]
    n_unmarked = unmarked[0].count(" - ") + unmarked[0].startswith("- ") if unmarked else 0
    return message, int(marked.group(1)), n_unmarked


@pytest.mark.parametrize("version", series_versions())
def test_marking_names_exactly_the_counting_pool(version):
    audit = committed_audit(version)
    message, marked, unmarked = marking_figures(version)
    assert f"audit of Linux {audit['kernel_version']}:" in message
    # declared or allocated at run time (classify.allocated)
    records = audit["semaphores"] + audit.get("allocated", [])
    counting = [s for s in records if s["class"] == "counting"]
    for s in counting:
        d = s["declared"]
        named_marked = f"({d['path']}:{d['line']})" in message
        named = f"- {s['id']}:" in message
        assert named_marked or named, s["id"]
    assert marked + unmarked == len(counting)
    unknown = sum(1 for s in audit["semaphores"] if s["class"] == "unknown")
    allocated = sum(1 for s in audit.get("allocated", []) if s["class"] == "unknown")
    also = f" (and {allocated} allocated at run time)" if allocated else ""
    assert f"The {unknown} semaphores the audit could not class{also} are" in message


@pytest.mark.parametrize("version", series_versions())
def test_the_cover_letter_gives_the_marking_s_figures(version):
    _, marked, unmarked = marking_figures(version)
    cover = " ".join((SERIES_ROOT / version / "0000-cover-letter.patch").read_text().split())
    assert f"{marked} of the {marked + unmarked} semaphores it classes as counting" in cover
