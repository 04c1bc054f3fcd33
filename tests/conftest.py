"""Shared test set-up: the repository root on sys.path, and the `slow` marker for
tests that build or boot kernels (run by `make test`, skipped by `make check`)."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: builds or boots a kernel; `make test` runs it, `make check` not")
