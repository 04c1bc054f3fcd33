"""The call graph and execution contexts (classify/census/callgraph.py): each ops
table and registration kind is caught, and their look-alikes are not."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smalltree import git_tree  # noqa: E402

from classify.census import take_census
from classify.census.callgraph import build_callgraph
from classify.census.callsites import scan_callsites
from classify.facts import Cache

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "work" / "linux-6.1"

SEM = "static DEFINE_SEMAPHORE(sem);\n"

FILES = {
    "drivers/a/ops.c": SEM + """
static void fo_helper(void) { if (down_trylock(&sem)) return; up(&sem); }
static int f_open(struct inode *i, struct file *f) { fo_helper(); return 0; }
static const struct file_operations f_fops = {
	.owner = THIS_MODULE,
	.open = f_open,
};
static int p_probe(struct pci_dev *pdev, const struct pci_device_id *id) { down(&sem); up(&sem); return 0; }
static struct pci_driver p_driver = { .name = "p", .probe = p_probe, };
static int n_open(struct net_device *d) { down(&sem); up(&sem); return 0; }
static netdev_tx_t n_xmit(struct sk_buff *skb, struct net_device *d) { up(&sem); return 0; }
static const struct net_device_ops n_ops = { .ndo_open = n_open, .ndo_start_xmit = n_xmit };
static void e_reset_done(struct pci_dev *pdev) { up(&sem); }
static const struct pci_error_handlers e_err = { .reset_done = e_reset_done };
static int u_bar(struct foo *f) { up(&sem); return 0; }
static const struct foo_ops u_ops = { .bar = u_bar };
static ssize_t level_show(struct device *d, struct device_attribute *a, char *b) { up(&sem); return 0; }
static DEVICE_ATTR_RO(level);
""",
    "drivers/a/irq.c": SEM + """
static irqreturn_t a_isr(int irq, void *d) { up(&sem); return IRQ_HANDLED; }
static irqreturn_t b_hard(int irq, void *d) { up(&sem); return IRQ_WAKE_THREAD; }
static irqreturn_t b_thread(int irq, void *d) { down(&sem); up(&sem); return IRQ_HANDLED; }
static irqreturn_t c_isr(int irq, void *d) { up(&sem); return IRQ_HANDLED; }
static irqreturn_t d_hard(int irq, void *d) { up(&sem); return IRQ_HANDLED; }
static irqreturn_t d_thread(int irq, void *d) { down(&sem); up(&sem); return IRQ_HANDLED; }
static irqreturn_t e_isr(int irq, void *d) { up(&sem); return IRQ_HANDLED; }
static void t_fn(struct timer_list *t) { up(&sem); }
static void k_fn(struct tasklet_struct *t) { up(&sem); }
static void k_old(unsigned long d) { up(&sem); }
static void w_fn(struct work_struct *w) { down(&sem); up(&sem); }
static void dw_fn(struct work_struct *w) { down(&sem); up(&sem); }
static void ws_fn(struct work_struct *w) { down(&sem); up(&sem); }
static int th_fn(void *d) { down(&sem); up(&sem); return 0; }
static int tc_fn(void *d) { down(&sem); up(&sem); return 0; }
static int setup(struct device *dev, struct x *x)
{
	request_irq(x->irq, &a_isr, 0, "a", x);
	request_threaded_irq(x->irq, b_hard, b_thread, 0, "b", x);
	devm_request_irq(dev, x->irq, c_isr, 0, "c", x);
	devm_request_threaded_irq(dev, x->irq, d_hard, d_thread, 0, "d", x);
	timer_setup(&x->t, t_fn, 0);
	tasklet_setup(&x->k, k_fn);
	tasklet_init(&x->k2, k_old, 0);
	INIT_WORK(&x->w, w_fn);
	INIT_DELAYED_WORK(&x->dw, dw_fn);
	INIT_WORK_ONSTACK(&x->ws, ws_fn);
	kthread_run(th_fn, x, "th");
	kthread_create(tc_fn, x, "tc");
	return 0;
}
static irqreturn_t never_isr(int irq, void *d) { up(&sem); return IRQ_HANDLED; }
static void stored_fn(void) { up(&sem); }
static void store_it(struct x *x) { x->cb = stored_fn; e_isr(0, NULL); }
static void store_init(struct x *x) { x->cb2 = e_isr; }
module_init(setup_mod);
""",
    "drivers/a/sync.c": SEM + """
