"""make bench's pure parts: ratios, the seed's claims, the table and the JSON shape."""

import json

from qemu.bench.figures import (check_shape, contention_panels, markdown, ratio,
                                seed_claims, summarise, toolkit_ratios)


def spread(median, lo=None, hi=None):
    lo = median if lo is None else lo
    hi = median if hi is None else hi
    return {"median": median, "min": lo, "max": hi, "n": 5, "runs": [lo, median, hi]}


def rows(sem_ops, mtx_ops, sem_cpu, mtx_cpu, threads=8):
    return [{"test": "lock", "type": "arch_semaphore", "threads": threads,
             "ops_per_s": spread(sem_ops), "cpu_percent": spread(sem_cpu)},
            {"test": "lock", "type": "mutex", "threads": threads,
             "ops_per_s": spread(mtx_ops), "cpu_percent": spread(mtx_cpu)},
            {"test": "lock", "type": "mutex", "threads": 1,
             "ops_per_s": spread(1.0), "cpu_percent": spread(50.0)}]


SIZES_61 = {"semaphore": 24, "arch_semaphore": 24, "mutex": 32, "mutex_debug": 32,
            "completion": 32}


def verdicts(claims):
    return {c["claim"]: c["verdict"] for c in claims}


def test_ratio():
    assert ratio(10, 4) == 2.5
    assert ratio(1, 0) is None


def test_claims_hold_when_the_6_1_figures_reach_the_seeds():
    v = verdicts(seed_claims({"semaphore": 20, "mutex": 16, "mutex_debug": 16},
                             rows(100, 300, 90, 30)))
    assert v["struct mutex is smaller than struct semaphore"] == "holds"
    assert v["under contention a mutex has more throughput than a semaphore"] == "holds"
    assert v["under contention a mutex uses less CPU than a semaphore"] == "holds"
    assert v["a mutex does more operations per unit of CPU time"] == "holds"
    assert v["struct mutex_debug is a plain struct mutex when lock debugging is off"] \
        == "holds"


def test_claims_do_not_hold_when_the_figures_go_the_other_way():
    v = verdicts(seed_claims(SIZES_61 | {"mutex_debug": 40}, rows(300, 100, 30, 90)))
    assert v["struct mutex is smaller than struct semaphore"] == "does not hold"
    assert v["under contention a mutex has more throughput than a semaphore"] \
        == "does not hold"
    assert v["under contention a mutex uses less CPU than a semaphore"] == "does not hold"
    cpu = next(c for c in seed_claims(SIZES_61, rows(300, 100, 30, 90))
               if "less CPU" in c["claim"])
    assert cpu["measured"].startswith("3.0x more CPU")
    assert v["struct mutex_debug is a plain struct mutex when lock debugging is off"] \
        == "does not hold"


def test_a_smaller_gain_than_the_seeds_is_partly():
    v = verdicts(seed_claims(SIZES_61, rows(100, 150, 60, 50)))
    assert v["under contention a mutex has more throughput than a semaphore"] == "partly"


def test_claims_compare_at_the_highest_thread_count():
    claims = seed_claims(SIZES_61, rows(100, 300, 90, 30, threads=8))
    assert "8 kthreads" in claims[1]["measured"]


def test_claims_without_figures_are_not_measured_and_code_size_is_skipped():
    v = verdicts(seed_claims({}, []))
    assert set(v.values()) == {"not measured"}
    assert "converting the mutex-like semaphores saves .text" in v


def test_toolkit_ratios():
    audit = {"cold": summarise([30, 32, 34]), "warm": summarise([4, 4, 5])}
    assert toolkit_ratios(audit, summarise([640])) == {
        "spatch_over_audit_cold": 20.0, "spatch_over_audit_warm": 160.0}
    assert toolkit_ratios(None, summarise([640])) == {}


def test_toolkit_ratios_in_cpu_time_when_both_have_it():
    audit = {"cold": summarise([30]), "warm": summarise([4]),
             "cold_cpu": summarise([50]), "warm_cpu": summarise([2])}
    spatch = {**summarise([640]), "cpu": summarise([1200])}
    r = toolkit_ratios(audit, spatch)
    assert r["spatch_over_audit_cold_cpu"] == 24.0
    assert r["spatch_over_audit_warm_cpu"] == 600.0
    # figures from before CPU time was measured: wall-time ratios only
    assert "spatch_over_audit_cold_cpu" not in toolkit_ratios(audit, summarise([640]))
    assert "spatch_over_audit_cold_cpu" not in toolkit_ratios(
        {"cold": summarise([30]), "warm": summarise([4])}, spatch)


def test_panels_group_rows_by_test_and_type():
    panels = contention_panels(rows(100, 300, 90, 30))
    assert [p.title.split(",")[0] for p in panels] == ["lock/unlock"]
    assert sorted(panels[0].series) == ["arch_semaphore", "mutex"]
    assert [pt.x for pt in panels[0].series["mutex"]] == [8, 1]


def result():
    return {"schema": 1, "date": "2026-12-03 07:00 UTC", "parts": ["boots"],
            "machine": {"summary": "2 × test CPU"}, "note": "machine loaded",
            "sizes": {"nodebug": SIZES_61, "debug": {"mutex": 64}},
            "contention": {"vcpus": 2, "ms": 1000, "runs": 5,
                           "rows": rows(100, 300, 90, 30)},
            "toolkit": {"audit": {"cold": summarise([30, 31, 35]),
                                  "warm": summarise([4, 4.4, 5])},
                        "ratios": {"spatch_over_audit_cold": 20.0,
                                   "spatch_over_audit_warm": 150.0}},
            "seed_claims": seed_claims(SIZES_61, rows(100, 300, 90, 30))}


