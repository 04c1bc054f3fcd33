"""Semaphores reached through helpers and macros: the summaries of functions with a
`struct semaphore *` parameter (census.summaries, classify.calls), the expansion
of function-defining macros (census.expand), the guards of a context fact
(census.guards), and what the committed audits may claim.  Each analysis with a
case it must catch and a look-alike it must leave alone; the single-file cases
are the fixtures helper_param.c, macro_functions.c, guarded_irq.c,
rearmed_event.c and shrinker_store.c."""

import json
import re
from pathlib import Path

import pytest

from classify.audit import run_audit
from classify.census.callsites import scan_callsites
from classify.census.cscan import _function_name, clean_source
from classify.census.branches import released_on_every_path
from classify.census.expand import expand_text
from classify.census.guards import Cond, conditions, exclusive, weigh
from smalltree import git_tree

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# ---- function names the brace scan gives


def test_a_function_named_with_two_underscores_is_a_function():
    assert _function_name("static inline void __down(struct semaphore *semaphore)") == "__down"
    assert _function_name("static int __hid_input_report(struct hid_device *hid,\n"
                          " int x)") == "__hid_input_report"


def test_an_attribute_after_the_parameters_is_not_the_function():
    assert _function_name("int foo(void) __acquires(x)") == "foo"
    assert _function_name("void f(int a) __releases(a) __acquires(b)") == "f"


# ---- function-defining macros, expanded

MACRO = """#define SHOW(_name, _bit)\t\t\\
static int _name##_show(struct dev *d)\t\\
{\t\t\t\t\t\\
\tdown(&d->sem); /* a comment */\t\\
\tput(d, "%d", #_name, _bit);\t\t\\
\tup(&d->sem);\t\t\t\\
\treturn 0;\t\t\t\\
}
SHOW(mode, 1);
SHOW(rate, 2);
int other(void) { return 0; }
"""


def test_each_use_of_a_function_defining_macro_becomes_its_function_on_its_line():
    text, expansions = expand_text(MACRO)
    assert text.count("\n") == MACRO.count("\n")
    lines = text.splitlines()
    assert [(e.line, e.macro, e.functions) for e in expansions] == [
        (9, "SHOW", ("mode_show",)), (10, "SHOW", ("rate_show",))]
    assert lines[8].startswith("static int mode_show(struct dev *d) { down(&d->sem);")
    assert 'put(d, "%d", "mode", 1);' in lines[8] and "comment" not in lines[8]
    assert lines[0].strip() == "" and lines[10] == "int other(void) { return 0; }"


def test_a_macro_used_in_another_define_or_a_function_is_left_alone():
    nested = MACRO + "#define BOTH(_n) SHOW(_n, 3)\n"
    assert expand_text(nested) == (nested, [])
    inside = MACRO.replace("int other(void) { return 0; }",
                           "int other(void) { SHOW(x, 1); return 0; }")
    assert expand_text(inside) == (inside, [])
    plain = "#define TAKE(s) down(&(s)->sem)\nvoid f(struct dev *d) { TAKE(d); }\n"
    assert expand_text(plain) == (plain, [])      # not a function: its uses are its callers


# ---- guards of a context fact

def test_a_release_and_a_registration_under_opposite_tests_exclude_each_other():
    text = clean_source((FIXTURES / "guarded_irq.c").read_text())
    up_line = next(i for i, ln in enumerate(text.splitlines(), 1) if "up(&dev->irq_sem)" in ln)
    reg = next(i for i, ln in enumerate(text.splitlines(), 1) if "vpu_irq, 0" in ln)
    assert conditions(text, up_line) == [Cond("dev->irq<0")]
    assert conditions(text, reg) == [Cond("dev->irq<0", negated=True)]
    why = f"called from vpu_irq(), an interrupt/timer/tasklet callback registered at line {reg}"
    kept, guard = weigh(text, up_line, why)
    assert kept == "" and "only when dev->irq<0" in guard and f"line {reg}" in guard


