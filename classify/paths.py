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
# kernel-patches/<major.minor>/series: one series per base version
# (classify/versions.py picks the one of a tree)
SERIES_ROOT = PROJECT_DIR / "kernel-patches"
REPORTS_DIR = PROJECT_DIR / "reports"
QEMU_DIR = PROJECT_DIR / "qemu"

WORK_DIR = PROJECT_DIR / "work"
DEFAULT_KERNEL = WORK_DIR / "linux-6.1"
# The trees `make setup` unpacks (Debian's linux-source-<v> packages), by base version;
# TREE=6.12 names one of them.  Their audits are committed under reports/.
SETUP_TREES = {"6.1": DEFAULT_KERNEL, "6.12": WORK_DIR / "linux-6.12"}
DEFAULT_CACHE = WORK_DIR / "cache"
PATCHES_DIR = WORK_DIR / "patches"
BUILD_ROOT = WORK_DIR / "build"
TREES_DIR = WORK_DIR / "trees"


def default_out(path: Path, version: str) -> Path:
    """reports/ holds the committed audits of the trees `make setup` unpacks
    (SETUP_TREES); the audit of any other tree (or file) goes to the work area,
    named after it."""
    if path in {p.resolve() for p in SETUP_TREES.values()}:
        return REPORTS_DIR / f"linux-{version}"
    name = version if version.startswith("file-") else f"{path.name}-{version}"
    return WORK_DIR / "reports" / name


def slug(name: str) -> str:
    """name as one file-name-safe word (a subsystem, a variant): runs of other
    characters become '-'; "top" for a name with none left."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "top"
