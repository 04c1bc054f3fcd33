"""The audit's reports: audit.json (``data``), audit.md (``markdown``) and audit.html
(``html``), written together by ``write_all``; the runtime records in words
(``runtime``), and the runtime table of the docs (``readme``)."""

from classify.report.data import load_patches, load_runtime, to_json
from classify.report.html import to_html
from classify.report.markdown import to_markdown
from classify.report.write import write_all

__all__ = ["load_patches", "load_runtime", "to_html", "to_json", "to_markdown", "write_all"]
