"""classify/convert/finish.py: after the semantic patch, what a maintainer
would otherwise do by hand -- comments, the lock's name, the comment
checkpatch asks of a mutex, 80 columns, includes.  Each pass has a case it
must change and one it must leave alone."""

import subprocess
from pathlib import Path

from classify.convert import finish as F
from classify.convert.tested import _columns

# ------------------------------------------------------------------ comments

IPMI = """static int thread(void *data)
{
\twhile (1) {
\t\tif (!msg && ret) {
\t\t\t/*
\t\t\t * here.  Wait again for check_msg_done to up
\t\t\t * the semaphore.
\t\t\t */
\t\t\twait_for_completion(&iidev->got_rsp);
\t\t}
\t\t/* Wait for a message to send: the semaphore. */
\t\tret = down_interruptible(&iidev->wake_thread);
\t}
}
"""


def comments(text: str, changed: set[int], cls: str = "completion", old: str = "got_rsp",
             new: str = "", decl: set[int] | None = None) -> tuple[str, list[str]]:
    scope = F.Scope(F.function_spans(text.split("\n")), decl or set())
    return F.rewrite_comments(text, changed, scope, cls, old, new, "f.c")


def test_a_comment_about_the_lock_is_reworded() -> None:
    got, _ = comments(IPMI, {9})
    assert "check_msg_done to complete\n\t\t\t * got_rsp.\n" in got
    assert "the semaphore.\n\t\t\t */\n\t\t\twait" not in got


def test_a_comment_about_another_semaphore_is_left_with_a_note() -> None:
    got, notes = comments(IPMI, {9})
    assert "/* Wait for a message to send: the semaphore. */" in got
    assert notes and notes[0].startswith("f.c:11: a comment left as it is")


def test_calls_and_grammar_for_a_mutex() -> None:
    text = ("static void f(struct h *h)\n{\n\t/* take a semaphore: down() then up() */\n"
            "\tmutex_lock(&h->lock);\n}\n")
    got, _ = comments(text, {4}, "mutex", "sem", "lock")
    assert "/* take a mutex: mutex_lock() then mutex_unlock() */" in got


def test_an_old_style_comment_is_laid_out_in_kernel_style() -> None:
    text = ("int f(struct p *port)\n{\n\tif (!t)\n\t\t/* Zero timeout is special, and we "
            "can't down() the\n\t\t   semaphore. */\n\t\treturn 1;\n"
            "\tret = wait_for_completion_interruptible(&port->irq);\n}\n")
    got, _ = comments(text, {7}, old="irq")
    assert ("\t\t/* Zero timeout is special, and we can't wait for the\n"
            "\t\t * completion.\n\t\t */\n") in got
    assert all(_columns(x) <= 80 for x in got.split("\n"))


def test_a_completion_has_no_counter_a_comment_says_what_it_counts() -> None:
    # raw_gadget: "the same value as queue->sema counter"; look-alike: a
    # comment naming the lock without its counter keeps its words
    text = ("int f(struct q *queue)\n{\n\tif (wait_for_completion_interruptible("
            "&queue->done))\n\t\treturn 1;\n\t/*\n\t * queue->size must have the same "
            "value as queue->sema counter.\n\t * queue->sema is given\n\t */\n\treturn 0;\n}\n")
    got, _ = comments(text, {3}, old="sema", new="done")
    words = " ".join(got.replace("\n\t *", " ").split())
    assert ("the same value as the number of complete() calls on queue->done not yet "
            "waited for.") in words
    assert "queue->done is given" in words and "counter" not in got
    assert all(_columns(x) <= 80 for x in got.split("\n"))


def test_a_comment_elsewhere_quoting_the_renamed_lock_follows_it() -> None:
    # hns_roce: the comment is above an untouched function; it names the lock
    text = ('/* this should be called with "poll_sem" */\nstatic int poll(struct d *d)\n'
            '{\n\treturn 0;\n}\n\nvoid f(struct d *d)\n{\n\tmutex_lock(&d->poll_lock);\n}\n'
            '/* a semaphore, poll_semantics */\n')
    got, notes = comments(text, {9}, "mutex", "poll_sem", "poll_lock")
    assert got.startswith('/* this should be called with "poll_lock" */\n')
    assert not [n for n in notes if n.startswith("f.c:1:")]
    # other words of it stay, and so does a word that only begins like it
    assert got.endswith("/* a semaphore, poll_semantics */\n")
    # without a rename, the comment is not this lock's to touch
    assert comments(text, {9}, "mutex", "poll_sem", "")[0] == text


