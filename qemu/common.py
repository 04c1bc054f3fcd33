"""Small shared pieces: paths, timing, deterministic JSON."""

from __future__ import annotations

import dataclasses
import enum
import json
import time
from pathlib import Path
from typing import Any

from classify.paths import DEFAULT_KERNEL, PROJECT_DIR, QEMU_DIR, WORK_DIR

CONFIGS_DIR = QEMU_DIR / "configs"
SCENARIOS_DIR = QEMU_DIR / "scenarios"
INITRAMFS_SRC = QEMU_DIR / "initramfs"
__all__ = ["DEFAULT_KERNEL", "PROJECT_DIR", "WORK_DIR", "CONFIGS_DIR",
           "SCENARIOS_DIR", "INITRAMFS_SRC", "Timer", "dumps", "to_jsonable"]


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
