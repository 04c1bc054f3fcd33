"""make bench: figures are median/min/max of the runs, and a failed audit run stops
the bench with its command and error instead of timing a failure."""

import pytest

from qemu.bench.figures import BenchError, summarise
from qemu.bench.parts import time_audit


def test_summary_is_median_min_max():
    assert summarise([4.44, 4.1, 9.0, 4.3, 4.5]) == {
        "median": 4.4, "min": 4.1, "max": 9.0, "runs": [4.4, 4.1, 9.0, 4.3, 4.5]}


def test_a_failed_audit_is_not_timed(tmp_path):
    with pytest.raises(BenchError, match=r"classify audit --kernel .*absent.* failed \(2\)"):
        time_audit(tmp_path / "absent", tmp_path / "cache", fresh=True)


def test_boot_test_part_times_warm_runs_after_one_warm_up(tmp_path, monkeypatch):
    """PARTS=boottest: one warm-up, then `runs` timed runs of `python3 -m qemu boot-test`;
    a failing run stops the bench instead of being timed."""
    import subprocess
    from qemu.bench import parts
    calls = []

    def fake(cmd, **kw):
        calls.append(cmd)
        out = "PASS clean\nboot-test: 17 passed, 0 failed\n"
        return subprocess.CompletedProcess(cmd, 0, out, ""), 40.0 + len(calls), 1.0
    monkeypatch.setattr(parts, "run_timed", fake)
    fig = parts.bench_boot_test(tmp_path, 3, tmp_path / "out")
    assert len(calls) == 4 and calls[0][-4:] == ["--kernel", str(tmp_path), "--out",
                                                 str(tmp_path / "out")]
    assert fig["warm"]["runs"] == [42.0, 43.0, 44.0] and fig["boots"] == 17

    def failing(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 1, "FAIL hang\nboot-test: 16 passed, 1 "
                                           "failed\n", ""), 9.0, 1.0
    monkeypatch.setattr(parts, "run_timed", failing)
    with pytest.raises(BenchError, match="boot-test failed: .*1 failed"):
        parts.bench_boot_test(tmp_path, 3, tmp_path / "out")


def test_verify_rows_name_patches_semaphores_and_the_configuration_time():
    from qemu.bench.figures import verify_rows
    spread = {"median": 100.0, "min": 100.0, "max": 100.0, "runs": 1}
    v = {"local": spread, "distcc": spread, "patches": 29, "semaphores": 30, "objects": 171,
         "local_jobs": "make -j1", "hosts": "127.0.0.1", "distcc_jobs": 363,
         "prepare_seconds": {"local": {**spread, "median": 412.5},
                             "distcc": {**spread, "median": 0.0}}}
    local, through = verify_rows(v)
    assert "(30 semaphores, 29 patches, 171 objects)" in local
    assert local.endswith("; of which configuring build directories: 412.5 |")
    assert "configuring" not in through
    # one semaphore per patch, no configuration: the plain row
    plain = {**v, "semaphores": 29, "prepare_seconds": {}}
    assert "(29 patches, 171 objects)" in verify_rows(plain)[0]
    assert "configuring" not in verify_rows(plain)[0]
    assert verify_rows(None) == []


def test_triage_part_builds_its_log_and_shows_its_figures(tmp_path):
    """PARTS=triage: the large log is a runtime log repeated, its times going on."""
    from qemu.bench.figures import summarise, triage_rows
    from qemu.bench.triagetime import build_log
    src = tmp_path / "src.log"
    src.write_text("[    1.000000] Linux version 6.1.192\n[    2.500000] done\n")
    size = build_log(src, tmp_path / "big.log", 200)
    text = (tmp_path / "big.log").read_text()
    assert size == len(text) >= 200
    assert "[ 1001.000000] Linux version" in text and "[ 2002.500000] done" in text
    rows = triage_rows({"log_mib": 200.0, "peak_mib": 31.0, "seconds": summarise([10.5]),
                        "refused": {"zero": {"seconds": 0.4}, "urandom": {"seconds": 0.4}}})
    assert rows[0].startswith("| make triage, a 200 MiB log (peak 31 MiB resident) | 10.5")
    assert "/dev/zero 0.4" in rows[1] and "CPU" not in rows[0]   # measured before CPU time
    rows = triage_rows({"log_mib": 200.0, "peak_mib": 31.0, "seconds": summarise([20.5]),
                        "cpu_seconds": summarise([9.5]), "refused": {}})
    assert rows[0].endswith("| 20.5 (20.5–20.5); 9.5 (9.5–9.5) s CPU |")
