"""What a lock protects (classify.convert.protects): the members of its struct
that the code changes while holding it, said in the definition's comment."""

from classify.convert import layout
from classify.convert.protects import guarded_members

SRC = """\
struct dev {
	struct device *parent;
	spinlock_t irq_lock;
	struct list_head items;
	int count;
	unsigned int flags;
	struct semaphore lock;
};

static int add(struct dev *d, struct item *it)
{
	down(&d->lock);
	if (d->count > 10) {
		up(&d->lock);
		return -EBUSY;
	}
	d->count++;
	list_add(&it->node, &d->items);
	dev_info(d->parent, "added\\n");
	set_bit(2, &d->flags);
	spin_lock(&d->irq_lock);
	spin_unlock(&d->irq_lock);
	up(&d->lock);
	d->flags = 0;
	return 0;
}
"""


def _sem(ops, kind="member"):
    return {"id": "drivers/x/x.c:dev.lock",
            "declared": {"path": "drivers/x/x.c", "kind": kind, "struct": "dev", "line": 7},
            "ops": [{"path": "drivers/x/x.c", "line": n, "op": op, "function": "add"}
                    for n, op in ops]}


def test_members_changed_under_the_lock_are_what_it_protects():
    sem = _sem([(12, "down"), (14, "up"), (23, "up")])
    # count and items change under it (the early return's up() does not end the
    # region); the parent pointer is only read, the spinlock is a lock, flags
    # changes under it only by an atomic bit operation, and after the release
    assert guarded_members(sem, lambda p: SRC) == ["count", "items"]


def test_a_bitmap_written_under_the_lock_is_what_it_protects():
    # hinic's mgmt_lock: bitmap_set() of the member under the lock; a
    # find_next_bit() only reads it
    src = SRC.replace("\tunsigned int flags;", "\tunsigned long *vlans;\n\tunsigned int flags;")
    src = src.replace("\td->count++;", "\tbitmap_set(d->vlans, 3, 1);")
    sem = _sem([(13, "down"), (15, "up"), (24, "up")])
    assert guarded_members(sem, lambda p: src) == ["vlans", "items"]
    read = src.replace("bitmap_set(d->vlans, 3, 1)", "find_next_bit(d->vlans, 8, 1)")
    assert guarded_members(sem, lambda p: read) == ["items"]


def test_a_lock_that_is_no_member_or_never_released_protects_nothing_said():
    assert guarded_members(_sem([(12, "down"), (23, "up")], kind="static"),
                           lambda p: SRC) == []
    assert guarded_members(_sem([(12, "down")]), lambda p: SRC) == []


def test_the_definition_comment_says_what_it_protects_else_who_takes_it():
    text = "struct dev {\n\tstruct mutex lock;\n};\n"
    assert "\tstruct mutex lock; /* protects count and items */" in \
        layout.definition_comment(text, 2, ["add"], ["count", "items"])
    assert "\tstruct mutex lock; /* serialises add() */" in \
        layout.definition_comment(text, 2, ["add"])


def test_a_member_changed_without_the_lock_too_is_not_what_it_protects():
    src = SRC + """
static void reset(struct dev *d)
{
	d->count = 0;
}

static void init(struct dev *d)
{
	INIT_LIST_HEAD(&d->items);
	sema_init(&d->lock, 1);
}
"""
    sem = _sem([(12, "down"), (14, "up"), (23, "up")])
    sem["init"] = [{"path": "drivers/x/x.c", "line": 36}]
    # count is reset without the lock; items is only set up where the lock is
    assert guarded_members(sem, lambda p: src) == ["items"]


FREE_LIST = """\
static char *g_free;
static int g_count;
char *g_shared;
static DEFINE_SEMAPHORE(g_free_lock);

static int setup(void)
{
	g_free = base;
	sema_init(&g_other, 4);
	return 0;
}

static char *take(void)
{
	char *f;

	down(&g_free_lock);
	f = g_free;
	g_free = *(char **)g_free;
	g_shared = f;
	g_count++;
	up(&g_free_lock);
	return f;
}

static void count_up(void)
{
	g_count = 0;
}
"""


def _global_sem():
    return {"id": "drivers/x/v.c:g_free_lock",
            "declared": {"path": "drivers/x/v.c", "kind": "static", "line": 4},
            "ops": [{"path": "drivers/x/v.c", "line": n, "op": op, "function": "take"}
                    for n, op in ((17, "down"), (22, "up"))]}


