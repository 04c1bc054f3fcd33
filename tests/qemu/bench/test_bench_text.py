"""make bench PARTS=text, the pure parts: `size -A` parsing, the .text of an object,
per-object entries, the totals, the seed's verdict, the table, and the error when
there are no conversion patches.  Nothing here compiles."""

import pytest
from pathlib import Path

from qemu.bench.figures import (BenchError, assemble, check_shape, markdown as
                                bench_markdown, seed_claims)
from qemu.bench.parts import main as bench_main
from qemu.bench.textsize import (NODEBUG, ObjectText, TextError, class_of, function_bytes,
                                 markdown, object_entry, parse_size, series_indexes,
                                 text_bytes, text_claim, totals)

# `size -A -d drivers/xen/pvcalls-back.o` under x86_64 allmodconfig (binutils 2.40),
# shortened; then a second file in the same output
SIZE_OUTPUT = """\
drivers/xen/pvcalls-back.o  :
section                 size   addr
.text                  18260      0
.data                   5152      0
__mcount_loc             176      0
.init.text               173      0
.text.unlikely           328      0
.exit.text               128      0
.text.exit                26      0
.text.startup             26      0
.rela.text              9000      0
.comment                  40      0
Total                  33309


drivers/char/lp.o  :
section                 size   addr
.text                   4000      0
.rodata                  100      0
Total                   4100

"""


def test_size_output_is_read_per_file_and_section():
    sizes = parse_size(SIZE_OUTPUT)
    assert sorted(sizes) == ["drivers/char/lp.o", "drivers/xen/pvcalls-back.o"]
    assert sizes["drivers/xen/pvcalls-back.o"][".text.unlikely"] == 328
    assert "Total" not in sizes["drivers/char/lp.o"]
    assert "section" not in sizes["drivers/char/lp.o"]


def test_text_is_the_sum_of_the_text_sections_only():
    sizes = parse_size(SIZE_OUTPUT)
    assert text_bytes(sizes["drivers/xen/pvcalls-back.o"]) == 18260 + 328 + 26 + 26
    assert text_bytes(sizes["drivers/char/lp.o"]) == 4000
    # .init.text, .exit.text, .rela.text and a look-alike are not .text*
    assert text_bytes({".init.text": 5, ".exit.text": 6, ".rela.text": 7,
                       ".textual": 8}) == 0


def test_garbage_and_empty_output_give_nothing():
    assert parse_size("") == {}
    assert parse_size("size: 'x.o': No such file\n") == {}


# `objdump -t drivers/xen/pvcalls-back.o` (binutils 2.40), shortened: section
# symbols (d), functions (F) in .text, .init.text and .text.unlikely, an object (O)
OBJDUMP_T = """\

drivers/xen/pvcalls-back.o:     file format elf64-x86-64

SYMBOL TABLE:
0000000000000000 l    df *ABS*\t0000000000000000 pvcalls-back.c
0000000000000000 l    d  .text\t0000000000000000 .text
0000000000000000 l     F .text\t000000000000000e pvcalls_back_remove
0000000000000040 l     F .text\t0000000000000010 pvcalls_back_uevent
0000000000000000 l    d  .init.text\t0000000000000000 .init.text
0000000000000000 l     F .init.text\t0000000000000072 pvcalls_back_init
0000000000000000 l     F .text.unlikely\t0000000000000020 pvcalls_back_probe.cold
0000000000000000 l     O .data\t0000000000000030 pvcalls_back_driver
0000000000000080 g     F .text\t000000000000002a pvcalls_sk_state_change
"""


def test_function_bytes_are_the_function_symbols_in_text_sections():
    assert function_bytes(OBJDUMP_T) == 0xe + 0x10 + 0x20 + 0x2a
    assert function_bytes("") == 0
    # not a function, or not in .text*: not counted
    assert function_bytes("0000000000000000 l     O .text\t0000000000000010 table\n"
                          "0000000000000000 l     F .exit.text\t0000000000000010 f\n") == 0


