"""classify/convert/tested.py: the -EINTR mapping is dropped where the stored
value is only tested, and kept where it is passed on."""

from pathlib import Path

from classify.convert.tested import _columns, drop_tested_values

ISERT = """static int accept(struct np *np)
{
\tint ret;

\tret = wait_for_completion_interruptible(&np->sem) ? -EINTR : 0;
\tif (ret)
\t\treturn -ENODEV;
\treturn 0;
}
"""

IPMI_LOOP = """static int thread(void *data)
{
\twhile (1) {
\t\tret = wait_for_completion_interruptible(&d->wake) ? -EINTR : 0;
\t\tif (d->stopping)
\t\t\tbreak;
\t\tif (ret)
\t\t\tcontinue;
\t\tret = send(d);
\t\tif (ret < 0)
\t\t\tpr_err("%d", ret);
\t}
\treturn 0;
}
"""

PARPORT = """int wait(struct port *port)
{
\tret = wait_for_completion_interruptible(&port->irq) ? -EINTR : 0;
\tif (!del_timer_sync(&port->timer) && !ret)
\t\tret = 1;
\treturn ret;
}
"""

RAW_GADGET = """static void *get(struct q *q)
{
\tret = wait_for_completion_interruptible(&q->sema) ? -EINTR : 0;
\tif (ret)
\t\treturn ERR_PTR(ret);
\treturn NULL;
}
"""


def run(tmp_path: Path, text: str) -> str:
    f = tmp_path / "f.c"
    f.write_text(text)
    drop_tested_values(f)
    return f.read_text()


def test_a_value_only_tested_loses_the_mapping(tmp_path: Path) -> None:
    assert "? -EINTR : 0" not in run(tmp_path, ISERT)
    got = run(tmp_path, IPMI_LOOP)
    assert "ret = wait_for_completion_interruptible(&d->wake);" in got


def test_a_value_passed_on_keeps_it(tmp_path: Path) -> None:
    assert run(tmp_path, PARPORT) == PARPORT


def test_a_value_returned_at_once_is_returned_as_eintr(tmp_path: Path) -> None:
    got = run(tmp_path, RAW_GADGET)
    assert ("\tret = wait_for_completion_interruptible(&q->sema);\n"
            "\tif (ret)\n\t\treturn ERR_PTR(-EINTR);\n\treturn NULL;\n") in got
    # look-alikes: the wait is the body of an unbraced if (ret may hold another
    # value), the value goes through a label, the test is not the next statement
    unbraced = RAW_GADGET.replace("\tret = wait", "\tif (q->n)\n\t\tret = wait")
    assert run(tmp_path, unbraced) == unbraced
    label = RAW_GADGET.replace("return ERR_PTR(ret);", "goto out;").replace(
        "\treturn NULL;", "\treturn NULL;\nout:\n\treturn ERR_PTR(ret);")
    assert "? -EINTR : 0" in run(tmp_path, label)
    later = RAW_GADGET.replace("\tif (ret)", "\tq->n = ret;\n\tif (ret)")
    assert run(tmp_path, later) == later
    killable = RAW_GADGET.replace("interruptible", "killable")
    assert "return ERR_PTR(-EINTR);" in run(tmp_path, killable)


IPMI_TIMEOUT = """static int thread(void *data)
{
\twhile (1) {
\t\t/* A command was sent, wait for its response. */
\t\tret = wait_for_completion_timeout(&iidev->got_rsp,
\t\t\t\t\t\t  msecs_to_jiffies(iidev->retry_time_ms)) ? 0 : -ETIME;
\t\tif (ret == -ETIME)
\t\t\tcontinue;
\t}
}
"""