def test_a_static_lock_protects_the_static_variables_changed_only_under_it():
    from classify.convert.protects import guarded_globals
    # g_free changes under the lock, and in setup(), which initialises the
    # file's locks; g_count also changes without it; g_shared is global
    assert guarded_globals(_global_sem(), lambda p: FREE_LIST) == ["g_free"]
    # look-alike: the same change of g_free in a function that initialises nothing
    unlocked = FREE_LIST.replace("\tsema_init(&g_other, 4);\n", "")
    assert guarded_globals(_global_sem(), lambda p: unlocked) == []


def test_a_list_head_a_macro_defines_is_a_static_variable_too():
    # bnx2x's prev list: LIST_HEAD() defines it, list_add() changes it under the
    # lock, a list walk only reads it, the module's __exit function empties it
    from classify.convert.protects import guarded_globals
    src = (FREE_LIST.replace("static int g_count;", "static LIST_HEAD(g_list);")
           .replace("\tg_count++;", "\tlist_add(&e->node, &g_list);")
           + "\nstatic void walk(void)\n{\n\tlist_for_each_entry(e, &g_list, node)\n"
             "\t\tx(e);\n}\n\nstatic void __exit bye(void)\n{\n\tlist_del(&g_list);\n}\n")
    assert guarded_globals(_global_sem(), lambda p: src) == ["g_free", "g_list"]
    # look-alike: changed in a function that is neither the lock's nor an exit
    changed = src.replace("static void __exit bye", "static void bye")
    assert guarded_globals(_global_sem(), lambda p: changed) == ["g_free"]


def test_the_file_s_comment_above_is_said_again_with_ours():
    # hinic_hw_wq.h: the comment does not fit on the line; one block, not two
    text = ("struct wqs {\n\tint num_free_blks;\n\n\t/* Lock for getting a free block "
            "from the WQ set */\n\tstruct mutex            alloc_blocks_lock;\n};\n")
    got = layout.definition_comment(text, 5, ["wqs_next_block"], ["num_free_blks"])
    assert ("\t/*\n\t * Lock for getting a free block from the WQ set: protects\n"
            "\t * num_free_blks.\n\t */\n\tstruct mutex            alloc_blocks_lock;\n") in got
    assert got.count("/*") == 1
    # a comment that fits on its line stays there, with ours
    short = text.replace("Lock for getting a free block from the WQ set", "free blocks")
    assert "\t/* free blocks: protects num_free_blks. */\n\tstruct mutex   " in \
        layout.definition_comment(short, 5, ["wqs_next_block"], ["num_free_blks"])


ENTRIES = """\
struct dev {
	struct slot *slots;
	unsigned int flags;
	struct semaphore lock;
};

static void put(struct dev *d, int pos)
{
	down(&d->lock);
	d->slots[pos].page = -1;
	d->flags |= DEV_LINK_UP;
	up(&d->lock);
}

static int alloc(struct dev *d)
{
	d->slots = kcalloc(8, sizeof(*d->slots), GFP_KERNEL);
	d->flags |= DEV_RSS;
	return 0;
}
"""


def test_entries_changed_only_under_the_lock_are_what_it_protects():
    # hinic: free_blocks[] entries change under alloc_blocks_lock, the pointer
    # only where the array is allocated; a flag set without the lock races with
    # one set under it (the read-modify-write of the whole word): flags is not
    sem = _sem([(9, "down"), (12, "up")])
    assert guarded_members(sem, lambda p: ENTRIES) == ["slots[]"]
    # look-alikes: an entry changed elsewhere too; the flags set under it only
    entry = ENTRIES.replace("\treturn 0;", "\td->slots[0].page = 0;\n\treturn 0;")
    assert guarded_members(sem, lambda p: entry) == []
    only = ENTRIES.replace("\td->flags |= DEV_RSS;\n", "")
    assert guarded_members(sem, lambda p: only) == ["slots[]", "flags"]


