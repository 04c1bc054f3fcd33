"""Where things are: the project's folders and the work area, defined once.

Every module takes its paths from here, so that a checkout anywhere works and the
work area (git-ignored) is the only place commands write to, unless their job is to
update committed files (reports/, kernel-patches/).
"""

from __future__ import annotations

import re
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
COCCI_DIR = PROJECT_DIR / "cocci"
SERIES_DIR = PROJECT_DIR / "kernel-patches"
SERIES_FILE = SERIES_DIR / "series"
REPORTS_DIR = PROJECT_DIR / "reports"
QEMU_DIR = PROJECT_DIR / "qemu"

WORK_DIR = PROJECT_DIR / "work"
DEFAULT_KERNEL = WORK_DIR / "linux-6.1"
DEFAULT_CACHE = WORK_DIR / "cache"
PATCHES_DIR = WORK_DIR / "patches"
BUILD_ROOT = WORK_DIR / "build"
TREES_DIR = WORK_DIR / "trees"


def default_out(path: Path, version: str) -> Path:
    """reports/ holds the committed audit of the default tree only; the audit of
    any other tree (or file) goes to the work area, named after it."""
    if path == DEFAULT_KERNEL.resolve():
        return REPORTS_DIR / f"linux-{version}"
    name = version if version.startswith("file-") else f"{path.name}-{version}"
    return WORK_DIR / "reports" / name


def slug(name: str) -> str:
    """name as one file-name-safe word (a subsystem, a variant): runs of other
    characters become '-'; "top" for a name with none left."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "top"
