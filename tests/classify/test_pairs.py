"""The textual path checks of the pairing proof (classify/census/exits.py): a
take followed by a release on every path, every way out after a take passing a
release, a take and release under one condition, an on/off field turned off
after each on; and the proof (classify/census/pairs.py) that names the way out
that leaves it held.  Each with the look-alike it must refuse or accept."""

from pathlib import Path

from classify.census.callgraph import CallGraph, Ref
from classify.census.exits import (falls_through, gate_left_open, guarded_alike, held_exit,
                                   taken_before)
from classify.census.pairs import Pairing, prove_pairing

UNWIND = """int setup(struct hw *hw)
{
    int err;

    err = take(hw);
    if (err)
        goto out;
    err = nop(hw);
    if (err)
        goto undo;
    poke(hw);
undo:
    give(hw);
out:
    return err;
}
"""

EARLY_RETURN = """int setup(struct hw *hw)
{
    int err;

    err = take(hw);
    if (err)
        goto out;
    err = nop(hw);
    if (err)
        goto unwind;
    return 0;
unwind:
    give(hw);
out:
    return err;
}
"""

CHECKED_CALL = """void work(struct hw *hw)
{
    if (take(hw))
        return;
    give(hw);
}
"""


def test_a_take_released_after_an_unwind_label_falls_through() -> None:
    # line 5 takes; the goto out is its failure branch; the goto undo lands
    # on the label right before the release on line 13
    assert falls_through(UNWIND, 5, 13)


def test_a_goto_past_the_release_does_not() -> None:
    assert not falls_through(UNWIND.replace("goto undo", "goto out"), 5, 13)


def test_a_release_only_in_the_unwind_after_a_return_does_not() -> None:
    assert not falls_through(EARLY_RETURN, 5, 12)


def test_the_failure_branch_of_a_checked_call_may_return() -> None:
    assert falls_through(CHECKED_CALL, 3, 5)
    assert not falls_through(CHECKED_CALL, 5, 3)


SAME = """bool f(struct hw *hw, struct data *t)
{
    if (!t->in_reset)
        down(&s);
    snap(hw);
    if (!t->in_reset)
        up(&s);
    return true;
}
"""

REASSIGNED = SAME.replace("snap(hw);", "t->in_reset = 1;")
OTHER = SAME.replace("if (!t->in_reset)\n        up", "if (t->done)\n        up")


def test_take_and_release_under_one_condition_are_balanced() -> None:
    assert guarded_alike(SAME, 4, [7])


def test_the_condition_changed_in_between_or_another_condition_is_not() -> None:
    assert not guarded_alike(REASSIGNED, 4, [7])
    assert not guarded_alike(OTHER, 4, [7])
    assert not guarded_alike(SAME, 4, [])


def test_one_step_at_several_places_is_said_once():
    from classify.census.pairs import _merge_sites
    got = _merge_sites(["a/b.c:394 g() is i2c_gate_ctrl: why",
                        "a/b.c:422 g() is i2c_gate_ctrl: why",
                        "a/c.c:7 g() is i2c_gate_ctrl: why",
                        "a/b.c:9 h() calls f(), which takes it, and every path of h() "
                        "releases it afterwards, at line 12",
                        "f() is exported by a/b.c: its callers in the tree were followed"])
    assert got == ["a/b.c:394, :422, a/c.c:7 g() is i2c_gate_ctrl: why",
                   "a/b.c:9 h() calls f(), which takes it, and every path of h() "
                   "releases it afterwards, at line 12",
                   "f() is exported by a/b.c: its callers in the tree were followed"]


# Every way out after a take passes a release (held_exit) ---------------------

def line(text: str, needle: str, nth: int = 1) -> int:
    """The 1-based line of the nth line of text that holds needle."""
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    return hits[nth - 1]


SKIPPED = """int probe(struct hw *hw)
{
    int err;

    take(hw);
    err = nop(hw);
    if (err) {
        give(hw);
        goto out;
    }
    err = poke(hw);
    if (err)
        goto out;
    give(hw);
out:
    return err;
}
"""

