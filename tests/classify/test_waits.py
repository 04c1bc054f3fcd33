"""Waits under the lock and nested takes (classify/census/waits.py): the shapes
each detector must find, each with the look-alikes it must not.

The C fixtures are inline; a semaphore record is built from a fixture as the audit
gives it: one op per down*()/up() of the lock, with its function and line."""

import re
from pathlib import Path

from classify.census.callgraph import CallGraph, _Edge
from classify.census.waits import nested_takes, waits_under_lock


def variant(text: str, old: str, new: str) -> str:
    """text with old replaced (which must be there: a look-alike that is the
    original would prove nothing)."""
    assert old in text
    return text.replace(old, new)


# the pvcalls-back shape: backend_disconnect() holds socket_lock while
# release_passive() destroys the queue whose work, __accept_work(), takes it
# through new_socket()
PVCALLS = """struct fedata {
	struct semaphore socket_lock;
	struct list_head sockets;
};

struct passive {
	struct fedata *fedata;
	struct workqueue_struct *wq;
	struct work_struct register_work;
	struct list_head list;
};

static struct active *new_socket(struct fedata *fedata)
{
	struct active *map = kzalloc(sizeof(*map), GFP_KERNEL);

	down(&fedata->socket_lock);
	list_add_tail(&map->list, &fedata->sockets);
	up(&fedata->socket_lock);
	return map;
}

static void __accept_work(struct work_struct *work)
{
	struct passive *mappass = container_of(work, struct passive, register_work);

	new_socket(mappass->fedata);
}

static int bind(struct fedata *fedata)
{
	struct passive *map = kzalloc(sizeof(*map), GFP_KERNEL);

	INIT_WORK(&map->register_work, __accept_work);
	map->wq = alloc_workqueue("wq", WQ_UNBOUND, 1);
	return 0;
}

static int accept(struct passive *mappass)
{
	queue_work(mappass->wq, &mappass->register_work);
	return 0;
}

static void release_passive(struct passive *mappass)
{
	sock_release(mappass->sock);
	destroy_workqueue(mappass->wq);
	kfree(mappass);
}

static int disconnect(struct fedata *fedata, struct passive *mappass)
{
	down(&fedata->socket_lock);
	list_del(&mappass->list);
	release_passive(mappass);
	up(&fedata->socket_lock);
	return 0;
}
"""

# the queue destroyed after the release
AFTER_RELEASE = variant(PVCALLS, "\trelease_passive(mappass);\n\tup(&fedata->socket_lock);\n",
                        "\tup(&fedata->socket_lock);\n\trelease_passive(mappass);\n")

# the work no longer reaches new_socket(): it takes nothing
WORK_WITHOUT_LOCK = variant(PVCALLS, "\tnew_socket(mappass->fedata);\n",
                            "\tpr_info(\"accept\\n\");\n")

# the queue destroyed under the lock runs a work that takes another lock; the work
# that takes socket_lock runs on another struct's queue
OTHER_QUEUE = variant(variant(PVCALLS, """static void release_passive""", """struct port {
	struct semaphore port_lock;
	struct workqueue_struct *wq;
	struct work_struct poll_work;
	int irq;
};

static void poll_work(struct work_struct *work)
{
	struct port *port = container_of(work, struct port, poll_work);

	down(&port->port_lock);
	up(&port->port_lock);
}

static irqreturn_t port_thread(int irq, void *data)
{
	struct port *port = data;

	down(&port->port_lock);
	up(&port->port_lock);
	return IRQ_HANDLED;
}

static int port_init(struct port *port)
{
	INIT_WORK(&port->poll_work, poll_work);
	queue_work(port->wq, &port->poll_work);
	return request_threaded_irq(port->irq, NULL, port_thread, 0, "port", port);
}

static void release_port(struct port *port)
{
	free_irq(port->irq, port);
	destroy_workqueue(port->wq);
}

static void release_passive"""), "\trelease_passive(mappass);\n\tup",
                      "\trelease_port(mappass->port);\n\tup")

