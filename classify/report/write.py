"""The three reports of one audit, written together.
"""

from __future__ import annotations

from pathlib import Path

from classify.audit import Audit
from classify.records.patches import PatchesData
from classify.records.runtime import RuntimeRecord
from classify.report.data import write_json
from classify.report.html import write_html
from classify.report.markdown import write_markdown


def write_all(a: Audit, out_dir: Path, patches: PatchesData | None = None,
              runtime: RuntimeRecord | None = None) -> list[Path]:
    """The three reports; patches: the content of patches.json (each semaphore's
    conversion patch and its verification), shown when given."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "audit.json", out_dir / "audit.md", out_dir / "audit.html"]
    write_json(a, paths[0], patches, runtime)
    write_markdown(a, paths[1], patches, runtime)
    write_html(a, paths[2], patches, runtime)
    return paths