def test_markdown_table_has_every_section():
    md = markdown(result())
    assert "relative" in md and "machine loaded" in md
    assert "| struct mutex | 32 | 64 |" in md
    assert "| lock | mutex | 8 | 300 (300–300) | 30.0 (30.0–30.0) |" in md
    assert "| make audit, cold | 31.0 (30.0–35.0) |" in md
    assert "audit, cold, CPU time" not in md     # not measured in these figures


def test_markdown_shows_cpu_time_when_measured():
    r = result()
    r["toolkit"]["audit"].update(cold_cpu=summarise([50]), warm_cpu=summarise([2]))
    r["toolkit"]["spatch"] = {**summarise([640]), "cpu": summarise([1200])}
    r["toolkit"]["ratios"] = toolkit_ratios(r["toolkit"]["audit"], r["toolkit"]["spatch"])
    md = markdown(r)
    assert "| make audit, cold, CPU time | 50.0 (50.0–50.0) |" in md
    assert "| whole-tree spatch sem_ops.cocci (1 run), CPU time | 1,200.0 (1,200.0–1,200.0) |" in md
    assert "| whole-tree spatch / audit, CPU time | 24.0x cold, 600.0x warm |" in md
    assert "| struct mutex is smaller than struct semaphore |" in md
    assert "Not measured in this run: audit, spatch, kernel, text, boottest, verify, triage (make bench " \
        "PARTS=audit," in md
    assert "make boot-test, warm" not in md


def test_markdown_shows_the_boot_test_when_measured():
    r = result()
    r["toolkit"]["boot_test"] = {"warm": summarise([41, 44, 39, 40, 52]), "boots": 17}
    md = markdown(r)
    assert "| make boot-test, warm (17 boots, two at a time) | 41.0 (39.0–52.0) |" in md


def test_json_shape_is_accepted_and_round_trips():
    r = result()
    assert check_shape(r) == []
    assert json.loads(json.dumps(r, sort_keys=True)) == r


def test_json_shape_problems_are_named():
    r = result()
    del r["machine"]
    r["toolkit"]["audit"]["cold"] = {"median": 50, "min": 30, "max": 35, "runs": []}
    problems = check_shape(r)
    assert "missing machine" in problems
    assert any("median outside min..max" in p for p in problems)
    r["toolkit"]["audit"]["warm"] = {"median": 4}
    assert any("without median/min/max/runs" in p for p in check_shape(r))


def part(date, figures):
    return {"meta": {"date": date, "load_average_start": [2.0], "load_average_end": [2.1],
                     "seconds": 10.0}, "figures": figures}


def test_assemble_merges_the_latest_figures_of_each_part():
    from pathlib import Path

    from qemu.bench.figures import assemble
    parts = {"audit": part("2026-12-03 07:00 UTC", {"cold": summarise([30, 32, 31]),
                                                    "warm": summarise([4, 5, 4])}),
             "spatch": part("2026-12-03 08:00 UTC", summarise([640]) | {"command": []}),
             "boots": part("2026-12-03 07:30 UTC", {
                 "sizes": {"nodebug": SIZES_61, "debug": {}},
                 "contention": {"vcpus": 2, "ms": 1000, "runs": 5,
                                "rows": rows(100, 300, 90, 30)}})}
    r = assemble(parts, Path("/k"), 5, "", machine_info={"summary": "m"})
    assert r["date"] == "2026-12-03 08:00 UTC"
    assert r["parts"] == ["audit", "boots", "spatch"]
    assert r["toolkit"]["ratios"]["spatch_over_audit_cold"] == 20.6   # 640 / 31
    assert r["sizes"]["nodebug"]["mutex"] == 32
    assert "kernel" not in r["toolkit"]
    assert check_shape(r) == []


def test_markdown_shows_the_verification_here_and_through_distcc():
    from qemu.bench.figures import verify_rows
    one = {"median": 100.0, "min": 100.0, "max": 100.0, "runs": [100.0]}
    rows = verify_rows({"local": one, "distcc": {**one, "median": 120.0, "min": 120.0,
                                                 "max": 120.0}, "patches": 3, "objects": 50,
                        "distcc_jobs": 48, "hosts": "127.0.0.1 (distccd --jobs 2), make -j2",
                        "local_jobs": "make -j1"})
    assert rows[0].startswith("| verification of the conversion patches (3 patches, 50 "
                              "objects), make -j1, empty ccache | 100.0")
    assert "48 jobs went there; same machine: overhead, not a speed-up) | 120.0" in rows[1]
    assert verify_rows(None) == []          # not measured: no row


def test_parts_of_gives_back_the_parts_assemble_was_given():
    from pathlib import Path

    from qemu.bench.figures import assemble, parts_of
    parts = {"audit": part("2026-12-03 07:00 UTC", {"cold": summarise([30, 32, 31]),
                                                    "warm": summarise([4, 5, 4])}),
             "boottest": part("2026-12-03 07:10 UTC", summarise([50, 52, 51])),
             "text": part("2026-12-03 07:20 UTC", {"objects": 3}),
             "boots": part("2026-12-03 07:30 UTC", {
                 "sizes": {"nodebug": SIZES_61, "debug": {}},
                 "contention": {"vcpus": 2, "ms": 1000, "runs": 5,
                                "rows": rows(100, 300, 90, 30)}})}
    r = assemble(parts, Path("/k"), 5, "", machine_info={"summary": "m"})
    assert parts_of(r) == parts
    # a part the file does not hold is not made up
    del r["toolkit"]["boot_test"]
    assert sorted(parts_of(r)) == ["audit", "boots", "text"]
    assert parts_of({}) == {}
