"""Shared test set-up: the repository root on sys.path, and the `slow` marker for
tests that build or boot kernels (run by `make test`, skipped by `make check`)."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: builds or boots a kernel; `make test` runs it, `make check` not")


# spatch's results kept between test runs (tests/spatchcache.py): every run through
# classify.spatch.run, in every test, reads a kept result of the same run if any.
import dataclasses  # noqa: E402

import pytest  # noqa: E402

import spatchcache  # noqa: E402  (tests/ is on sys.path)


@pytest.fixture(autouse=True, scope="session")
def _kept_spatch_runs():
    from classify import spatch
    real = spatch.run

    def run(args, cwd, timeout, nice=0, env=None):
        def fresh():
            return dataclasses.asdict(real(args, cwd, timeout, nice, env))
        result, _ = spatchcache.cached([*spatch.macro_args(), *args], cwd, timeout,
                                       env or {}, fresh)
        return spatch.SpatchRun(**result)

    spatch.run = run
    yield
    spatch.run = real