def test_a_kernel_doc_line_of_the_lock_only() -> None:
    text = ("/**\n * struct dev_priv - data\n * @proc_sem:\tSemaphore for proc accessing.\n"
            " * @other:\tanother semaphore.\n */\nstruct dev_priv {\n"
            "\tstruct mutex proc_lock;\n\tstruct semaphore other;\n};\n")
    scope = F.Scope([], {7}, F._kernel_doc_lines(text, "dev_priv", "proc_sem"))
    got, _ = F.rewrite_comments(text, {7}, scope, "mutex", "proc_sem", "proc_lock")
    assert " * @proc_lock:\tMutex for proc accessing.\n * @other:\tanother semaphore.\n" in got


def test_a_message_naming_the_old_call() -> None:
    text = ("void f(struct ath6kl *ar)\n{\n\tif (mutex_lock_interruptible(&ar->lock)) {\n"
            "\t\tath6kl_err(\"down_interruptible failed\\n\");\n\t\treturn;\n\t}\n}\n")
    scope = F.Scope(F.function_spans(text.split("\n")), set())
    assert '"mutex_lock_interruptible failed\\n"' in F.rewrite_messages(text, {3}, scope, "mutex")
    other = text.replace("\treturn;", "\tdown(&ar->other);")
    assert F.rewrite_messages(other, {3}, scope, "mutex") == other


# ------------------------------------------------------------------ names

def test_the_renaming_rule() -> None:
    assert F.rename_rule("poll_sem", "mutex", set()) == "poll_lock"
    assert F.rename_rule("cmd_sema", "mutex", set()) == "cmd_lock"
    assert F.rename_rule("buffered_ioctl_semaphore", "mutex", set()) == "buffered_ioctl_lock"
    assert F.rename_rule("sem", "completion", set()) == "done"
    # a name that does not say semaphore stays
    assert F.rename_rule("pll_mutex", "mutex", set()) == ""
    assert F.rename_rule("got_rsp", "completion", set()) == ""
    # a clash: the type's name, then none
    assert F.rename_rule("sem", "mutex", {"lock"}) == "mutex"
    assert F.rename_rule("sem", "mutex", {"lock", "mutex"}) == ""
    # a bare word that ends another member's name reads as its partner (iwpm)
    assert F.rename_rule("sem", "completion", {"request_done"}) == "comp"
    assert F.rename_rule("sem", "completion", {"done_list"}) == "done"
    assert F.rename_rule("cmd_sem", "completion", {"request_done"}) == "cmd_done"


def test_a_struct_member_named_like_the_new_name_is_taken() -> None:
    text = "struct hisi_hba {\n\tspinlock_t lock;\n\tstruct mutex sem;\n};\n"
    taken = F._identifiers(F.struct_body(text, "hisi_hba"))
    assert "lock" in taken and "mutex" not in taken
    assert F.rename_rule("sem", "mutex", taken) == "mutex"


def test_rename_only_the_changed_lines_and_find_the_others() -> None:
    text = ("struct a {\n\tstruct mutex sem;\n};\nvoid f(struct a *a, struct b *b)\n{\n"
            "\tmutex_lock(&a->sem);\n\tdown(&b->sem);\n\tmutex_unlock(&a->sem);\n}\n")
    changed = {2, 6, 8}
    got = F.rename_text(text, "sem", "lock", True, changed)
    assert "\tstruct mutex lock;\n" in got and "mutex_lock(&a->lock);" in got
    assert "down(&b->sem);" in got
    # the use of another struct's sem on line 7 forbids the rename
    assert F.uses_outside(text, "sem", True, changed, 2) == [7]
    assert F.uses_outside(text.replace("\tdown(&b->sem);\n", ""), "sem", True,
                          {2, 6, 7}, 2) == []


# ------------------------------------------------------------------ definition comment