THREADED_IRQ = """struct chip {
	struct semaphore lock;
	int irq;
};

static irqreturn_t chip_quick(int irq, void *data)
{
	return IRQ_WAKE_THREAD;
}

static irqreturn_t chip_thread(int irq, void *data)
{
	struct chip *chip = data;

	if (down_interruptible(&chip->lock))
		return IRQ_NONE;
	chip_read(chip);
	up(&chip->lock);
	return IRQ_HANDLED;
}

static int chip_probe(struct chip *chip)
{
	return devm_request_threaded_irq(chip->dev, chip->irq, chip_quick, chip_thread,
					 IRQF_ONESHOT, "chip", chip);
}

static void chip_remove(struct chip *chip)
{
	down(&chip->lock);
	chip_reset(chip);
	free_irq(chip->irq, chip);
	up(&chip->lock);
}
"""

KTHREAD = """struct mon {
	struct semaphore sem;
	struct task_struct *task;
};

static int mon_thread(void *data)
{
	struct mon *mon = data;

	while (!kthread_should_stop()) {
		down(&mon->sem);
		mon_poll(mon);
		up(&mon->sem);
	}
	return 0;
}

static int mon_start(struct mon *mon)
{
	mon->task = kthread_run(mon_thread, mon, "mon");
	return 0;
}

static void mon_stop(struct mon *mon)
{
	down(&mon->sem);
	if (mon->task)
		kthread_stop(mon->task);
	up(&mon->sem);
}
"""

# only a trylock in the thread: it never waits for the holder
KTHREAD_TRYLOCK = variant(
    KTHREAD, "\t\tdown(&mon->sem);\n\t\tmon_poll(mon);\n\t\tup(&mon->sem);\n",
    "\t\tif (!down_trylock(&mon->sem)) {\n\t\t\tmon_poll(mon);\n\t\t\tup(&mon->sem);\n\t\t}\n")

_OP_RX = re.compile(r"\b(down\w*|up)\s*\(\s*&\s*[\w>.-]*?\b{}\s*\)")
_HEAD_RX = re.compile(r"^[a-z][\w\s\*]*?\b(\w+)\s*\(")


def record(text: str, lock: str, path: str = "drivers/x/x.c", struct: str = "x") -> dict:
    """A semaphore record as the audit writes it: every down*()/up() of lock."""
    ops, func = [], ""
    rx = re.compile(_OP_RX.pattern.format(re.escape(lock)))
    for n, line in enumerate(text.splitlines(), 1):
        head = _HEAD_RX.match(line)
        if head and not line.rstrip().endswith(";"):
            func = head.group(1)
        for m in rx.finditer(line):
            ops.append({"function": func, "line": n, "op": m.group(1), "path": path,
                        "balanced": True})
    return {"id": f"{path}:{struct}.{lock}", "class": "mutex", "ops": ops}


def run(text: str, lock: str, path: str = "drivers/x/x.c"):
    sem = record(text, lock, path)
    return waits_under_lock(sem, {path: text}.__getitem__)


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


# ---- waits: the shapes that must be found

def test_the_pvcalls_shape_is_found() -> None:
    found = run(PVCALLS, "socket_lock")
    assert len(found) == 1
    f = found[0]
    at = "drivers/x/x.c:"
    assert (f.holder, f.take, f.wait, f.wait_at, f.via) == (
        "disconnect", at + str(line_of(PVCALLS, "list_del(&mappass->list)") - 1),
        "destroy_workqueue", at + str(line_of(PVCALLS, "destroy_workqueue")),
        ("release_passive",))
    assert (f.waited, f.what, f.registered_with, f.registered_at) == (
        "__accept_work", "work item", "INIT_WORK", at + str(line_of(PVCALLS, "INIT_WORK")))
    assert (f.taken_in, f.taken_at) == ("new_socket", at + str(line_of(PVCALLS, "down(")))
    assert f.tied and f.lockdep
    assert f.sentence() == (
        f"disconnect() holds socket_lock while release_passive() calls destroy_workqueue() "
        f"({f.wait_at}); the work item __accept_work() it waits for takes socket_lock in "
        f"new_socket() ({f.taken_at}): this deadlock exists with the semaphore too, and "
        "lockdep reports it once the lock is a mutex.")
    assert f.to_json()["via"] == ["release_passive"] and f.to_json()["sentence"] == f.sentence()


