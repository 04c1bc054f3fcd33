"""The textual path checks of the pairing proof (classify/census/pairs.py): a
take followed by a release on every path, and a take and release under one
condition; each with the look-alike it must refuse."""

from classify.census.pairs import falls_through, guarded_alike

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
                        "a/b.c:9 h() calls f() and gives it back at line 12",
                        "f() is exported by a/b.c: its callers in the tree were followed"])
    assert got == ["a/b.c:394, :422, a/c.c:7 g() is i2c_gate_ctrl: why",
                   "a/b.c:9 h() calls f() and gives it back at line 12",
                   "f() is exported by a/b.c: its callers in the tree were followed"]