def test_a_kept_mapping_becomes_if_else_within_80_columns() -> None:
    from classify.convert.tested import mappings_as_if
    got = mappings_as_if(IPMI_TIMEOUT).split("\n")
    assert got[4:9] == ["\t\tif (wait_for_completion_timeout(&iidev->got_rsp,",
                        "\t\t\t\t\t\tmsecs_to_jiffies(iidev->retry_time_ms)))",
                        "\t\t\tret = 0;", "\t\telse", "\t\t\tret = -ETIME;"]
    got = mappings_as_if(PARPORT.replace("&port->irq", "&port->physport->ieee1284.irq"))
    assert ("\tif (wait_for_completion_interruptible(&port->physport->ieee1284.irq))\n"
            "\t\tret = -EINTR;\n\telse\n\t\tret = 0;\n") in got
    assert all(_columns(x) <= 80 for x in got.split("\n"))
    ret = "\treturn wait_for_completion_killable(&x->done) ? -EINTR : 0;\n"
    assert mappings_as_if(ret) == ("\tif (wait_for_completion_killable(&x->done))\n"
                                   "\t\treturn -EINTR;\n\treturn 0;\n")


def test_a_mapping_in_an_unbraced_if_or_an_initializer_is_left() -> None:
    from classify.convert.tested import mappings_as_if
    unbraced = "\tif (a)\n\t\tret = wait_for_completion_killable(&x) ? -EINTR : 0;\n"
    assert mappings_as_if(unbraced) == unbraced
    init = "\tint ret = wait_for_completion_killable(&x) ? -EINTR : 0;\n"
    assert mappings_as_if(init) == init
    plain = "\tret = wait_for_completion_killable(&x);\n"
    assert mappings_as_if(plain) == plain


IWPM = """static int wait_for_reply(struct iwpm_nlmsg_request *nlmsg_request)
{
\tint ret;

\tret = wait_for_completion_timeout(&nlmsg_request->sem,
\t\t\t\t\t  IWPM_NL_TIMEOUT) ? 0 : -ETIME;
\tif (ret) {
\t\tret = -EINVAL;
\t\tpr_info("timeout\\n");
\t} else {
\t\tret = nlmsg_request->err_code;
\t}
\treturn ret;
}
"""


def test_a_timed_wait_only_tested_loses_the_mapping_and_its_tests_turn_over(
        tmp_path: Path) -> None:
    got = run(tmp_path, IWPM)
    assert "\t\t\t\t\t  IWPM_NL_TIMEOUT);\n\tif (!ret) {\n\t\tret = -EINVAL;" in got
    assert got.count("ret") == IWPM.count("ret")
    # look-alike: a value compared with -ETIME is used, not only tested
    assert run(tmp_path, IPMI_TIMEOUT) == IPMI_TIMEOUT
    interrupted = IWPM.replace("_timeout(", "_interruptible(").replace(
        ",\n\t\t\t\t\t  IWPM_NL_TIMEOUT) ? 0 : -ETIME;", ") ? -EINTR : 0;")
    got = run(tmp_path, interrupted)
    assert "wait_for_completion_interruptible(&nlmsg_request->sem);\n\tif (ret) {" in got


IPMI_COMPOUND = """static int thread(void *data)
{
\twhile (1) {
\t\tret = wait_for_completion_timeout(&iidev->got_rsp,
\t\t\t\t\t\t  msecs_to_jiffies(iidev->retry_time_ms)) ? 0 : -ETIME;
\t\tmsg = iidev->working_msg;
\t\tif (!msg && ret) {
\t\t\twait_for_completion(&iidev->got_rsp);
\t\t} else if (msg || !ret) {
\t\t\tcontinue;
\t\t}
\t}
}
"""


def test_a_value_tested_inside_a_condition_loses_the_mapping_too(tmp_path: Path) -> None:
    got = run(tmp_path, IPMI_COMPOUND)
    assert "msecs_to_jiffies(iidev->retry_time_ms));\n" in got and "ETIME" not in got
    # the timed wait's truth is turned over in every test
    assert "if (!msg && !ret) {" in got and "} else if (msg || ret) {" in got
    # look-alike: a comparison is no truth test
    compared = IPMI_COMPOUND.replace("if (!msg && ret)", "if (!msg && ret < 0)")
    assert run(tmp_path, compared) == compared