def test_free_irq_waits_for_the_threaded_handler_that_takes_the_lock() -> None:
    found = run(THREADED_IRQ, "lock")
    assert [(f.holder, f.wait, f.waited, f.what, f.tied, f.lockdep) for f in found] == [
        ("chip_remove", "free_irq", "chip_thread", "threaded irq handler", True, False)]
    assert "lockdep does not track this wait" in found[0].sentence()


def test_kthread_stop_waits_for_the_thread_that_takes_the_lock() -> None:
    found = run(KTHREAD, "sem")
    assert [(f.holder, f.wait, f.waited, f.what, f.registered_with) for f in found] == [
        ("mon_stop", "kthread_stop", "mon_thread", "kthread", "kthread_run")]


# ---- waits: the look-alikes that must not

def test_a_wait_after_the_release_is_not_found() -> None:
    assert run(AFTER_RELEASE, "socket_lock") == []


def test_a_work_that_does_not_take_the_lock_is_not_found() -> None:
    assert run(WORK_WITHOUT_LOCK, "socket_lock") == []


def test_waits_for_work_and_irq_that_take_another_lock_are_not_found() -> None:
    # free_irq() and destroy_workqueue() of the port run under socket_lock; their
    # functions take port_lock, and __accept_work(), which takes socket_lock, is
    # queued on the passive socket's queue, not the port's
    assert run(OTHER_QUEUE, "socket_lock") == []


def test_free_irq_after_the_release_or_of_a_handler_taking_another_lock_is_not_found() -> None:
    moved = variant(THREADED_IRQ, "\tfree_irq(chip->irq, chip);\n\tup(&chip->lock);\n",
                    "\tup(&chip->lock);\n\tfree_irq(chip->irq, chip);\n")
    assert run(moved, "lock") == []
    other = variant(variant(THREADED_IRQ, "down_interruptible(&chip->lock)",
                            "down_interruptible(&chip->other)"),
                    "\tup(&chip->lock);\n\treturn", "\tup(&chip->other);\n\treturn")
    assert run(other, "lock") == []


def test_kthread_stop_of_a_thread_that_only_trylocks_is_not_found() -> None:
    assert run(KTHREAD_TRYLOCK, "sem") == []


def test_a_wait_on_a_plain_variable_may_wait_for_any_and_says_so() -> None:
    # kthread_stop(task): nothing ties the variable to mon->task; every kthread of
    # the file may be the one, and the sentence says "may"
    plain = variant(KTHREAD, "\tif (mon->task)\n\t\tkthread_stop(mon->task);\n",
                    "\ttask = mon->task;\n\tkthread_stop(task);\n")
    found = run(plain, "sem")
    assert [(f.waited, f.tied) for f in found] == [("mon_thread", False)]
    assert "it may wait for the kthread mon_thread() (registered at drivers/x/x.c:" \
        in found[0].sentence() and ": if it does, this deadlock exists" in found[0].sentence()
    # a member no registration of the file names: nothing the file runs
    assert run(variant(KTHREAD, "kthread_stop(mon->task)", "kthread_stop(mon->helper)"),
               "sem") == []