CALLEES = """\
struct chain {
	int prod;
	int cons;
	int event;
	int plugged;
	void *curr;
	char *buf;
	spinlock_t ev_lock;
	struct semaphore sem;
};

static void prod_inc(struct chain *c)
{
	c->prod++;
}

static void set_event(struct chain *c, int e)
{
	spin_lock(&c->ev_lock);
	c->event = e;
	spin_unlock(&c->ev_lock);
}

static void plug_event(struct chain *c)
{
	c->plugged = 1;
}

static int busy(struct chain *c)
{
	c->cons = hw_cons(c);
	return c->cons == c->prod;
}

static int cmd(struct chain *c)
{
	/* Lock the buf */
	down(&c->sem);
	if (busy(c)) {
		up(&c->sem);
		return -EBUSY;
	}
	prepare(c->buf);
	prod_inc(c);
	set_event(c, 1);
	plug_event(c);
	c->curr = c->buf;
	up(&c->sem);
	return 0;
}

static void init(struct chain *c)
{
	c->prod = 0;
	register_handler(c, plug_event);
	sema_init(&c->sem, 1);
}

static void create_cells(struct chain *c)
{
	c->curr = c->buf;
}

struct chain *create(void)
{
	struct chain *c = kzalloc(sizeof(*c), GFP_KERNEL);

	init(c);
	create_cells(c);
	return c;
}
"""


def _line(text: str, code: str, after: int = 0) -> int:
    return next(n for n, ln in enumerate(text.split("\n"), 1) if n > after and code in ln)


def _chain_sem(text: str) -> dict:
    down = _line(text, "down(&c->sem)")
    ups = [n for n, ln in enumerate(text.split("\n"), 1) if "up(&c->sem)" in ln]
    sem = _sem([(down, "down")] + [(n, "up") for n in ups])
    sem["ops"] = [{**o, "function": "cmd"} for o in sem["ops"]]
    sem["id"], sem["declared"]["struct"] = "drivers/x/x.c:chain.sem", "chain"
    sem["init"] = [{"path": "drivers/x/x.c", "line": _line(text, "sema_init")}]
    return sem


def test_what_the_functions_called_only_under_the_lock_change_is_what_it_protects():
    # hinic's api_cmd(): prod and cons change in helpers called only while the
    # lock is held (and where the object is set up: init() initialises the
    # lock, create() calls it and then create_cells()); event changes under an
    # inner spinlock, which is what protects it; plugged changes in a callback
    # that the set-up registers, which may run anywhere; the comment above the
    # take names buf, which a call writes
    got = guarded_members(_chain_sem(CALLEES), lambda p: CALLEES)
    assert got == ["curr", "prod", "cons", "buf"]
    # look-alikes: the helper also called without the lock; curr also set by a
    # function that is no set-up; no comment
    unlocked = CALLEES.replace("\tc->prod = 0;", "\tprod_inc(c);")
    assert guarded_members(_chain_sem(unlocked), lambda p: unlocked) == ["curr", "cons", "buf"]
    reset = CALLEES.replace("\tinit(c);\n", "")
    assert "curr" not in guarded_members(_chain_sem(reset), lambda p: reset)
    silent = CALLEES.replace("\t/* Lock the buf */\n", "")
    assert guarded_members(_chain_sem(silent), lambda p: silent) == ["curr", "prod", "cons"]


MACROS = """\
struct mgmt {
	u16 msg_id;
	u16 seq;
	struct semaphore lock;
};

#define MSG_ID(m)		((m)->msg_id)
#define MSG_ID_INC(m)		(MSG_ID(m) = \\
				 (MSG_ID(m) + 1) & 0x1FF)
#define SEQ(m)			((m)->seq)

static int send(struct mgmt *m)
{
	down(&m->lock);
	MSG_ID_INC(m);
	send_it(m, SEQ(m));
	up(&m->lock);
	return 0;
}
"""


def test_a_member_a_macro_writes_under_the_lock_is_what_it_protects():
    # hinic's SYNC_MSG_ID_INC(pf_to_mgmt): a macro of a macro writes sync_msg_id
    sem = _sem([(14, "down"), (17, "up")])
    sem["ops"] = [{**o, "function": "send"} for o in sem["ops"]]
    sem["id"], sem["declared"]["struct"] = "drivers/x/x.c:mgmt.lock", "mgmt"
    assert guarded_members(sem, lambda p: MACROS) == ["msg_id"]
    # look-alikes: the macro also used without the lock; a macro that only reads
    unlocked = MACROS + "\nstatic void reset(struct mgmt *m)\n{\n\tMSG_ID_INC(m);\n}\n"
    assert guarded_members(sem, lambda p: unlocked) == []
