"""Each fixture reproduces one pattern; its header says the expected classes.

The whole pipeline runs on the single file (census, spatch facts, rules), with a
private cache, so these tests also cover the single-file mode of the audit.
"""

import re
from pathlib import Path

import pytest

from classify.audit import run_audit

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CASES = sorted(FIXTURES.glob("*.c"))


def expected(path: Path) -> dict[str, str]:
    return dict(re.findall(r"EXPECT: (\S+) (\w+)", path.read_text()))


@pytest.mark.parametrize("fixture", CASES, ids=[p.stem for p in CASES])
def test_fixture_class(fixture: Path, shared_cache: Path) -> None:
    audit = run_audit(fixture, shared_cache, nice=0)
    got = {r.decl.id: r.verdict.cls for r in audit.results}
    # semaphores allocated at run time (classify.allocated): a family per file
    got.update({f.id: f.cls for f in audit.allocated})
    assert got == expected(fixture), {r.decl.id: r.verdict.reasons for r in audit.results}
    assert not audit.failures
    for r in audit.results:
        assert r.verdict.reasons, r.decl.id
        if r.verdict.cls == "unknown":
            assert r.verdict.settle, r.decl.id


def test_every_fixture_states_its_pattern() -> None:
    for path in CASES:
        text = path.read_text()
        assert text.startswith("// SPDX-License-Identifier:"), path.name
        if path.stem != "no_semaphores":
            assert expected(path), path.name


def test_reasons_name_the_cause(shared_cache: Path) -> None:
    reasons = {}
    for name in ("up_from_irq.c", "trylock_atomic.c", "different_functions.c",
                 "down_timeout.c", "usb_skeleton_limit_sem.c"):
        for r in run_audit(FIXTURES / name, shared_cache, nice=0).results:
            reasons[r.decl.id] = " ".join(r.verdict.reasons)
    assert "released in interrupt context" in reasons["up_from_irq.c:irqdev.busy"]
    assert "interrupt context" in reasons["trylock_atomic.c:adev.sem"]
    assert "released by another function" in reasons["different_functions.c:hw_lock"]
    assert "down_timeout" in reasons["down_timeout.c:cmd_sem"]
    assert "count above 1" in reasons["usb_skeleton_limit_sem.c:usb_skel.limit_sem"]


def test_cache_is_used_on_the_second_run(tmp_path: Path) -> None:
    first = run_audit(FIXTURES / "loop.c", tmp_path / "cache", nice=0)
    second = run_audit(FIXTURES / "loop.c", tmp_path / "cache", nice=0)
    assert second.stats.cache_misses == 0
    assert [r.verdict.cls for r in first.results] == [r.verdict.cls for r in second.results]
    fresh = run_audit(FIXTURES / "loop.c", tmp_path / "cache", fresh=True, nice=0)
    assert fresh.stats.cache_hits == 0


def test_a_file_spatch_cannot_analyse_is_listed_not_dropped(tmp_path):
    """A timeout (or crash) loses that file only: its semaphores stay, unknown."""
    audit = run_audit(FIXTURES / "loop.c", tmp_path / "cache", nice=0, timeout=0.001)
    assert [f.status for f in audit.failures] == ["timeout"]
    assert len(audit.results) == 3
    for r in audit.results:
        assert r.verdict.cls == "unknown"
        assert r.verdict.reasons[0].startswith("not analysed: loop.c: spatch timed out")
    # a timeout is not cached: the next run analyses the file
    again = run_audit(FIXTURES / "loop.c", tmp_path / "cache", nice=0)
    assert not again.failures and again.stats.cache_misses > 0


def test_a_call_spatch_did_not_see_names_its_function(tmp_path):
    """A function spatch cannot parse: its semaphore calls are missing from the
    facts, so the semaphore is unknown and the function is named."""
    src = tmp_path / "broken.c"
    src.write_text(
        "struct d { struct semaphore s; };\n"
        "static void init(struct d *x)\n{\n\tsema_init(&x->s, 1);\n}\n"
        "static void ok(struct d *x)\n{\n\tdown(&x->s);\n\tup(&x->s);\n}\n"
        "static void broken(struct d *x)\n{\n\tdown(&x->s);\n\tSTRANGE_MACRO(x) {\n"
        "\t\tx = x +;\n\t}\n\tup(&x->s);\n}\n")
    audit = run_audit(src, tmp_path / "cache", nice=0)
    [r] = audit.results
    from classify.report import to_json
    unparsed = to_json(audit)["unparsed_functions"]
    if r.verdict.cls != "unknown":  # spatch parsed it after all
        assert not unparsed
        return
    assert "not analysed" in r.verdict.reasons[0] and "broken()" in r.verdict.reasons[0]
    assert unparsed == [{"path": "broken.c", "function": "broken", "lines": [13, 17]}]


def test_the_macro_hints_are_what_makes_closure_callbacks_analysed(tmp_path, monkeypatch):
    """Without the hints of cocci/macros.h (an empty hint file), spatch cannot parse
    the CLOSURE_CALLBACK functions: their semaphores are unknown, named as not
    analysed, and the census names the macro, not the function."""
    from classify import spatch
    from classify.census import macros
    empty = tmp_path / "macros.h"
    empty.write_text("/* no hints */\n")
    monkeypatch.setattr(spatch, "MACRO_FILE", empty)
    monkeypatch.setattr(macros, "MACRO_FILE", empty)
    monkeypatch.setattr(spatch, "WORK_DIR", tmp_path)
    audit = run_audit(FIXTURES / "closure_callback.c", tmp_path / "cache", nice=0)
    got = {r.decl.id: r for r in audit.results}
    sb = got["closure_callback.c:cache_set.sb_write_mutex"]
    assert sb.verdict.cls == "unknown"
    assert "not analysed" in " ".join(sb.verdict.reasons)
    assert got["closure_callback.c:cache_set.uuid_lock"].verdict.cls == "unknown"
    assert {o.func for o in sb.facts.ops if o.op == "up"} == {"CLOSURE_CALLBACK"}


def test_macro_hints_parse():
    from classify.census.macros import declared_struct, function_of, parse_hints
    h = parse_hints("#define CLOSURE_CALLBACK(name) void name(struct work_struct *ws)\n"
                    "#define closure_type(name, type, member) type *name = "
                    "container_of(ws, type, member)\n"
                    "#define __init\n#define list_for_each(pos, head) for (;;)\n")
    assert h.functions == {"CLOSURE_CALLBACK": 0}
    assert h.declarators == {"closure_type": (0, 1)}
    assert function_of("CLOSURE_CALLBACK", " bch_done ", h) == "bch_done"
    assert function_of("list_for_each", "p, h", h) == "list_for_each"
    src = "closure_type(dc, struct cached_dev, sb_write);\nclosure_type(c, int, x);\n"
    assert declared_struct(src, "dc", h) == "cached_dev"
    assert declared_struct(src, "c", h) == ""        # not a struct: no hint
    assert declared_struct(src, "d", h) == ""