def test_a_guard_the_registration_does_not_contradict_stays_in_the_evidence():
    text = clean_source((FIXTURES / "guarded_irq.c").read_text())
    up_line = next(i for i, ln in enumerate(text.splitlines(), 1) if "up(&dev->fast_sem)" in ln)
    reg = next(i for i, ln in enumerate(text.splitlines(), 1) if "fast_irq, 0" in ln)
    why = f"in fast_irq(), an interrupt/timer/tasklet callback registered at line {reg}"
    assert weigh(text, up_line, why) == (why + " (only when dev->irq<0)", "")
    assert exclusive([Cond("a->irq>=0")], [Cond("a->irq<0")]) is not None
    assert exclusive([Cond("!x")], [Cond("x", negated=True)]) is None
    assert exclusive([Cond("a<0")], [Cond("b>=0")]) is None


def test_the_interrupt_path_a_guard_excludes_is_not_what_the_verdict_rests_on(shared_cache):
    audit = run_audit(FIXTURES / "guarded_irq.c", shared_cache, nice=0)
    got = {r.decl.id: r.verdict for r in audit.results}
    irq, fast = got["guarded_irq.c:vpu_device.irq_sem"], got["guarded_irq.c:vpu_device.fast_sem"]
    assert "interrupt context" not in " ".join(irq.reasons)
    assert any("not reached from that interrupt" in e for e in irq.evidence)
    assert "released in interrupt context" in " ".join(fast.reasons)
    assert any("(only when dev->irq<0)" in e for e in fast.evidence)


# ---- a release in each branch of an if/else

BRANCHES = """void f(struct b *b)
{
\ttake(&b->lock);
\tif (b->last) {
\t\tfor (i = 0; i < n; i++)
\t\t\tup(&b->wait);
\t\tup(&b->lock);
\t} else {
\t\tup(&b->lock);
\t\ttake(&b->wait);
\t}
}
"""


def test_a_release_in_both_branches_closes_the_take():
    names = frozenset({"take", "up"})
    assert released_on_every_path(BRANCHES, 3, [7, 9], names)
    one_branch = BRANCHES.replace("\t\tup(&b->lock);\n\t} else", "\t} else")
    assert not released_on_every_path(one_branch, 3, [8], names)
    leaves = BRANCHES.replace("\t} else {\n", "\t} else {\n\t\tif (b->x)\n\t\t\treturn;\n")
    assert not released_on_every_path(leaves, 3, [7, 11], names)


# ---- a callback stored through a typed pointer

def test_a_store_through_a_declared_struct_pointer_names_its_field():
    text = (FIXTURES / "shrinker_store.c").read_text()
    refs = {(r[0], r[3], r[4]) for r in scan_callsites("shrinker_store.c", text)["refs"]}
    assert ("reclaim_count", "field", "shrinker.count_objects") in refs
    assert ("opaque_count", "store", ")->count") in refs


# ---- summaries across files

HEADER = """#include <linux/semaphore.h>
static inline void sem_take(struct semaphore *s)
{
\twhile (down_interruptible(s))
\t\tcpu_relax();
}
static inline void sem_give(struct semaphore *s)
{
\tup(s);
}
"""

USER = """#include <linux/semaphore.h>
#include "lib/semhelp.h"
struct dev { struct semaphore lock; struct semaphore other; };
static void dev_init(struct dev *d)
{
\tsema_init(&d->lock, 1);
\tsema_init(&d->other, 1);
}
static void dev_work(struct dev *d)
{
\tsem_take(&d->lock);
\tdo_work(d);
\tsem_give(&d->lock);
}
static void dev_other(struct dev *d)
{
\tsem_take(&d->other);
\tdo_work(d);
\tup(&d->other);
\tpeek(&d->other);
}
"""

TWICE = """#include <linux/semaphore.h>
void peek(struct semaphore *s) { down(s); up(s); }
"""