def test_function_bytes_go_into_the_entry_and_the_totals():
    entry, _ = object_entry(ObjectText("ok", 128, functions=100),
                            ObjectText("ok", 128, functions=93))
    assert entry == {"before": 128, "after": 128, "delta": 0,
                     "functions": {"before": 100, "after": 93, "delta": -7}}
    entry2, _ = object_entry(ObjectText("ok", 64, functions=50),
                             ObjectText("ok", 64, functions=None))
    assert "functions" not in entry2
    t = totals({"a": {"series": "s", "patch": "1", "class": "mutex", "objects":
                      {"x.o": entry, "y.o": entry2}, "not_built": {}}}, "mutex")
    assert t["delta"] == 0 and t["functions"] == {"before": 100, "after": 93, "delta": -7}
    md = "\n".join(markdown({"semaphores": {"a": {
        "series": "s", "patch": "1", "class": "mutex", "objects": {"x.o": entry, "y.o":
                                                                    entry2},
        "not_built": {}}}, "totals": {"mutex": t}}))
    assert "| `a` | x.o | 128 | 128 | 0 | -7 |" in md
    assert "| `a` | y.o | 64 | 64 | 0 | - |" in md
    assert "| **total**, 1 semaphores | 2 objects | 192 | 192 | **0** (+0.000%) | -7 |" in md
    assert "aligns functions to 16 bytes" in md
    claim = text_claim({"totals": {"mutex": t}, "config": {"name": "cfg"}})
    assert claim["verdict"] == "does not hold"
    assert claim["measured"].startswith("no byte changed (0.00% of the 192 bytes of .text "
                                        "of the 2 objects touched; function bytes -7)")


def test_class_comes_from_the_audit_then_from_the_subject():
    mutex_patch = "Subject: [PATCH 1/2] xen: pvcalls-back: convert x from a semaphore to a mutex\n"
    comp_patch = "Subject: [PATCH] parport: convert irq from a semaphore to a completion\n"
    assert class_of({"a": "mutex"}, "a", comp_patch) == "mutex"
    assert class_of({}, "a", mutex_patch) == "mutex"
    assert class_of({"a": "unknown"}, "a", comp_patch) == "completion"
    assert class_of({}, "a", "Subject: [PATCH] something else\n") == "unknown"


def test_an_object_is_measured_only_when_it_builds_before_and_after():
    ok = object_entry(ObjectText("ok", 100), ObjectText("ok", 90))
    assert ok == ({"before": 100, "after": 90, "delta": -10}, "")
    entry, why = object_entry(ObjectText("failed", why="does not compile here: x"),
                              ObjectText("failed", why="does not compile here: x"))
    assert entry is None and why == "does not compile here: x"
    entry, why = object_entry(ObjectText("ok", 100), ObjectText("failed", why="boom"))
    assert entry is None and "not after it: boom" in why
    entry, why = object_entry(ObjectText("ok", 100), None)
    assert entry is None and "does not apply" in why
    entry, why = object_entry(ObjectText("not built", why="CONFIG_X not set"),
                              ObjectText("not built", why="CONFIG_X not set"))
    assert entry is None and why == "CONFIG_X not set"


def rec(series, patch, cls, objects, not_built=None):
    objs = {o: {"before": b, "after": a, "delta": a - b} for o, (b, a) in objects.items()}
    return {"series": series, "patch": patch, "class": cls, "apply": "ok",
            "objects": objs, "not_built": not_built or {},
            "delta": sum(e["delta"] for e in objs.values())}


RECORDS = {
    # two patches of one series share hw_io.o: 1000 -> 980 -> 970
    "net/a.h:a.sem": rec("drivers-net", "0001-a.patch", "mutex",
                         {"net/hw_io.o": (1000, 980), "net/a.o": (500, 490)}),
    "net/b.h:b.lock": rec("drivers-net", "0002-b.patch", "mutex",
                          {"net/hw_io.o": (980, 970)},
                          {"net/runtest.o": "does not compile here: error: x"}),
    "xen/c.c:c.lock": rec("drivers-xen", "0001-c.patch", "mutex",
                          {"xen/c.o": (2000, 2010)}),
    "include/p.h:p.irq": rec("drivers-parport", "0001-p.patch", "completion",
                             {"parport/share.o": (3000, 3004), "char/lp.o": (400, 400)},
                             {"parport/parport_amiga.o": "does not compile here: "
                                                         "asm/amigahw.h: No such file"}),
}