# chip_remove() takes the lock through lock_chip(), gives it back through
# unlock_chip(), and relax() drops and retakes it in between
HELPERS = variant(variant(THREADED_IRQ, "static void chip_remove", """\
static void lock_chip(struct chip *chip)
{
	down(&chip->lock);
}

static void unlock_chip(struct chip *chip)
{
	up(&chip->lock);
}

static void relax(struct chip *chip)
{
	up(&chip->lock);
	msleep(1);
	down(&chip->lock);
}

static void chip_remove"""),
                  "\tdown(&chip->lock);\n\tchip_reset(chip);\n\tfree_irq(chip->irq, chip);\n"
                  "\tup(&chip->lock);\n",
                  "\tlock_chip(chip);\n\trelax(chip);\n\tfree_irq(chip->irq, chip);\n"
                  "\tunlock_chip(chip);\n")


def helper_record(text: str) -> dict:
    """The record of HELPERS: the down()s of lock_chip() and relax() are not
    released there (the audit's balanced false)."""
    sem = record(text, "lock")
    for op in sem["ops"]:
        op["balanced"] = op["function"] not in ("lock_chip", "relax")
    return sem


def test_a_helper_that_returns_holding_the_lock_takes_it() -> None:
    # relax() drops and retakes it: not a second take, and still held after it
    sem = helper_record(HELPERS)
    found = waits_under_lock(sem, {"drivers/x/x.c": HELPERS}.__getitem__)
    assert [(f.holder, f.take, f.wait) for f in found] == [
        ("chip_remove", f"drivers/x/x.c:{line_of(HELPERS, 'lock_chip(chip);')}", "free_irq")]
    assert nested_takes(sem, {"drivers/x/x.c": HELPERS}.__getitem__) == []


def test_a_wait_after_the_helper_that_releases_it_is_not_found() -> None:
    moved = variant(HELPERS, "\tfree_irq(chip->irq, chip);\n\tunlock_chip(chip);\n",
                    "\tunlock_chip(chip);\n\tfree_irq(chip->irq, chip);\n")
    assert waits_under_lock(helper_record(moved), {"drivers/x/x.c": moved}.__getitem__) == []


def test_an_up_in_an_error_branch_that_returns_does_not_end_the_region() -> None:
    early = variant(THREADED_IRQ, "\tchip_reset(chip);\n",
                    "\tif (chip_reset(chip)) {\n\t\tup(&chip->lock);\n\t\treturn;\n\t}\n")
    assert [f.wait for f in run(early, "lock")] == ["free_irq"]
    # and one in an if branch does not release its else branch
    branch = variant(THREADED_IRQ, "\tfree_irq(chip->irq, chip);\n",
                     "\tif (chip->gone)\n\t\tup(&chip->lock);\n"
                     "\telse\n\t\tfree_irq(chip->irq, chip);\n")
    assert [f.wait for f in run(branch, "lock")] == ["free_irq"]


def test_a_take_in_another_file_is_found_through_the_call_graph() -> None:
    # a.c's work reaches b.c's take_it() through c.c's helper(), a file the
    # semaphore's ops are not in: only the call graph knows the way
    a = """struct dev {
	struct semaphore lock;
	struct workqueue_struct *wq;
	struct work_struct work;
};

static void dev_work(struct work_struct *work)
{
	helper(container_of(work, struct dev, work));
}

static int dev_init(struct dev *dev)
{
	INIT_WORK(&dev->work, dev_work);
	queue_work(dev->wq, &dev->work);
	return 0;
}

static void dev_exit(struct dev *dev)
{
	down(&dev->lock);
	flush_workqueue(dev->wq);
	up(&dev->lock);
}
"""
    b = """void take_it(struct dev *dev)
{
	down(&dev->lock);
	up(&dev->lock);
}
"""
    sem = record(a, "lock", "a.c", "dev")
    sem["ops"] += record(b, "lock", "b.c", "dev")["ops"]
    texts = {"a.c": a, "b.c": b}
    assert waits_under_lock(sem, texts.__getitem__) == []
    graph = CallGraph(Path("."), callers={
        ("b.c", "take_it"): [_Edge(("c.c", "helper"), "c.c:3 helper() calls take_it()", False, 3)],
        ("c.c", "helper"): [_Edge(("a.c", "dev_work"), "a.c:9 dev_work() calls helper()",
                                  False, 9)],
    })
    found = waits_under_lock(sem, texts.__getitem__, graph)
    assert [(f.holder, f.wait, f.waited, f.taken_in, f.taken_at) for f in found] == [
        ("dev_exit", "flush_workqueue", "dev_work", "take_it", "b.c:3")]