RELEASED_FIRST = SKIPPED.replace("    if (err)\n        goto out;\n",
                                 "    if (err) {\n        give(hw);\n        goto out;\n    }\n")


def test_a_release_in_an_error_branch_does_not_close_the_paths_after_it() -> None:
    gives = [line(SKIPPED, "give", 1), line(SKIPPED, "give", 2)]
    # falls_through() takes the first release, in the branch, for the close
    assert falls_through(SKIPPED, 5, gives[0])
    assert held_exit(SKIPPED, 5, gives) == (0, line(SKIPPED, "goto out", 2))


def test_a_release_before_each_way_out_closes_it() -> None:
    gives = [line(RELEASED_FIRST, "give", n) for n in (1, 2, 3)]
    assert held_exit(RELEASED_FIRST, 5, gives) == (gives[2], 0)


def test_the_unwind_of_the_goto_example_is_followed() -> None:
    assert held_exit(UNWIND, 5, [13]) == (13, 0)
    assert held_exit(UNWIND.replace("goto undo", "goto out"), 5, [13]) == (0, 10)
    assert held_exit(EARLY_RETURN, 5, [12]) == (0, 11)
    assert held_exit(CHECKED_CALL, 3, [5]) == (5, 0)


REJOINS = """int tune(struct dvb_frontend *fe)
{
    int ret;

    if (fe->ops.i2c_gate_ctrl)
        fe->ops.i2c_gate_ctrl(fe, 1);
    ret = write(fe, 0x23);
    if (ret)
        goto error;
exit:
    if (fe->ops.i2c_gate_ctrl)
        fe->ops.i2c_gate_ctrl(fe, 0);
    return ret;

error:
    pr_debug("failed=%d\\n", ret);
    goto exit;
}
"""


def test_a_goto_to_unwind_code_that_jumps_back_before_the_release_is_followed() -> None:
    # tda18212_set_params(): `error: ...; goto exit;`, exit closes the gate; the
    # close counts under the same `if (fe->ops.i2c_gate_ctrl)` as the open
    assert held_exit(REJOINS, 6, [12]) == (12, 0)
    returns = REJOINS.replace("    goto exit;\n}", "    return ret;\n}")
    assert held_exit(returns, 6, [12]) == (0, line(returns, "goto error"))


def test_a_release_under_another_condition_does_not_count() -> None:
    # stv6111: `if (fe->ops.i2c_gate_ctrl && !stat) close`: not when the open failed
    close = "\n        fe->ops.i2c_gate_ctrl(fe, 0)"
    other = REJOINS.replace("if (fe->ops.i2c_gate_ctrl)" + close,
                            "if (fe->ops.i2c_gate_ctrl && !ret)" + close)
    assert held_exit(other, 6, [12]) == (0, line(other, "return ret"))


LOOP = """void poll(struct hw *hw)
{
    int i;

    for (i = 0; i < 3; i++) {
        take(hw);
        if (busy(hw))
            break;
        while (wait(hw))
            if (gone(hw))
                break;
        give(hw);
    }
}
"""


def test_a_break_out_of_the_loop_around_the_take_leaves_holding() -> None:
    assert held_exit(LOOP, 6, [12]) == (0, 8)
    inner = LOOP.replace("        if (busy(hw))\n            break;\n", "")
    assert held_exit(inner, 6, [10]) == (10, 0)


def test_the_end_of_a_function_is_a_way_out() -> None:
    text = "void f(struct hw *hw)\n{\n    take(hw);\n    if (hw->x)\n        give(hw);\n}\n"
    assert held_exit(text, 3, [5]) == (0, 6)


def test_a_release_after_a_label_or_under_a_condition_is_not_always_taken_before() -> None:
    gives = [line(RELEASED_FIRST, "give", n) for n in (1, 2, 3)]
    assert all(taken_before(RELEASED_FIRST, 5, g) for g in gives)
    assert not taken_before(UNWIND, 5, 13)      # `undo:` lets the first goto in
    assert not taken_before(SAME, 4, 7)         # the take is under a condition


