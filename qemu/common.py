"""Small shared pieces: paths, timing, deterministic JSON."""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import time
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_DIR = PACKAGE_DIR.parent
WORK_DIR = PROJECT_DIR / "work"
DEFAULT_KERNEL = WORK_DIR / "linux-6.1"
CONFIGS_DIR = PACKAGE_DIR / "configs"
SCENARIOS_DIR = PACKAGE_DIR / "scenarios"
INITRAMFS_SRC = PACKAGE_DIR / "initramfs"
SERIES_FILE = PROJECT_DIR / "kernel-patches" / "series"


def jobs() -> int:
    """make -j: cores + 1."""
    return (os.cpu_count() or 1) + 1


class Timer:
    """`with Timer() as t: ...; t.elapsed` in seconds (monotonic)."""

    def __enter__(self) -> "Timer":
        self.start = time.monotonic()
        self.elapsed = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = round(time.monotonic() - self.start, 3)

    def now(self) -> float:
        return round(time.monotonic() - self.start, 3)


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """Sorted, stable JSON (two-space indent, trailing newline)."""
    return json.dumps(to_jsonable(obj), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