def test_totals_take_each_object_once_from_its_first_before_to_its_last_after():
    t = totals(RECORDS, "mutex")
    assert t["semaphores"] == 3 and t["objects"] == 3
    assert t["before"] == 1000 + 500 + 2000
    assert t["after"] == 970 + 490 + 2010
    assert t["delta"] == -30 == t["sum_of_patch_deltas"]
    assert t["percent"] == round(-30 * 100 / 3500, 3)
    assert t["not_built"] == 1


def test_totals_keep_the_classes_apart():
    t = totals(RECORDS, "completion")
    assert (t["semaphores"], t["objects"], t["delta"], t["not_built"]) == (1, 2, 4, 1)
    assert totals(RECORDS, "counting") == {
        "semaphores": 0, "functions": None, "objects": 0, "before": 0, "after": 0, "delta": 0,
        "sum_of_patch_deltas": 0, "percent": None, "not_built": 0}


def test_totals_show_a_patch_that_changed_an_object_it_does_not_list():
    records = {"a": rec("s", "0001", "mutex", {"x.o": (100, 90)}),
               "b": rec("s", "0002", "mutex", {"x.o": (95, 80)})}   # 90 != 95
    t = totals(records, "mutex")
    assert t["delta"] == -20 and t["sum_of_patch_deltas"] == -25
    assert any("does not list" in line for line in markdown(text_figures(records)))


def text_figures(records=RECORDS):
    return {"config": {"name": "x86_64 allmodconfig without debugging",
                       "forced_off": ["CONFIG_KASAN", "CONFIG_PROVE_LOCKING"]},
            "semaphores": records,
            "totals": {c: totals(records, c) for c in ("completion", "mutex")}}


def verdict(claim):
    return claim["verdict"]


def test_the_seeds_text_claim_holds_when_the_mutex_patches_save_text():
    c = text_claim(text_figures())
    assert verdict(c) == "holds"
    assert c["measured"].startswith("30 bytes saved (0.86% of the 3500 bytes")
    assert "3 semaphores" in c["measured"] and "without debugging" in c["measured"]
    assert c["seed"].startswith("25051 bytes (0.76%")


def test_the_seeds_text_claim_holds_partly_when_they_save_a_smaller_share():
    # 48 of 200,332 bytes (0.02%), as measured on 6.1.192, against the seed's 0.76%
    small = {"a": rec("s", "0001", "mutex", {"x.o": (200332, 200284)})}
    c = text_claim(text_figures(small))
    assert verdict(c) == "partly" and c["measured"].startswith("48 bytes saved (0.02%")


def test_the_seeds_text_claim_does_not_hold_when_they_cost_text_or_change_nothing():
    grow = {"a": rec("s", "0001", "mutex", {"x.o": (100, 130)})}
    c = text_claim(text_figures(grow))
    assert verdict(c) == "does not hold" and c["measured"].startswith("30 bytes added")
    same = {"a": rec("s", "0001", "mutex", {"x.o": (100, 100)})}
    c = text_claim(text_figures(same))
    assert verdict(c) == "does not hold" and c["measured"].startswith("no byte changed")


def test_the_seeds_text_claim_is_not_measured_without_mutex_objects():
    assert verdict(text_claim(None)) == "not measured"
    only_completion = {k: v for k, v in RECORDS.items() if v["class"] == "completion"}
    assert verdict(text_claim(text_figures(only_completion))) == "not measured"
    nothing_built = {"a": rec("s", "0001", "mutex", {}, {"x.o": "does not compile"})}
    assert verdict(text_claim(text_figures(nothing_built))) == "not measured"


def test_seed_claims_carry_the_text_verdict():
    claims = {c["claim"]: c for c in seed_claims({}, [], text_figures())}
    assert claims["converting the mutex-like semaphores saves .text"]["verdict"] == "holds"
    claims = {c["claim"]: c for c in seed_claims({}, [])}
    assert claims["converting the mutex-like semaphores saves .text"]["verdict"] \
        == "not measured"


