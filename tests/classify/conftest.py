"""One spatch facts cache for the whole test session: each fixture file is
analysed once, whichever tests use it."""

import pytest


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("sem2mutex-cache")

