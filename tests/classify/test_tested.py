"""classify/convert/tested.py: the -EINTR mapping is dropped where the stored
value is only tested, and kept where it is passed on."""

from pathlib import Path

from classify.convert.tested import drop_tested_values

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
    assert run(tmp_path, RAW_GADGET) == RAW_GADGET


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


def test_a_mapping_past_100_columns_goes_on_a_line_of_its_own(tmp_path: Path) -> None:
    from classify.convert.tested import _columns, break_long_mappings
    f = tmp_path / "f.c"
    f.write_text(IPMI_TIMEOUT)
    assert break_long_mappings(f) == 1
    lines = f.read_text().split("\n")
    assert lines[5] == "\t\t\t\t\t\t  msecs_to_jiffies(iidev->retry_time_ms)) ?"
    assert lines[6] == "\t\t\t0 : -ETIME;"
    assert all(_columns(x) <= 100 for x in lines)
    # after a closing brace, a blank line and a comment: the statement's own indent
    f.write_text(IPMI_TIMEOUT.replace("\t\t/* A command", "\t\t}\n\n\t\t/* A command"))
    assert break_long_mappings(f) == 1
    assert "\n\t\t\t0 : -ETIME;" in f.read_text()
    short = IPMI_TIMEOUT.replace("iidev->retry_time_ms", "t")
    f.write_text(short)
    assert break_long_mappings(f) == 0 and f.read_text() == short


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