def test_table_lists_every_mutex_object_the_totals_and_what_did_not_build():
    md = "\n".join(markdown(text_figures()))
    assert "Config: x86_64 allmodconfig without debugging: `CONFIG_KASAN`, " \
           "`CONFIG_PROVE_LOCKING`." in md
    assert "| `net/a.h:a.sem` | net/hw_io.o | 1,000 | 980 | -20 | - |" in md
    assert "| `net/b.h:b.lock` | net/hw_io.o | 980 | 970 | -10 | - |" in md
    assert "| `xen/c.c:c.lock` | xen/c.o | 2,000 | 2,010 | +10 | - |" in md
    assert ("| **total**, 3 semaphores | 3 objects | 3,500 | 3,470 | **-30** (-0.857%) | - |"
            in md)
    # the completion table: one row per semaphore
    assert "| `include/p.h:p.irq` | 2 | 3,400 | 3,404 | +4 |" in md
    assert "- net/runtest.o (mutex, `net/b.h:b.lock`): does not compile here: error: x" in md
    assert "- parport/parport_amiga.o (completion, `include/p.h:p.irq`): does not " \
           "compile here: asm/amigahw.h" in md
    assert "does not list" not in md
    # mutex rows come in series/patch order, the completion table after them
    assert md.index("net/a.h:a.sem") < md.index("net/b.h:b.lock") < md.index("xen/c.c") \
        < md.index("completion-class")


def part(date, figures):
    return {"meta": {"date": date, "load_average_start": [0.1], "load_average_end": [0.2],
                     "seconds": 60.0}, "figures": figures}


def test_assemble_puts_the_text_part_in_place_of_the_skipped_entry():
    r = assemble({"text": part("2026-12-03 10:00 UTC", text_figures())}, Path("/k"), 5, "",
                 machine_info={"summary": "m"})
    assert r["text"]["totals"]["mutex"]["delta"] == -30
    assert "skipped" not in r
    assert check_shape(r) == []
    claim = next(c for c in r["seed_claims"] if ".text" in c["claim"])
    assert claim["verdict"] == "holds"
    md = bench_markdown(r | {"date": r["date"]})
    assert "| **total**, 3 semaphores |" in md
    assert "| converting the mutex-like semaphores saves .text | 25051 bytes" in md
    assert "Not measured in this run: boots, audit, spatch, kernel" in md


def test_assemble_without_the_text_part_says_how_to_measure_it():
    r = assemble({}, Path("/k"), 5, "", machine_info={"summary": "m"})
    assert "make bench PARTS=text" in r["skipped"]["code_size"]
    assert "text" not in r


def test_no_patches_means_run_make_patches_first(tmp_path):
    with pytest.raises(TextError, match=r"run `make patches` first"):
        series_indexes(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TextError, match=r"run `make patches` first"):
        series_indexes(tmp_path / "empty")
    (tmp_path / "p" / "drivers-xen").mkdir(parents=True)
    (tmp_path / "p" / "drivers-xen" / "series.json").write_text("{}")
    assert series_indexes(tmp_path / "p") == [tmp_path / "p" / "drivers-xen" / "series.json"]


def test_bench_refuses_the_text_part_before_measuring_anything(tmp_path):
    with pytest.raises(BenchError, match=r"text: .*absent.* run `make patches` first"):
        bench_main(tmp_path, tmp_path / "cache", 1, None, ("audit", "text"),
                   patches=tmp_path / "absent")
    assert not (tmp_path / "cache").exists()


def test_the_config_turns_off_instrumentation_and_lock_debugging():
    for sym in ("KASAN", "KCSAN", "UBSAN", "KCOV", "GCOV_KERNEL", "DEBUG_LOCK_ALLOC",
                "PROVE_LOCKING", "DEBUG_MUTEXES", "LOCK_STAT", "DEBUG_SPINLOCK",
                "DEBUG_ATOMIC_SLEEP", "LOCKDEP", "TRACE_IRQFLAGS",
                "DEBUG_FORCE_FUNCTION_ALIGN_64B", "DEBUG_SECTION_MISMATCH"):
        assert NODEBUG[f"CONFIG_{sym}"] == "n"
    # it only turns options off: what allmodconfig builds stays built
    assert set(NODEBUG.values()) == {"n"}