# The calls that turn an on/off field on, in the storing file (gate_left_open) --

EM28XX = """static int dvb_init(struct em28xx *dev)
{
    struct em28xx_dvb *dvb = kzalloc(sizeof(*dvb), GFP_KERNEL);
    int result = 0;

    dvb->fe[0]->ops.i2c_gate_ctrl = drxk_gate_ctrl;
    if (dvb->fe[0]->ops.i2c_gate_ctrl)
        dvb->fe[0]->ops.i2c_gate_ctrl(dvb->fe[0], 1);
    if (!dvb_attach(xc5000_attach, dvb->fe[0], &cfg)) {
        result = -EINVAL;
        goto out_free;
    }
    if (dvb->fe[0]->ops.i2c_gate_ctrl)
        dvb->fe[0]->ops.i2c_gate_ctrl(dvb->fe[0], 0);
    return 0;

out_free:
    kfree(dvb);
    return result;
}
"""

EM28XX_CLOSED = EM28XX.replace(
    "        result = -EINVAL;\n",
    "        dvb->fe[0]->ops.i2c_gate_ctrl(dvb->fe[0], 0);\n        result = -EINVAL;\n")


def test_a_gate_opened_and_left_on_an_error_goto_names_the_goto() -> None:
    why, ons = gate_left_open("d/em28xx-dvb.c", EM28XX, "i2c_gate_ctrl")
    assert ons == []
    assert why == ("d/em28xx-dvb.c:11 goto out_free after i2c_gate_ctrl(dvb->fe[0], 1) at :8 "
                   "leaves dvb_init() with no i2c_gate_ctrl(..., 0) on the way")


def test_a_gate_closed_before_the_error_goto_is_not_left_open() -> None:
    assert gate_left_open("d/em28xx-dvb.c", EM28XX_CLOSED, "i2c_gate_ctrl") == ("", [8])
    # tda18212's unwind, and the gate_ctrl callback's own forwarding (not the field)
    assert gate_left_open("t.c", REJOINS, "i2c_gate_ctrl") == ("", [6])


def test_a_gate_call_with_a_variable_flag_is_not_known() -> None:
    text = EM28XX.replace("(dvb->fe[0], 1)", "(dvb->fe[0], open)")
    why, _ = gate_left_open("d/x.c", text, "i2c_gate_ctrl")
    assert why.startswith("d/x.c:8 dvb_init() calls i2c_gate_ctrl(dvb->fe[0], open)")


# The proof, on a call graph made by hand --------------------------------------

GATE_CB = """static int gate_ctrl(struct dvb_frontend *fe, int enable)
{
    struct em28xx_dvb *dvb = fe->sec_priv;

    if (enable) {
        down(&dvb->pll_mutex);
        return 0;
    }
    up(&dvb->pll_mutex);
    return 0;
}
"""


def _graph(refs: dict) -> CallGraph:
    graph = CallGraph(Path("."))
    graph.refs = refs
    for node in refs:
        graph.roots[node] = []
    return graph


def test_the_proof_fails_at_the_exit_that_leaves_the_gate_open() -> None:
    text = GATE_CB + "\n" + EM28XX.replace("drxk_gate_ctrl", "gate_ctrl")
    cb = ("d/em28xx-dvb.c", "gate_ctrl")
    store = line(text, "ops.i2c_gate_ctrl = gate_ctrl")
    graph = _graph({cb: [Ref("store", cb[0], store, "dvb_init",
                             "dvb->fe[0]->ops.i2c_gate_ctrl")]})
    args = (graph, {cb: [6]}, set(), {cb: [6]}, {cb: [9]})
    got = prove_pairing(*args, lambda _: text)
    assert not got.ok
    assert got.why_not.startswith(f"d/em28xx-dvb.c:{line(text, 'goto out_free')} goto out_free "
                                  f"after i2c_gate_ctrl(dvb->fe[0], 1) at :{store + 2} ")
    assert got.why_not.endswith("the semaphore gate_ctrl() takes on 1 stays held")
    closed = GATE_CB + "\n" + EM28XX_CLOSED.replace("drxk_gate_ctrl", "gate_ctrl")
    ok = prove_pairing(*args, lambda _: closed)
    assert ok.ok, ok.why_not
    assert "in em28xx-dvb.c, every i2c_gate_ctrl(..., 1) is followed by" in ok.text()


