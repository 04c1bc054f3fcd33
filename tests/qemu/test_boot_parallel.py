"""Two boots at a time: the results come back in the scenarios' order, and never more
than PARALLEL_BOOTS run at once."""

import threading
import time

from qemu.boot import PARALLEL_BOOTS, BootResult, in_parallel


def test_boots_run_two_at_a_time_and_keep_their_order():
    running, peak = [0], [0]
    lock = threading.Lock()

    def job(name, seconds):
        def run():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(seconds)
            with lock:
                running[0] -= 1
            return BootResult(name, True, "completed", [])
        return run
    # the first is the slowest: the others finish before it, the order stays
    jobs = [job("a", 0.4), job("b", 0.1), job("c", 0.1), job("d", 0.1)]
    start = time.monotonic()
    results = in_parallel(jobs)
    took = time.monotonic() - start
    assert [r.scenario for r in results] == ["a", "b", "c", "d"]
    assert PARALLEL_BOOTS == 2 and peak[0] == 2
    assert took < 0.4 + 0.1 + 0.1 + 0.1 - 0.05        # not one after the other


def test_one_worker_is_one_after_the_other():
    order = []

    def job(name):
        return lambda: (order.append(name), BootResult(name, True, "completed", []))[1]
    assert [r.scenario for r in in_parallel([job("x"), job("y")], workers=1)] == ["x", "y"]
    assert order == ["x", "y"]