def test_a_mutex_definition_gets_its_comment() -> None:
    text = "struct hns_roce_cmdq {\n\tstruct mutex poll_lock;\n};\n"
    got = F.definition_comment(text, 2, ["__hns_roce_cmd_mbox_poll"])
    assert "\tstruct mutex poll_lock; /* serialises __hns_roce_cmd_mbox_poll() */\n" in got
    many = F.definition_comment(text, 2, [f"ath6kl_fn_{i}" for i in range(9)])
    line = next(x for x in many.split("\n") if "Serialises" in x)
    assert "and 7 more functions" in line and _columns(line) <= 80
    assert many.split("\n")[2] == "\tstruct mutex poll_lock;"     # on the line above
    # a few names that do not fit a line: every one, in a block comment above
    few = F.definition_comment(text, 2, ["xenbus_dev_probe", "xenbus_dev_remove",
                                         "backend_reclaim_memory"])
    assert few.split("\n")[1:6] == [
        "\t/*", "\t * Serialises xenbus_dev_probe(), xenbus_dev_remove() and",
        "\t * backend_reclaim_memory().", "\t */", "\tstruct mutex poll_lock;"]
    net = F.definition_comment(text, 2, ["xenbus_dev_probe", "xenbus_dev_remove",
                                         "backend_reclaim_memory"], net=True)
    assert net.split("\n")[1:3] == [
        "\t/* Serialises xenbus_dev_probe(), xenbus_dev_remove() and",
        "\t * backend_reclaim_memory()."]


def test_the_file_s_own_comment_above_stays_there_said_again_with_ours() -> None:
    text = "struct a {\n\t/* Lock for getting db area */\n\tstruct mutex idx_lock;\n};\n"
    assert F.definition_comment(text, 3, ["get_db_area"], ["num_free"]) == (
        "struct a {\n\t/* Lock for getting db area: protects num_free. */\n"
        "\tstruct mutex idx_lock;\n};\n")
    # look-alike: a comment too long to join the line is said again with ours,
    # in one block
    long = text.replace("Lock for getting db area", "x" * 60)
    got = F.definition_comment(long, 3, ["get_db_area"], ["num_free"])
    assert "\t/*\n\t * " + "x" * 60 + ":\n\t * protects num_free.\n\t */\n" in got


def test_a_commented_definition_is_left() -> None:
    text = "static DEFINE_MUTEX(prev_lock); /* the list of previous devices */\n"
    assert F.definition_comment(text, 1, ["f"]) == text
    assert F.definition_comment("\tstruct completion done;\n", 1, ["f"]) == \
        "\tstruct completion done;\n"


# ------------------------------------------------------------------ 80 columns

def test_a_long_changed_line_is_broken_after_a_comma() -> None:
    line = ("\t\t\tret = hinic_msg_to_mgmt_sync(pf_to_mgmt, mod, cmd, buf_in, "
            "in_size, buf_out, out_size);")
    got, left = F.break_long_lines(line + "\n" + line, {1})
    *pieces, last = got.split("\n")
    assert len(pieces) == 3 and all(_columns(x) <= 80 for x in pieces) and not left
    assert all(x.startswith("\t\t\t\t\t\t     ") for x in pieces[1:])
    assert last == line         # not changed by the patch: left
    lone = "\t\t\t\tmutex_unlock(&pvcalls_back_global.frontends_lock_of_the_back);"
    assert F.break_long_lines(lone, {1}) == (lone, [1])


# ------------------------------------------------------------------ includes

def test_an_include_in_its_sorted_place() -> None:
    text = "#include <linux/kernel.h>\n#include <linux/slab.h>\n\nint x;\n"
    assert F.add_include(text, "linux/mutex.h") == (
        "#include <linux/kernel.h>\n#include <linux/mutex.h>\n#include <linux/slab.h>\n"
        "\nint x;\n")
    unsorted = "#include <linux/slab.h>\n#include <linux/kernel.h>\n#include <net/x.h>\n"
    assert F.add_include(unsorted, "linux/completion.h") == (
        "#include <linux/slab.h>\n#include <linux/kernel.h>\n"
        "#include <linux/completion.h>\n#include <net/x.h>\n")


def test_an_include_takes_semaphore_h_s_place_or_its_sorted_one() -> None:
    # an unsorted block whose semaphore.h goes: the new header takes its line
    text = ("#include <linux/wait.h>\n#include <linux/semaphore.h>\n#include <linux/list.h>\n"
            "struct a { struct mutex m; };\n")
    assert F.add_include(text, "linux/mutex.h").startswith(
        "#include <linux/wait.h>\n#include <linux/mutex.h>\n#include <linux/list.h>\n")
    # a long sorted block with one neighbour out of order (blk-mq.h, blk-mq-pci.h)
    names = ["acpi", "blk-mq", "blk-mq-pci", "clk", "module", "of_address", "timer"]
    block = "".join(f"#include <linux/{n}.h>\n" for n in names)
    got = F.add_include(block + "int x;\n", "linux/mutex.h")
    assert "#include <linux/module.h>\n#include <linux/mutex.h>\n#include <linux/of_address.h>" \
        in got