def _climbing(text: str) -> Pairing:
    take, give, probe = ("d/p.c", "take"), ("d/p.c", "give"), ("d/p.c", "probe")
    calls = {n: [Ref("call", "d/p.c", line(text, f"{n[1]}(hw);", k), "probe", "")
                 for k in range(1, text.count(f"{n[1]}(hw);") + 1)] for n in (take, give)}
    graph = _graph({**calls, probe: [Ref("field", "d/p.c", 40, "", "platform_driver.probe")]})
    return prove_pairing(graph, {take: [90]}, {give}, {take: [90]}, {give: [95]},
                         lambda _: text)


def test_the_proof_fails_at_the_goto_that_skips_the_release() -> None:
    got = _climbing(SKIPPED)
    assert not got.ok
    assert got.why_not.startswith("d/p.c:13 goto out after take() at :5 leaves probe() "
                                  "holding it; d/p.c:40 probe() is stored in "
                                  "platform_driver.probe")
    error_only = SKIPPED.replace("        goto out;\n    }", "        return err;\n    }", 1) \
        .replace("    if (err)\n        goto out;\n    give(hw);\nout:\n    return err;",
                 "    return 0;")
    got = _climbing(error_only)
    assert not got.ok           # the old proof took the error path's release for all
    assert got.why_not.startswith("d/p.c:12 return after take() at :5 leaves probe() "
                                  "holding it; ")
    got = _climbing(RELEASED_FIRST)
    assert got.ok, got.why_not
    assert got.chain == [f"d/p.c:5 probe() calls take(), which takes it, and every path "
                         "of probe() releases it afterwards, at line "
                         f"{line(RELEASED_FIRST, 'give', 3)}"]


# The whole audit on the fixtures: the reason names the way out ----------------

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _reasons(name: str, cache: Path) -> dict[str, str]:
    from classify.audit import run_audit
    return {r.decl.id: " ".join(r.verdict.reasons)
            for r in run_audit(FIXTURES / name, cache, nice=0).results}


def test_the_audit_names_the_exit_that_leaves_it_held(shared_cache: Path) -> None:
    gate = _reasons("pairs_gate_left_open.c",
                    shared_cache)["pairs_gate_left_open.c:gate_dvb.pll_lock"]
    src = (FIXTURES / "pairs_gate_left_open.c").read_text()
    assert (f"pairs_gate_left_open.c:{line(src, 'goto out_free', 2)} goto out_free after "
            f"i2c_gate_ctrl(dvb->fe[0], 1) at :{line(src, '(dvb->fe[0], 1)')} leaves "
            "gate_dvb_init()") in gate
    unwind = _reasons("pairs_unwind.c", shared_cache)
    src = (FIXTURES / "pairs_unwind.c").read_text()
    assert (f"pairs_unwind.c:{line(src, 'goto out;', 2)} goto out after skip_take() at "
            f":{line(src, 'skip_take(hw);')} leaves skip_probe() holding it") in \
        unwind["pairs_unwind.c:skip_sem"]
    assert "return after error_take() at" in unwind["pairs_unwind.c:error_sem"]
    assert "taken in one function and released in another, always on one task:" in \
        unwind["pairs_unwind.c:unwind_sem"]


def test_a_take_and_release_under_one_condition_is_a_lock_of_one_function(
        shared_cache: Path) -> None:
    reasons = _reasons("guarded_take.c", shared_cache)
    assert "every down() is released by up() on all paths of the same function" in \
        reasons["guarded_take.c:dump_sem"]
    assert "taken in one function and released in another" not in \
        reasons["guarded_take.c:dump_sem"]
    assert "not proven released on every path" in reasons["guarded_take.c:flip_sem"]