# ---- nesting: several instances of the lock held at once

NODE = """struct node {
	struct semaphore lock;
	struct list_head list;
	struct list_head children;
};

"""

LOCK_ALL = NODE + """static void lock_all(struct node *parent)
{
	struct node *child;

	list_for_each_entry(child, &parent->children, list) {
		poke(child);
		down(&child->lock);
	}
}
"""

MOVE = NODE + """static void move(struct node *from, struct node *to)
{
	down(&from->lock);
	down(&to->lock);
	list_move(&from->list, &to->children);
	up(&to->lock);
	up(&from->lock);
}
"""

POKE_PARENT = NODE + """static void poke_one(struct node *n)
{
	down(&n->lock);
	poke(n);
	up(&n->lock);
}

static void poke_parent(struct node *parent, struct node *child)
{
	down(&parent->lock);
	poke_one(child);
	up(&parent->lock);
}
"""


def nests(text: str):
    sem = record(text, "lock", "n.c", "node")
    return [(f.how, f.holder, f.first, f.second, f.via)
            for f in nested_takes(sem, {"n.c": text}.__getitem__)]


def test_a_take_in_a_loop_that_keeps_it_is_found() -> None:
    assert nests(LOCK_ALL) == [("loop", "lock_all", "&child->lock", "&child->lock", ())]
    single = variant(LOCK_ALL, "list) {\n\t\tpoke(child);\n\t\tdown(&child->lock);\n\t}",
                     "list)\n\t\tdown(&child->lock);")
    assert nests(single) == [("loop", "lock_all", "&child->lock", "&child->lock", ())]


def test_a_take_in_a_loop_that_releases_or_leaves_is_not() -> None:
    released = "\t\tdown(&child->lock);\n\t\tpoke(child);\n\t\tup(&child->lock);\n"
    assert nests(variant(LOCK_ALL, "\t\tdown(&child->lock);\n", released)) == []
    assert nests(variant(LOCK_ALL, "\t\tdown(&child->lock);\n",
                         "\t\tdown(&child->lock);\n\t\tbreak;\n")) == []


def test_a_second_take_while_holding_is_found() -> None:
    assert nests(MOVE) == [("again", "move", "&from->lock", "&to->lock", ())]
    assert nests(POKE_PARENT) == [("again", "poke_parent", "&parent->lock", "&n->lock",
                                   ("poke_one",))]
    f = nested_takes(record(MOVE, "lock", "n.c", "node"), {"n.c": MOVE}.__getitem__)[0]
    assert f.sentence().startswith("move() holds lock (&from->lock, n.c:9) while it takes "
                                   "it again (&to->lock, n.c:10): lockdep reports")


def test_takes_one_after_another_or_in_exclusive_branches_are_not() -> None:
    assert nests(variant(MOVE, "\tdown(&from->lock);\n\tdown(&to->lock);\n",
                         "\tdown(&from->lock);\n\tup(&from->lock);\n\tdown(&to->lock);\n")) == []
    assert nests(variant(POKE_PARENT, "\tpoke_one(child);\n\tup(&parent->lock);\n",
                         "\tup(&parent->lock);\n\tpoke_one(child);\n")) == []
    assert nests(variant(MOVE, "\tdown(&from->lock);\n\tdown(&to->lock);\n",
                         "\tif (from->first)\n\t\tdown(&from->lock);\n"
                         "\telse\n\t\tdown(&to->lock);\n")) == []
