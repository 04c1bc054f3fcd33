"""Every call of a semaphore classed mutex or completion carries where its
function runs and who calls it (audit.add_op_contexts), for the message of its
conversion patch: an ioctl, an exported wrapper and its callers, a header's
inline wrapper, an interrupt handler, a threaded one; and nothing for a
counting semaphore."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smalltree import git_tree  # noqa: E402

import classify.audit as A
from classify.audit import MAX_CALLERS, _callers, run_audit
from classify.census.callgraph import CallGraph, _Edge
from classify.report import to_json, to_markdown

FILES = {
    "drivers/m/m.c": """
static DEFINE_SEMAPHORE(m_lock);
static struct semaphore c_done;
static struct semaphore t_done;
static struct semaphore pool;

static int m_do(int x)
{
	down(&m_lock);
	x++;
	up(&m_lock);
	return x;
}
static long m_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	return m_do(cmd);
}
static const struct file_operations m_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = m_ioctl,
};
int m_wrapper(int x)
{
	return m_do(x);
}
EXPORT_SYMBOL(m_wrapper);
static int m_orphan(int x)
{
	down(&m_lock);
	x--;
	up(&m_lock);
	return x;
}

static irqreturn_t c_isr(int irq, void *data)
{
	up(&c_done);
	return IRQ_HANDLED;
}
static irqreturn_t t_thread(int irq, void *data)
{
	up(&t_done);
	return IRQ_HANDLED;
}
static int c_probe(struct platform_device *pdev)
{
	int err;

	sema_init(&c_done, 0);
	sema_init(&t_done, 0);
	sema_init(&pool, 4);
	err = request_irq(platform_get_irq(pdev, 0), c_isr, 0, "c", pdev);
	if (err)
		return err;
	err = request_threaded_irq(platform_get_irq(pdev, 1), NULL, t_thread,
				   IRQF_ONESHOT, "t", pdev);
	if (err)
		return err;
	down(&c_done);
	down(&t_done);
	down(&pool);
	up(&pool);
	return 0;
}
static struct platform_driver c_driver = {
	.probe = c_probe,
};
""",
    "drivers/n/user.c": """
static int n_probe(struct i2c_client *client)
{
	return m_wrapper(1);
}
static struct i2c_driver n_driver = {
	.probe_new = n_probe,
};
static int n_open(struct inode *inode, struct file *f)
{
	return m_inline(2);
}
static const struct file_operations n_fops = {
	.open = n_open,
};
""",
    "include/linux/m.h": """