def test_a_semaphore_h_out_of_order_is_no_neighbour() -> None:
    # raw_gadget: sorted but for semaphore.h, which goes; a second group unsorted
    names = ["compiler", "ctype", "kref", "module", "semaphore", "sched", "wait"]
    text = ("".join(f"#include <linux/{n}.h>\n" for n in names)
            + "\n#include <linux/usb/ch9.h>\n#include <linux/usb/ch11.h>\n\nint x;\n")
    got = F.add_include(text, "linux/completion.h")
    assert got.startswith("#include <linux/compiler.h>\n#include <linux/completion.h>\n"
                          "#include <linux/ctype.h>\n")
    assert "semaphore.h" not in got and got.count("#include") == len(names) + 2
    # the same block with a semaphore left in the file: semaphore.h stays
    left = text.replace("int x;", "void f(struct semaphore *s) { down(s); }")
    got = F.add_include(left, "linux/completion.h")
    assert "#include <linux/compiler.h>\n#include <linux/completion.h>\n" in got
    assert "#include <linux/module.h>\n#include <linux/semaphore.h>\n" in got


def test_an_include_already_there_is_not_added() -> None:
    text = "#include <linux/kernel.h>\n#include <linux/mutex.h>\n"
    assert F.add_include(text, "linux/mutex.h") == text


def test_semaphore_h_goes_when_no_semaphore_is_left() -> None:
    text = ("#include <linux/semaphore.h>\n#include <linux/mutex.h>\n"
            "/* a semaphore once */\nstruct a { struct mutex lock; };\n")
    assert "semaphore.h" not in F.drop_semaphore_h(text)
    kept = text + "void f(struct b *b) { up(&b->sem); }\n"
    assert F.drop_semaphore_h(kept) == kept


# ------------------------------------------------------------------ all of it, in a worktree

BEFORE = """#include <linux/kernel.h>
#include <linux/semaphore.h>
#include <linux/slab.h>

struct cmdq {
\tspinlock_t lock;
\tstruct semaphore poll_sem;
};

static int mbox_poll(struct cmdq *q)
{
\t/* down() the semaphore: one command at a time */
\tdown(&q->poll_sem);
\tsend(q);
\tup(&q->poll_sem);
\treturn 0;
}
"""


def git(tree: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                        "PATH": "/usr/bin:/bin", "HOME": str(tree)})


def test_finish_in_a_worktree(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "c.c").write_text(BEFORE)
    git(tmp_path, "add", "c.c")
    git(tmp_path, "commit", "-q", "-m", "base")
    # what sem_to_mutex.cocci writes
    (tmp_path / "c.c").write_text(BEFORE.replace("struct semaphore poll_sem", "struct mutex poll_sem")
                                  .replace("down(&q", "mutex_lock(&q")
                                  .replace("up(&q", "mutex_unlock(&q"))
    sem = {"id": "c.c:cmdq.poll_sem", "class": "mutex",
           "declared": {"kind": "member", "path": "c.c", "struct": "cmdq"},
           "ops": [{"op": "down", "function": "mbox_poll", "path": "c.c"},
                   {"op": "up", "function": "mbox_poll", "path": "c.c"}]}
    done = F.finish(tmp_path, sem, ["c.c"], ["c.c"])
    got = (tmp_path / "c.c").read_text()
    assert done.new_name == "poll_lock" and not done.name_kept and not done.notes
    assert "\tstruct mutex poll_lock; /* serialises mbox_poll() */\n" in got
    assert "\t/* take the mutex: one command at a time */\n\tmutex_lock(&q->poll_lock);" in got
    assert "#include <linux/kernel.h>\n#include <linux/mutex.h>\n#include <linux/slab.h>" in got
    assert "poll_sem" not in got and "semaphore" not in got


