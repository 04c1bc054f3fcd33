"""make bench: figures are median/min/max of the runs, and a failed audit run stops
the bench with its command and error instead of timing a failure."""

import pytest

from qemu.bench.figures import BenchError, summarise
from qemu.bench.parts import time_audit


def test_summary_is_median_min_max():
    assert summarise([4.44, 4.1, 9.0, 4.3, 4.5]) == {
        "median": 4.4, "min": 4.1, "max": 9.0, "runs": [4.4, 4.1, 9.0, 4.3, 4.5]}


def test_a_failed_audit_is_not_timed(tmp_path):
    with pytest.raises(BenchError, match=r"classify audit --kernel .*absent.* failed \(1\)"):
        time_audit(tmp_path / "absent", tmp_path / "cache", fresh=True)