static int reclaim_one(struct device *dev, void *data) { down(&sem); up(&sem); return 0; }
static unsigned long sh_count(struct shrinker *s, struct shrink_control *sc)
{
	bus_for_each_dev(&my_bus, NULL, NULL, reclaim_one);
	return 0;
}
static struct shrinker sh = {
	.count_objects = sh_count,
	.seeks = DEFAULT_SEEKS,
};
static void under_lock(void) { if (down_trylock(&sem)) return; up(&sem); }
static void no_lock(void) { if (down_trylock(&sem)) return; up(&sem); }
static void early_exit(void) { if (down_trylock(&sem)) return; up(&sem); }
static void locker(struct x *x)
{
	unsigned long flags;

	spin_lock_init(&x->lock);
	spin_lock_irqsave(&x->lock, flags);
	if (x->bad) {
		spin_unlock_irqrestore(&x->lock, flags);
		return;
	}
	early_exit();
	spin_unlock_irqrestore(&x->lock, flags);
	no_lock();
	spin_lock(&x->lock);
	under_lock();
	spin_unlock(&x->lock);
}
static struct file_operations l_fops = { .unlocked_ioctl = locker_ioctl };
static long locker_ioctl(struct file *f, unsigned int c, unsigned long a) { locker(f->private_data); return 0; }
void shared_helper(void) { down(&sem); up(&sem); }
void exported_entry(void) { shared_helper(); }
EXPORT_SYMBOL(exported_entry);
void remote_only(void) { down(&sem); up(&sem); }
""",
    "drivers/b/user.c": """
static int b_probe(struct platform_device *pdev) { remote_only(); return 0; }
static struct platform_driver b_driver = { .probe = b_probe };
static void shared_helper(void) { }
static irqreturn_t b_isr(int irq, void *d) { shared_helper(); return IRQ_HANDLED; }
static int b_init(struct device *dev) { return devm_request_irq(dev, 1, b_isr, 0, "b", NULL); }
""",
}


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    root = tmp_path_factory.mktemp("cgtree")
    git_tree(root, FILES)
    census = take_census(root)
    return build_callgraph(census, root, cache=Cache(tmp_path_factory.mktemp("cgcache")))


def ctx(graph, rel, func):
    return graph.contexts(rel, func)


@pytest.mark.parametrize("rel,func,expected,via", [
    ("drivers/a/ops.c", "fo_helper", {"process"}, "file_operations.open"),
    ("drivers/a/ops.c", "p_probe", {"process"}, "pci_driver.probe"),
    ("drivers/a/ops.c", "n_open", {"process"}, "net_device_ops.ndo_open"),
    ("drivers/a/ops.c", "n_xmit", {"softirq"}, "net_device_ops.ndo_start_xmit"),
    ("drivers/a/ops.c", "e_reset_done", {"process"}, "pci_error_handlers.reset_done"),
    ("drivers/a/ops.c", "level_show", {"process"}, "device_attribute.show"),
    ("drivers/a/irq.c", "a_isr", {"hardirq"}, "request_irq"),
    ("drivers/a/irq.c", "b_hard", {"hardirq"}, "request_threaded_irq"),
    ("drivers/a/irq.c", "b_thread", {"process"}, "request_threaded_irq"),
    ("drivers/a/irq.c", "c_isr", {"hardirq"}, "devm_request_irq"),
    ("drivers/a/irq.c", "d_hard", {"hardirq"}, "devm_request_threaded_irq"),
    ("drivers/a/irq.c", "d_thread", {"process"}, "devm_request_threaded_irq"),
    ("drivers/a/irq.c", "t_fn", {"softirq"}, "timer_setup"),
    ("drivers/a/irq.c", "k_fn", {"softirq"}, "tasklet_setup"),
    ("drivers/a/irq.c", "k_old", {"softirq"}, "tasklet_init"),
    ("drivers/a/irq.c", "w_fn", {"process"}, "INIT_WORK"),
    ("drivers/a/irq.c", "dw_fn", {"process"}, "INIT_DELAYED_WORK"),
    ("drivers/a/irq.c", "ws_fn", {"process"}, "INIT_WORK_ONSTACK"),
    ("drivers/a/irq.c", "th_fn", {"process"}, "kthread_run"),
    ("drivers/a/irq.c", "tc_fn", {"process"}, "kthread_create"),
    ("drivers/a/sync.c", "reclaim_one", {"process"}, "shrinker.count_objects"),
    ("drivers/a/sync.c", "remote_only", {"process"}, "platform_driver.probe"),
])
def test_known_context_is_found(graph, rel, func, expected, via):
    got = ctx(graph, rel, func)
    assert got.contexts == frozenset(expected), got
    assert not got.atomic_path
    assert any(via in hop for hop in got.chain), got.chain


def test_synchronous_callback_takes_the_context_of_its_passer(graph):
    got = ctx(graph, "drivers/a/sync.c", "reclaim_one")
    assert "bus_for_each_dev" in got.chain[-1] and "sh_count" in got.chain[-1]
    assert got.chain[0].startswith("drivers/a/sync.c:")


@pytest.mark.parametrize("rel,func,why", [
    ("drivers/a/irq.c", "never_isr", "no caller"),       # named like a handler, never registered
    ("drivers/a/irq.c", "stored_fn", "is x.cb: its context is not known"),  # typed store
    ("drivers/a/ops.c", "u_bar", "foo_ops.bar"),         # a table the graph does not know
    ("drivers/a/sync.c", "shared_helper", "exported"),   # its caller is exported
])
def test_unknown_roots_give_unknown(graph, rel, func, why):
    got = ctx(graph, rel, func)
    assert "unknown" in got.contexts, got
    assert "process" not in got.contexts and "hardirq" not in got.contexts
    assert any(why in hop for hop in got.chain), got.chain


def test_a_called_and_stored_handler_is_not_process_only(graph):
    got = ctx(graph, "drivers/a/irq.c", "e_isr")
    assert got.contexts == {"unknown"}


def test_call_under_a_spinlock_is_atomic(graph):
    got = ctx(graph, "drivers/a/sync.c", "under_lock")
    assert got.contexts == {"process"} and got.atomic_path
    assert "under a lock" in got.chain[-1]
    assert "file_operations.unlocked_ioctl" in got.chain[0]


def test_call_after_the_unlock_is_not_atomic(graph):
    got = ctx(graph, "drivers/a/sync.c", "no_lock")
    assert got.contexts == {"process"} and not got.atomic_path


def test_unlock_on_an_exit_path_does_not_end_the_lock(graph):
    got = ctx(graph, "drivers/a/sync.c", "early_exit")
    assert got.atomic_path


def test_static_function_of_the_same_name_elsewhere_is_not_a_caller(graph):
    # drivers/b/user.c has its own static shared_helper() called from an irq handler
    got = ctx(graph, "drivers/a/sync.c", "shared_helper")
    assert "hardirq" not in got.contexts


def test_not_in_graph_is_unknown(graph):
    got = ctx(graph, "drivers/a/ops.c", "no_such_function")
    assert got.contexts == {"unknown"} and not got.atomic_path


def test_callsites_records_kinds():
    text = """static void f(void) { g(1, h); spin_lock(&l); k(); }