int m_wrapper(int x);
static inline int m_inline(int x)
{
	return m_wrapper(x);
}
""",
}

M = "drivers/m/m.c"


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    root = tmp_path_factory.mktemp("opctx")
    git_tree(root, FILES)
    return run_audit(root, tmp_path_factory.mktemp("opctx-cache"), nice=0, version="t")


@pytest.fixture(scope="module")
def sems(audit):
    return {s["id"].rsplit(":", 1)[1]: s for s in to_json(audit)["semaphores"]}


def ops(sem, func):
    return [o for o in sem["ops"] if o["function"] == func]


def test_the_classes(sems):
    assert {n: s["class"] for n, s in sems.items()} == {
        "m_lock": "mutex", "c_done": "completion", "t_done": "completion",
        "pool": "counting"}


def test_a_mutex_taken_from_an_ioctl_and_an_exported_wrapper(sems):
    got = ops(sems["m_lock"], "m_do")
    assert [o["op"] for o in got] == ["down", "up"]
    for o in got:
        assert o["context"].startswith("process + unknown: ")
        assert o["callers_more"] == 0
        assert o["callers"] == [
            # the ioctl: process
            f"{M}:20 m_ioctl() is file_operations.unlocked_ioctl (process) -> "
            f"{M}:16 m_ioctl() calls m_do()",
            # the exported wrapper: its callers outside the tree are not known ...
            f"{M}:22 m_wrapper() is exported: callers outside the tree are not known -> "
            f"{M}:24 m_wrapper() calls m_do()",
            # ... and the one in the tree, in another file, is followed
            "drivers/n/user.c:7 n_probe() is i2c_driver.probe_new (process) -> "
            "drivers/n/user.c:4 n_probe() calls m_wrapper() -> "
            f"{M}:24 m_wrapper() calls m_do()",
            # and through a static inline wrapper of a header, in its includer
            "drivers/n/user.c:14 n_open() is file_operations.open (process) -> "
            "drivers/n/user.c:11 n_open() calls m_inline() -> "
            "include/linux/m.h:5 m_inline() calls m_wrapper() -> "
            f"{M}:24 m_wrapper() calls m_do()",
        ]


def test_a_function_nothing_calls_is_unknown(sems):
    for o in ops(sems["m_lock"], "m_orphan"):
        assert o["context"] == f"unknown: {M}: no caller of m_orphan() found"
        assert o["callers"] == [] and o["callers_more"] == 0


def test_a_completion_signalled_from_an_interrupt_handler(sems):
    [up] = ops(sems["c_done"], "c_isr")
    assert up["context"] == (f"hardirq: {M}:52 c_probe() registers c_isr() with "
                             "request_irq() (hardirq)")
    assert up["callers"] == [up["context"].split(": ", 1)[1]]
    [down] = ops(sems["c_done"], "c_probe")
    assert down["context"] == (f"process: {M}:66 c_probe() is platform_driver.probe "
                               "(process)")


def test_a_threaded_interrupt_handler_is_process_context(sems):
    [up] = ops(sems["t_done"], "t_thread")
    assert up["context"] == (f"process: {M}:55 c_probe() registers t_thread() with "
                             "request_threaded_irq() (process)")


def test_a_counting_semaphore_gets_no_callers(sems):
    assert sems["pool"]["ops"]
    for o in sems["pool"]["ops"]:
        assert "callers" not in o and "callers_more" not in o and "context" not in o


def test_the_shortest_chains_are_kept(audit):
    """At most MAX_CALLERS chains, the shortest first, then by text, and the count
    of the rest."""
    [m] = [r for r in audit.results if r.decl.name == "m_lock"]
    for o in m.facts.ops:
        assert len(o.callers) <= MAX_CALLERS
        hops = [c.count(" -> ") for c in o.callers]
        assert hops == sorted(hops)
    node, caller = ("a.c", "f"), ("a.c", "g")
    graph = CallGraph(Path("."), roots={
        node: [("process", f"a.c:{n} f() is x.y{n} (process)") for n in (9, 3, 5, 7, 1)],
        caller: [("hardirq", "a.c:2 registers g() with request_irq() (hardirq)")]},
        callers={node: [_Edge(caller, "a.c:4 g() calls f()", False, 4)]})
    assert _callers(graph, node) == (tuple(f"a.c:{n} f() is x.y{n} (process)"
                                           for n in (1, 3, 5, 7)), 2)
    graph.roots[node] = graph.roots[node][:1]
    assert _callers(graph, node) == (
        ("a.c:9 f() is x.y9 (process)",
         "a.c:2 registers g() with request_irq() (hardirq) -> a.c:4 g() calls f()"), 0)


def test_the_verdicts_do_not_depend_on_them(audit, tmp_path, monkeypatch):
    """The contexts and callers come after the verdicts: without them, the same
    classes, rules and reasons."""
    monkeypatch.setattr(A, "add_op_contexts", lambda *args: None)
    again = run_audit(audit.kernel, tmp_path / "cache", nice=0, version="t")
    def verdicts(a):
        return {r.decl.id: (r.verdict.cls, r.verdict.rule, r.verdict.reasons)
                for r in a.results}
    assert verdicts(again) == verdicts(audit)
    assert all(o.callers is None for r in again.results for o in r.facts.ops)


def test_the_markdown_report_does_not_show_them(audit):
    text = to_markdown(audit)
    assert "unlocked_ioctl" not in text and "m_wrapper" not in text