def test_an_include_goes_in_the_first_block() -> None:
    text = ("#include <linux/wait.h>\n#include <linux/semaphore.h>\n#include <asm/x.h>\n"
            "\nstruct a { int x; };\n#if X\n#include <linux/parport_pc.h>\n#endif\n")
    got = F.add_include(text, "linux/completion.h")
    # no semaphore is left: completion.h takes semaphore.h's line, in the first block
    assert got.startswith("#include <linux/wait.h>\n#include <linux/completion.h>\n"
                          "#include <asm/x.h>\n")
    assert got.count("#include <linux/completion.h>") == 1


def test_an_include_goes_after_the_first_group_of_an_unsorted_block() -> None:
    text = ("#include <linux/types.h>\n#include <linux/i2c.h>\n#include <asm/dma.h>\n\n"
            "#include <linux/dvb/frontend.h>\n\nint x;\n")
    got = F.add_include(text, "linux/completion.h")
    # after the group's last <linux/...> line, not after the block's last one
    assert got.startswith("#include <linux/types.h>\n#include <linux/i2c.h>\n"
                          "#include <linux/completion.h>\n#include <asm/dma.h>\n\n")


def test_a_header_whose_semaphore_h_goes_swaps_it_for_the_type_it_holds(tmp_path) -> None:
    # hinic_hw_io.h: not the lock's declaring file, yet it loses semaphore.h
    # and holds a struct mutex (used before): the include is swapped
    assert F._declares("struct a {\n\tstruct mutex idx_lock;\n};\n", "mutex")
    assert not F._declares("struct a {\n\tstruct mutex *idx_lock;\n};\n", "mutex")
    assert not F._declares("static DEFINE_MUTEX(x);\n", "completion")


def test_the_declaring_file_names_its_header_and_a_paired_lock_says_who_holds_it(
        tmp_path: Path) -> None:
    # hinic_hw_mbox.h: another struct mutex already, brought by some other
    # include; the converted lock is held from one call to a later one
    before = BEFORE.replace("#include <linux/semaphore.h>\n", "").replace(
        "\tspinlock_t lock;", "\tstruct mutex other;")
    git(tmp_path, "init", "-q")
    (tmp_path / "c.c").write_text(before)
    git(tmp_path, "add", "c.c")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "c.c").write_text(before.replace("struct semaphore poll_sem",
                                                 "struct mutex poll_sem")
                                  .replace("down(&q", "mutex_lock(&q")
                                  .replace("up(&q", "mutex_unlock(&q"))
    sem = {"id": "c.c:cmdq.poll_sem", "class": "mutex", "rule": "lock.paired_on_one_task",
           "declared": {"kind": "member", "path": "c.c", "struct": "cmdq"},
           "ops": [{"op": "down", "function": "mbox_poll", "path": "c.c"},
                   {"op": "up", "function": "mbox_done", "path": "c.c"}]}
    F.finish(tmp_path, sem, ["c.c"], ["c.c"])
    got = (tmp_path / "c.c").read_text()
    assert "#include <linux/mutex.h>\n" in got
    assert "/* held from mbox_poll() to mbox_done() */" in got
    assert "serialises" not in got


def test_a_lock_held_across_calls_says_from_where_to_where() -> None:
    text = "struct hba {\n\tstruct mutex mutex;\n};\n"
    # hisi_sas: two ways in, three ways out, and functions that take and
    # release it themselves, which need no saying
    got = F.definition_comment(text, 2, ["queue_command", "prereset", "reset_done"],
                               held=(["hisi_sas_controller_prereset",
                                      "hisi_sas_reset_prepare_v3_hw"],
                                     ["hisi_sas_controller_reset_done",
                                      "hisi_sas_controller_reset",
                                      "hisi_sas_reset_done_v3_hw"],
                                     ["hisi_sas_dev_gone", "hisi_sas_control_phy"]))
    assert got == ("struct hba {\n\t/*\n"
                   "\t * Held from hisi_sas_controller_prereset() or\n"
                   "\t * hisi_sas_reset_prepare_v3_hw() to hisi_sas_controller_reset_done(),\n"
                   "\t * hisi_sas_controller_reset() or hisi_sas_reset_done_v3_hw(); also\n"
                   "\t * taken by hisi_sas_dev_gone() and hisi_sas_control_phy().\n"
                   "\t */\n\tstruct mutex mutex;\n};\n")
    # an on/off callback takes and releases it: no "from ... to"
    gate = F.definition_comment(text, 2, ["drxk_gate_ctrl"],
                                held=(["drxk_gate_ctrl"], [], []))
    assert "/* taken and released by drxk_gate_ctrl() */" in gate
