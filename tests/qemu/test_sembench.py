"""sem_bench's console lines (kernel-patches/0007), parsed from a real boot log."""

from pathlib import Path

import pytest

from qemu.ktap import parse_ktap
from qemu.parse import clean_lines
from qemu.sembench import Measurement, SemBenchError, parse_sem_bench, spread, summarise

LOGS = Path(__file__).parent / "logs"
BENCH_LOG = LOGS / "sem-bench.log"
CLEAN_LOG = LOGS / "none-clean-boot.log"

TYPES = {"arch_semaphore", "mutex", "mutex_debug"}


@pytest.fixture(scope="module")
def bench():
    return parse_sem_bench(BENCH_LOG.read_text())


def test_sizes_from_a_real_boot(bench):
    assert set(bench.sizes) == {"semaphore", "arch_semaphore", "mutex", "mutex_debug",
                                "completion"}
    # DEBUG_MUTEX_NONE: struct semaphore is struct arch_semaphore, mutex_debug a mutex
    assert bench.sizes["semaphore"] == bench.sizes["arch_semaphore"]
    assert bench.sizes["mutex_debug"] == bench.sizes["mutex"]


def test_config_line_says_no_lock_debugging(bench):
    assert bench.config["smp"] == "1"
    assert bench.config["prove_locking"] == "0" and bench.config["debug_mutexes"] == "0"
    # QEMU -smp 2: both vCPUs online (bench-base turns ACPI on for that)
    assert bench.config["cpus"] == "2"
    assert {m.cpus for m in bench.measurements} == {2}


def test_every_lock_type_and_thread_count_is_measured(bench):
    lock = [m for m in bench.measurements if m.test == "lock"]
    assert {m.type for m in lock} == TYPES
    assert {m.threads for m in lock} == {1, 2, 4, 8}
    runs = {m.run for m in lock}
    assert runs == {1, 2, 3, 4, 5}
    assert len(lock) == len(TYPES) * 4 * len(runs)
    handoff = [m for m in bench.measurements if m.test == "handoff"]
    assert {m.type for m in handoff} == {"semaphore", "completion"}
    assert {m.threads for m in handoff} == {2, 4, 8}
    assert all(m.ops > 0 and m.us > 0 and m.cpu_ns > 0 for m in bench.measurements)


def test_the_log_is_also_a_ktap_document_named_sem_bench():
    docs = parse_ktap(clean_lines(BENCH_LOG.read_text()))
    leaves = dict(leaf for d in docs for leaf in d.leaves())
    assert leaves["sem_bench/sizes"] == "ok"
    assert leaves["sem_bench/lock"] == "ok"
    assert leaves["sem_bench/handoff"] == "ok"
    assert leaves["s2m-init/boot"] == "ok"


def test_summary_rows_are_median_min_max_per_type_and_threads(bench):
    rows = summarise(bench.measurements)
    assert len(rows) == 3 * 4 + 2 * 3
    for r in rows:
        f = r["ops_per_s"]
        assert f["min"] <= f["median"] <= f["max"] and f["n"] == len(f["runs"])
        assert 0 < r["cpu_percent"]["median"] <= 100.5


def test_a_boot_without_sem_bench_has_no_figures():
    out = parse_sem_bench(CLEAN_LOG.read_text())
    assert out.sizes == {} and out.measurements == [] and out.config == {}


@pytest.mark.parametrize("line", [
    "# sem_bench lock type=mutex threads=4 run=1 us=1000000 ops=10 cpus=2",
    "# sem_bench lock type=mutex threads=four run=1 us=1000000 ops=10 cpu_ns=5 cpus=2",
    "# sem_bench size type=mutex",
])
def test_a_broken_sem_bench_line_is_an_error(line):
    with pytest.raises(SemBenchError):
        parse_sem_bench(f"[    1.000000] {line}\n")


@pytest.mark.parametrize("line", [
    "sem_bench lock type=mutex threads=4 run=1 us=1 ops=1 cpu_ns=1 cpus=2",   # no '#'
    "# sem_bench: cannot start a kthread: -12",
    "# sem_bench lockx type=mutex",
    "# Subtest: sem_bench",
])
def test_lines_that_are_not_figures_are_ignored(line):
    out = parse_sem_bench(line + "\n")
    assert out.measurements == [] and out.sizes == {}


def test_rates_from_one_measurement():
    m = Measurement("lock", "mutex", 4, 1, us=2_000_000, ops=1000, cpu_ns=2_000_000_000,
                    cpus=2)
    assert m.ops_per_s == 500.0
    assert m.cpu_percent == 50.0
    assert Measurement("lock", "mutex", 1, 1, 0, 0, 0, 0).ops_per_s == 0.0


def test_spread():
    assert spread([3.0, 1.0, 2.0, 10.0, 4.0]) == {
        "median": 3.0, "min": 1.0, "max": 10.0, "n": 5, "runs": [3.0, 1.0, 2.0, 10.0, 4.0]}
    with pytest.raises(ValueError):
        spread([])
