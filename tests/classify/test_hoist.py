"""A changed statement that no break brings within 80 columns is shortened
by a local (hoist.py): both shapes, and the cases it must leave alone."""

from classify.convert import hoist as H
from classify.convert.tested import _columns

# the ipmi_ipmb shape: a wait with a timeout too long to align
WAIT = """static int thread(void *data)
{
\tstruct dev *iidev = data;

\twhile (!kthread_should_stop()) {
\t\tlong ret;
\t\tunsigned long flags;

\t\tspin_lock_irqsave(&iidev->lock, flags);
\t\t/* A command was sent, wait for its response. */
\t\tret = wait_for_completion_timeout(&iidev->got_rsp,
\t\t\t\t\t\t  msecs_to_jiffies(iidev->retry_time_ms));
\t\tif (!ret)
\t\t\tcontinue;
\t}
\treturn 0;
}
"""

# the pvcalls shape: a lock's long address four levels deep
DEEP = """static void set_state(struct xenbus_device *dev,
\t\t      enum xenbus_state state)
{
\twhile (dev->state != state) {
\t\tswitch (dev->state) {
\t\tcase 1:
\t\t\tswitch (state) {
\t\t\tcase 2:
\t\t\t\tmutex_lock(&pvcalls_back_global.frontends_lock);
\t\t\t\tdisconnect(dev);
\t\t\t\tmutex_unlock(&pvcalls_back_global.frontends_lock);
\t\t\t\tbreak;
\t\t\t}
\t\t}
\t}
}
"""


def long_line(text: str) -> int:
    return next(n for n, x in enumerate(text.split("\n"), 1) if _columns(x) > 80)


def test_the_timeout_goes_into_a_local_of_the_innermost_declaring_block() -> None:
    got, why = H.hoist(WAIT, long_line(WAIT), "got_rsp", "completion")
    assert ("\t\tunsigned long flags;\n\t\tunsigned long timeout;\n\n" in got)
    assert ("\t\ttimeout = msecs_to_jiffies(iidev->retry_time_ms);\n"
            "\t\tret = wait_for_completion_timeout(&iidev->got_rsp, timeout);\n") in got
    assert all(_columns(x) <= 80 for x in got.split("\n"))
    assert "timeout" in why


def test_a_timeout_name_in_use_is_not_shadowed() -> None:
    taken = WAIT.replace("\t\tlong ret;", "\t\tlong ret, timeout = 1;")
    assert H.hoist(taken, long_line(taken), "got_rsp", "completion") is None


def test_the_address_goes_into_a_pointer_at_the_top_of_the_function() -> None:
    got, why = H.hoist(DEEP, long_line(DEEP), "frontends_lock", "mutex")
    assert got.startswith(DEEP.split("{\n")[0] + "{\n\tstruct mutex *frontends_lock = "
                          "&pvcalls_back_global.frontends_lock;\n\n\twhile")
    assert "\t\t\t\tmutex_lock(frontends_lock);\n" in got
    assert "\t\t\t\tmutex_unlock(frontends_lock);\n" in got
    assert got.count("&pvcalls_back_global.frontends_lock") == 1
    assert all(_columns(x) <= 80 for x in got.split("\n"))
    assert why.startswith("set_state() reaches frontends_lock through a local pointer")


def test_an_address_that_changes_in_the_function_is_left() -> None:
    # the root is a local assigned in the function: the pointer would be stale
    moving = DEEP.replace("{\n\twhile", "{\n\tstruct global *pvcalls_back_global = get();\n\n"
                          "\twhile")
    assert H.hoist(moving, long_line(moving), "frontends_lock", "mutex") is None
    # the name the pointer would take is a word of the function already
    named = DEEP.replace("disconnect(dev);", "disconnect(frontends_lock);")
    assert H.hoist(named, long_line(named), "frontends_lock", "mutex") is None


def test_another_long_line_is_left() -> None:
    other = ("void f(void)\n{\n\t\t\t\tsome_function_with_a_long_name(argument_one_of_it"
             "_is_long_too);\n}\n")
    assert H.hoist(other, 3, "lock", "mutex") is None