def test_a_helper_of_a_header_is_applied_in_each_file_that_calls_it(tmp_path):
    """sem_take()/sem_give() of a header: lock is taken and given back through them,
    a mutex, with both helpers named.  other's address also goes to peek(), which
    two files define: not followed, named, and other stays unknown."""
    root = git_tree(tmp_path / "t", {"lib/semhelp.h": HEADER, "drivers/dev.c": USER,
                                     "drivers/a.c": TWICE, "drivers/b.c": TWICE})
    audit = run_audit(root, tmp_path / "cache", nice=0)
    got = {r.decl.id: r for r in audit.results}
    lock = got["drivers/dev.c:dev.lock"]
    assert lock.verdict.cls == "mutex", lock.verdict.reasons
    assert "drivers/dev.c:11: down_interruptible() in dev_work() through sem_take()" \
        in lock.verdict.evidence
    assert "drivers/dev.c:13: up() in dev_work() through sem_give()" in lock.verdict.evidence
    other = got["drivers/dev.c:dev.other"]
    assert other.verdict.cls == "unknown"
    assert any("peek() has 2 definitions" in e for e in other.verdict.evidence)


# ---- what the committed audits may claim

def _claims(sem: dict) -> list[str]:
    text = " ".join(sem["reasons"])
    names = []
    for rx in (r"up\(\) in (.+?), which never takes it",
               r"signalled by up\(\) in (.+?), never in a function that waits"):
        for m in re.finditer(rx, text):
            names += re.findall(r"(\w+)\(\)", m.group(1))
    return names


@pytest.mark.parametrize("tree", ["linux-6.1.192", "linux-6.12.118"])
def test_no_verdict_says_a_function_never_takes_what_it_passes_on(tree):
    """No reason says a function never takes (or waits on) a semaphore whose address
    that function hands to a call; no semaphore's calls are left not analysed, and
    no evidence names spatch's `something_else`."""
    data = json.loads((REPO / "reports" / tree / "audit.json").read_text())
    for sem in data["semaphores"]:
        passes = {e["function"] for e in sem["escapes"]}
        at = {(o["path"], o["line"]): o["function"] for o in sem["ops"]}
        for f in sem["followed"]:
            path, line = f["at"].rsplit(":", 1)
            passes.add(at.get((path, int(line)), ""))
        assert not set(_claims(sem)) & passes, sem["id"]
        if re.search(r"never (?:waited on|released|taken or released) here",
                     " ".join(sem["reasons"])):
            assert not sem["escapes"] and all(f["calls"] for f in sem["followed"]), sem["id"]
        assert not any(r.startswith("not analysed") for r in sem["reasons"]), sem["id"]
        assert "something_else" not in json.dumps(sem), sem["id"]
    assert data["unparsed_functions"] == []


def _sems(tree: str) -> dict[str, dict]:
    data = json.loads((REPO / "reports" / tree / "audit.json").read_text())
    return {s["id"]: s for s in data["semaphores"]}


def test_the_committed_audits_follow_the_helpers_macros_and_guards():
    """The cases that asked for these analyses, as the committed audits give them."""
    new, old = _sems("linux-6.12.118"), _sems("linux-6.1.192")
    lock = new["drivers/md/dm-vdo/indexer/sparse-cache.c:threads_barrier.lock"]
    assert lock["class"] == "mutex"
    assert any("down_interruptible() in enter_threads_barrier() through __down()" in e
               for e in lock["evidence"])
    for sems in (new, old):
        console = sems["kernel/printk/printk.c:console_sem"]
        assert any("down() in macro down_console_sem()" in e for e in console["evidence"])
        host = sems["include/ufs/ufshcd.h:ufs_hba.host_sem"]
        assert host["class"] == "counting"
        assert any(o["function"] == "device_init_show" for o in host["ops"])
    irq = new["drivers/media/platform/chips-media/wave5/wave5-vpuapi.h:vpu_device.irq_sem"]
    assert irq["rule"] != "lock.released_in_interrupt"
    assert any("not reached from that interrupt" in e for e in irq["evidence"])