def test_bench_text_applies_each_series_in_order_and_records_every_object(tmp_path,
                                                                         monkeypatch):
    """The plumbing, with the compiler, git and the worktree replaced: the patches of
    a series are measured in order on one worktree, a failed object is kept with its
    reason, and the mutex series comes first."""
    import json

    import qemu.bench.textsize as ts
    patches = tmp_path / "patches"
    for slug, entries in (("drivers-aaa", [("c.c:comp", "0001-comp.patch", "completion")]),
                          ("drivers-net", [("a.h:a", "0001-a.patch", "mutex"),
                                           ("b.h:b", "0002-b.patch", "mutex")])):
        (patches / slug).mkdir(parents=True)
        (patches / slug / "series.json").write_text(json.dumps(
            {"patches": [{"id": i, "patch": p} for i, p, _ in entries]}))
        for _, p, cls in entries:
            (patches / slug / p).write_text(f"Subject: [PATCH] x: convert from a semaphore "
                                            f"to a {cls}\n")
    files = {"0001-a.patch": ["net/hw.c", "net/bad.c"], "0002-b.patch": ["net/hw.c"],
             "0001-comp.patch": ["aaa/c.c"]}
    for patch in patches.glob("*/*.patch"):     # what verify.patch_files reads
        patch.write_text(patch.read_text() + "".join(
            f"diff --git a/{f} b/{f}\n" for f in files[patch.name]))
    state: dict = {"applied": []}
    sizes = {"net/hw.c": 1000, "net/bad.c": 0, "aaa/c.c": 50}
    order = []

    def fresh(kernel, worktree):
        state["applied"] = []
        return worktree

    def obj(tree, build_dir, rel, logfile):
        if rel == "net/bad.c":
            return ObjectText("failed", why="does not compile here: bad.c:1: error: x")
        return ObjectText("ok", sizes[rel] - 10 * len(state["applied"]))

    def am(tree, patch):
        state["applied"].append(patch.name)
        order.append(f"{patch.parent.name}/{patch.name}")
        return ""

    monkeypatch.setattr(ts, "fresh_worktree", fresh)
    monkeypatch.setattr(ts, "git_am", am)
    monkeypatch.setattr(ts, "object_text", obj)
    monkeypatch.setattr(ts, "ensure_config", lambda tree, bd: {
        "name": "cfg", "forced_off": [], "seconds": 0.0})
    monkeypatch.setattr(ts, "audit_classes", lambda kernel: {"a.h:a": "mutex",
                                                             "b.h:b": "mutex"})
    r = ts.bench_text(tmp_path / "kernel", patches, tmp_path / "build", tmp_path / "wt",
                      tmp_path / "logs")
    assert order == ["drivers-net/0001-a.patch", "drivers-net/0002-b.patch",
                     "drivers-aaa/0001-comp.patch"]
    sems = r["semaphores"]
    assert sems["a.h:a"]["objects"] == {"net/hw.o": {"before": 1000, "after": 990,
                                                     "delta": -10}}
    assert sems["a.h:a"]["not_built"] == {"net/bad.o": "does not compile here: "
                                                       "bad.c:1: error: x"}
    assert sems["b.h:b"]["objects"]["net/hw.o"] == {"before": 990, "after": 980,
                                                    "delta": -10}
    assert sems["c.c:comp"]["class"] == "completion"      # from the subject
    assert r["totals"]["mutex"] | {"percent": 0} == {
        "semaphores": 2, "functions": None, "objects": 1, "before": 1000, "after": 980, "delta": -20,
        "sum_of_patch_deltas": -20, "percent": 0, "not_built": 1}
    assert r["totals"]["completion"]["delta"] == -10


def test_each_part_keeps_the_note_of_its_own_measurement():
    """A note says under what conditions a part was measured: measuring one part
    again with a note of its own keeps the others' notes (it replaced them all)."""
    text = part("2026-12-03 10:00 UTC", text_figures())
    text["meta"]["note"] = "text: sizes, not timings"
    verify = part("2026-12-04 19:50 UTC", {})
    verify["meta"]["note"] = "verify: one run each"
    r = assemble({"text": text, "verify": verify}, Path("/k"), 1, "verify: one run each",
                 machine_info={"summary": "m"})
    assert r["note"] == "text: sizes, not timings; verify: one run each"
    # parts without notes of their own: the note given
    assert assemble({}, Path("/k"), 1, "given", machine_info={"summary": "m"})["note"] == \
        "given"