static struct pci_driver d = { .probe = pr, };
static struct foo x[] = { { .cb = q }, };
"""
    refs = {(r[0], r[3], r[4], r[5]) for r in scan_callsites("x.c", text)["refs"]}
    assert ("g", "call", "", 0) in refs
    assert ("h", "arg", "g/1", 0) in refs
    assert ("k", "call", "", 1) in refs
    assert ("pr", "field", "pci_driver.probe", 0) in refs
    assert ("q", "field", "foo.cb", 0) in refs


def real_tree():
    from classify.tree import TreeError, check_kernel_tree
    try:
        return check_kernel_tree(TREE)
    except TreeError as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def real_graph():
    tree = real_tree()
    census = take_census(tree.path, cache=Cache(REPO / "work" / "cache"))
    return build_callgraph(census, tree.path, cache=Cache(REPO / "work" / "cache"))


@pytest.mark.slow
def test_real_bnx2x_prev_is_path_marked_is_process_from_probe(real_graph):
    got = real_graph.contexts("drivers/net/ethernet/broadcom/bnx2x/bnx2x_main.c",
                              "bnx2x_prev_is_path_marked")
    assert got.contexts == {"process"} and not got.atomic_path
    chains = real_graph.root_chains("drivers/net/ethernet/broadcom/bnx2x/bnx2x_main.c",
                                    "bnx2x_prev_is_path_marked")
    assert any("bnx2x_init_one() is pci_driver.probe (process)" in c[0] for c in chains)


@pytest.mark.slow
def test_real_backend_reclaim_memory_is_process_from_a_shrinker(real_graph):
    got = real_graph.contexts("drivers/xen/xenbus/xenbus_probe_backend.c",
                              "backend_reclaim_memory")
    assert got.contexts == {"process"}
    assert "shrinker.count_objects" in got.chain[0]
    assert "bus_for_each_dev" in got.chain[-1]


@pytest.mark.slow
def test_real_hp_sdc_irq_handler_is_hardirq(real_graph):
    got = real_graph.contexts("drivers/input/serio/hp_sdc.c", "hp_sdc_take")
    assert got.contexts == {"hardirq"}
    assert "request_irq" in got.chain[0] and "hp_sdc_isr" in got.chain[0]


def test_an_i2c_slave_callback_and_a_pci_irq_handler_run_in_interrupt_context():
    from classify.census.contexts import HARDIRQ, PROCESS, registration_context
    assert registration_context("i2c_slave_register", 1) == HARDIRQ
    assert registration_context("pci_request_irq", 2) == HARDIRQ
    assert registration_context("pci_request_irq", 3) == PROCESS   # the thread
    # look-alike: a function that calls what it is given at once is no registration
    assert registration_context("bus_for_each_dev", 3) == ""
