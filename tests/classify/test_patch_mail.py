"""Conversion patches a maintainer applies as they are (issue 14): series per
MAINTAINERS entry with each patch's own recipients and the tree tag, subjects
from the files' history, the message and the notes below the ---, the identity
that signs off, and `make patches` leaving the committed reports alone.  A small
fake tree with a MAINTAINERS file and a stub get_maintainer.pl."""

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from classify.convert import maintainers as M
from classify.convert import identity, message
from classify.convert import notes as below
from classify.convert import series
from classify.convert import subject
from classify.tree import GIT_ENV

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from test_patches import DRIVER, needs_spatch, sem, small_tree  # noqa: E402


MAINTAINERS = """\
List of maintainers and how to submit kernel changes
====================================================

Descriptions of section entries and preferred order
---------------------------------------------------

	M: *Mail* patches to: FullName <address@domain>
	F: *Files* and directories wildcard patterns.

Maintainers List
----------------

BAR DRIVER
M:	Bar Maint <bar@kernel.org>
S:	Maintained
T:	git git://git.kernel.org/pub/scm/linux/kernel/git/tip/tip.git locking/core
F:	drivers/bar/

FOO DRIVER
M:	Foo Maint <foo@kernel.org>
L:	foo-list@vger.kernel.org
S:	Maintained
F:	drivers/foo/

NETWORKING DRIVERS
M:	Net Maint <net@kernel.org>
S:	Maintained
T:	git git://git.kernel.org/pub/scm/linux/kernel/git/netdev/net.git
T:	git git://git.kernel.org/pub/scm/linux/kernel/git/netdev/net-next.git
F:	drivers/
X:	drivers/bar/

THE REST
M:	Linus <torvalds@example.org>
F:	*
F:	*/
"""

# get_maintainer.pl stand-in: recipients from the files the patch touches
STUB = r"""#!/usr/bin/perl
my $f = $ARGV[-1]; open(F, '<', $f) or die; my $t = join('', <F>);
print "Foo Maint <foo\@kernel.org>\n" if $t =~ m{b/drivers/foo/foo\.c};
print "Second Maint <second\@kernel.org>\n" if $t =~ m{b/drivers/foo/second\.c};
print "Bar Maint <bar\@kernel.org>\n" if $t =~ m{b/drivers/bar/};
print "foo-list\@vger.kernel.org\n" if $t =~ m{b/drivers/foo/};
print "linux-kernel\@vger.kernel.org\n";
print "$1\n" if $t =~ m{^From: (.*)$}m;     # the author, as get_maintainer.pl does
"""


# ------------------------------------------------------------------ MAINTAINERS

def test_parse_maintainers_skips_the_preamble():
    entries = M.parse_maintainers(MAINTAINERS)
    assert [e.name for e in entries] == ["BAR DRIVER", "FOO DRIVER", "NETWORKING DRIVERS",
                                         "THE REST"]
    assert entries[2].excludes == ("drivers/bar/",)


@pytest.mark.parametrize("path, entry", [
    ("drivers/foo/foo.c", "FOO DRIVER"),              # more specific than drivers/
    ("drivers/foo/sub/x.c", "FOO DRIVER"),
    ("drivers/foobar/x.c", "NETWORKING DRIVERS"),     # look-alike: not drivers/foo/
    ("drivers/bar/bar.c", "BAR DRIVER"),              # X: keeps NETWORKING out
    ("fs/x.c", "THE REST"),
])
def test_the_most_specific_entry(path, entry):
    entries = M.parse_maintainers(MAINTAINERS)
    assert M.most_specific(entries, path)[0].name == entry
    assert "NETWORKING DRIVERS" not in [e.name for e in M.most_specific(entries,
                                                                          "drivers/bar/b.c")]


def test_pattern_depth_is_get_maintainer_s():
    assert M.pattern_depth("drivers/foo/*.c", "drivers/foo/a.c") == 3
    assert M.pattern_depth("drivers/foo/*.c", "drivers/foo/sub/a.c") == -1
    assert M.pattern_depth("drivers/foo/", "drivers/foo/sub/a.c") == 2
    assert M.pattern_depth("drivers/foo", "drivers/foo/a.c") == -1


def test_section_for_several_files_is_the_one_most_name():
    entries = M.parse_maintainers(MAINTAINERS)
    assert M.section_for(entries, ["drivers/foo/a.c", "drivers/foo/a.h",
                                   "include/linux/x.h"]).name == "FOO DRIVER"
    assert M.section_for([], ["drivers/foo/a.c"]) is None


@pytest.mark.parametrize("path, tag", [
    ("drivers/foo/foo.c", "net-next"),   # FOO has no tree: NETWORKING's -next one
    ("drivers/net/x.c", "net-next"),
    ("drivers/bar/bar.c", ""),           # tip.git with a branch: no tag
    ("fs/x.c", ""),
])
def test_tree_tag(path, tag):
    assert M.tree_tag(M.parse_maintainers(MAINTAINERS), [path]) == tag


def test_a_tree_tag_only_on_a_base_that_is_that_tree(tmp_path):
    repo = tmp_path / "linux"
    repo.mkdir()
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "a"],
                   check=True, env=env)
    assert not M.on_tree(repo, "net-next")
    subprocess.run(["git", "-C", str(repo), "branch", "net-next"], check=True)
    assert M.on_tree(repo, "net-next") and not M.on_tree(repo, "rdma-next")
    assert not M.on_tree(tmp_path, "net-next")          # no repository at all


def test_routing_names_an_orphan_s_next_entry_and_a_stable_base():
    entries = M.parse_maintainers(MAINTAINERS.replace(
        "FOO DRIVER\nM:\tFoo Maint <foo@kernel.org>\nL:\tfoo-list@vger.kernel.org\n"
        "S:\tMaintained", "FOO DRIVER\nL:\tfoo-list@vger.kernel.org\nS:\tOrphan"))
    notes = M.routing(entries, ["drivers/foo/foo.c"], "net-next", False, "6.1.192")
    assert notes[0] == ("FOO DRIVER has no maintainer (S: Orphan): the patch goes to the "
                        "list and maintainers of NETWORKING DRIVERS, who decide whether a "
                        "clean-up of this code is wanted.")
    assert "rebase it there" in notes[1] and "stable release" in notes[2]
    # look-alikes: a maintained entry, a base on the tree, a mainline release
    entries = M.parse_maintainers(MAINTAINERS)
    assert M.routing(entries, ["drivers/foo/foo.c"], "net-next", True, "6.13") == []


def test_routing_names_the_driver_s_own_tree_when_no_next_tag_says_it():
    tree = "git git://git.kernel.org/pub/scm/linux/kernel/git/gregkh/staging.git"
    entries = [M.Entry("STAGING SUBSYSTEM", ("drivers/staging/",), (), (tree,), "Supported")]
    notes = M.routing(entries, ["drivers/staging/v/v.c"], "", False, "6.1.192")
    assert any("rebase it onto the tree MAINTAINERS names "
               "(git://git.kernel.org/pub/scm/linux/kernel/git/gregkh/staging.git)"
               in " ".join(n.split()) for n in notes)
    # SCSI names two trees: both
    two = [M.Entry("SCSI SUBSYSTEM", ("drivers/scsi/",), (), (
        "git git://git.kernel.org/pub/scm/linux/kernel/git/jejb/scsi.git",
        "git git://git.kernel.org/pub/scm/linux/kernel/git/mkp/scsi.git"), "Maintained")]
    said = " ".join(" ".join(M.routing(two, ["drivers/scsi/e.c"], "", False, "6.1.192")).split())
    assert "the trees MAINTAINERS names (git://git.kernel.org/pub/scm/linux/kernel/git/" \
        "jejb/scsi.git or git://git.kernel.org/pub/scm/linux/kernel/git/mkp/scsi.git)" in said
    # look-alikes: a mainline base, an entry without a tree, Linus' tree
    assert not any("rebase" in n for n in M.routing(entries, ["drivers/staging/v/v.c"], "",
                                                    False, "6.13"))
    bare = [M.Entry("STAGING SUBSYSTEM", ("drivers/staging/",), (), (), "Supported")]
    assert not any("rebase" in n for n in M.routing(bare, ["drivers/staging/v/v.c"], "",
                                                    False, "6.1.192"))
    linus = [M.Entry("X", ("drivers/staging/",), (), (
        "git git://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git",), "Supported")]
    assert not any("rebase" in n for n in M.routing(linus, ["drivers/staging/v/v.c"], "",
                                                    False, "6.1.192"))


def test_several_plain_locks_are_one_sentence_and_a_line_each():
    def plain(name, funcs, context="process: a.c:1 f() is net_device_ops.ndo_open (process)"):
        s = sem(f"drivers/n/h.h:{name}", ops=[("drivers/n/h.c", n, "down")
                                              for n, _ in enumerate(funcs, 1)])
        for o, f in zip(s["ops"], funcs):
            o.update(function=f, context=context, callers=[context.split(": ", 1)[1]])
        s["rule"] = "lock.mutex"
        return message.Converted(s)
    items = [plain("a.x_lock", ["f"]), plain("b.y_lock", ["g", "h"]), plain("c.z_lock", ["k"])]
    msg = message.commit_message("net: h: ", "s", items, None)
    words = " ".join(msg.split())
    assert words.startswith("net: h: s The driver has three semaphores used as locks. "
                            "Make them mutexes:")
    assert "\n- y_lock: g() and h().\n" in msg
    assert "so that the names no longer say semaphore" not in msg   # no rename here
    assert "the callers already run in process context, where a mutex may be taken." in words
    assert msg.count("on every path") == 1                         # said once
    assert "how they are held" in words
    # look-alikes: two locks, or one taken in softirq context: a paragraph each
    two = message.commit_message("net: h: ", "s", items[:2], None)
    assert "Each of them" not in two and two.count("on every path") == 2
    soft = plain("d.w_lock", ["t"], "softirq: a.c:1 t() is timer_list.function (softirq)")
    mixed = message.commit_message("net: h: ", "s", items + [soft], None)
    assert "Each of them" not in mixed and mixed.count("on every path") == 4


def test_the_message_says_why_first_and_no_functional_change_last():
    m = sem("a/b.c:d.l", ops=[("a/b.c", 3, "down")])
    m["ops"][0]["function"] = "f"
    msg = message.commit_message("a: ", "s", [message.Converted(m)], "A <a@kernel.org>")
    paragraphs = msg.split("\n\n")
    assert paragraphs[1].startswith("d.l is a semaphore used as a lock. Make it a mutex:")
    assert "f() releases it on every path" in " ".join(msg.split())
    assert paragraphs[-2] == "No functional change intended."
    c = sem("a/b.c:d.e", "completion", ops=[("a/b.c", 3, "down"), ("a/b.c", 5, "up")])
    event = message.commit_message("a: ", "s", [message.Converted(c)], None)
    assert " ".join(event.split("\n\n")[1].split()).startswith(
        "d.e is a semaphore used only to count events: one side waits for them")
    assert "Make it a mutex" not in event and "a lock freed" not in event
    assert "a signal given before anyone waits is kept" in " ".join(event.split())
    assert "atomic context" not in event            # no signal there: nothing to say
    # two events of one patch: what holds for both is said once
    f = sem("a/b.c:d.f", "completion", ops=[("a/b.c", 7, "down"), ("a/b.c", 9, "up")])
    both = " ".join(message.commit_message(
        "a: ", "s", [message.Converted(c), message.Converted(f)], None).split())
    assert both.count("complete() is counted like up()") == 1
    assert "Make them completions" in both
    # a static lock is never freed: no such check is promised for it
    g = sem("a/b.c:g_lock", kind="static", ops=[("a/b.c", 3, "down")])
    assert "freed while held" not in message.commit_message(
        "a: ", "s", [message.Converted(g)], None)
    assert "freed while held" in " ".join(msg.split())


def test_an_event_names_its_real_waiters_and_an_atomic_signal():
    # iwpm: sema_init(1) and down() at once in the allocator, which never waits
    c = sem("drivers/i/iwpm_util.h:req.sem", "completion",
            ops=[("drivers/i/u.c", 324, "down"), ("drivers/i/u.c", 373, "down_timeout"),
                 ("drivers/i/u.c", 437, "up")])
    for o, f in zip(c["ops"], ("get_request", "wait_complete_req", "register_pid_cb")):
        o["function"] = f
    c["reasons"] = ["initialised to 1 and taken at once, so it starts at 0: down() waits "
                    "for an event", "waited for in wait_complete_req()",
                    "signalled by up() in register_pid_cb(), never in a function that waits"]
    msg = " ".join(message.commit_message("a: ", "s", [message.Converted(c)], None).split())
    assert ("taken at once, so it starts at 0: wait_complete_req() waits for it and "
            "register_pid_cb() signals it.") in msg
    assert "atomic context" not in msg
    # raw_gadget: up() under a spinlock with interrupts off; parport: from a timer
    c["ops"][2]["atomic"] = "after the lock or irq/preempt disable at line 68"
    msg = " ".join(message.commit_message("a: ", "s", [message.Converted(c)], None).split())
    assert "register_pid_cb() signals it in atomic context, where complete() may be" in msg
    c["ops"][2].update(atomic="", context="hardirq + process: drivers/i/u.c:5 x")
    msg = message.commit_message("a: ", "s", [message.Converted(c)], None)
    assert "signals it in atomic context" in " ".join(msg.split())


def test_a_changed_return_value_is_said_in_the_body():
    c = sem("a/b.c:d.e", "completion", ops=[("a/b.c", 3, "down_timeout")])
    msg = message.commit_message("a: ", "s", [message.Converted(c)], None)
    assert "wait_for_completion_timeout() returns 0 on a timeout" in " ".join(msg.split())
    i = sem("a/b.c:d.i", "completion", ops=[("a/b.c", 3, "down_interruptible")])
    said = " ".join(message.commit_message("a: ", "s", [message.Converted(i, mapped=True)],
                                           None).split())
    assert "map a nonzero return to -EINTR" in said
    # look-alike: a value only tested: nothing is said to be mapped
    tested = " ".join(message.commit_message("a: ", "s", [message.Converted(i)], None).split())
    assert "only tested for nonzero, so nothing changes" in tested and "map a" not in tested
    # one test of a timeout: "its test", not "each test"
    assert "so its test is inverted" in " ".join(msg.split())
    m = sem("a/b.c:d.l", ops=[("a/b.c", 3, "down")])
    assert "returns" not in message.commit_message("a: ", "s", [message.Converted(m)], None)


def test_tree_tag_of_known_and_unknown_trees():
    def entry(t):
        return [M.Entry("X", ("a/",), (), (t,))]
    assert M.tree_tag(entry("git git://git.kernel.org/pub/scm/linux/kernel/git/rdma/rdma.git"),
                      ["a/b.c"]) == "rdma-next"
    assert M.tree_tag(entry("git git://git.kernel.org/pub/scm/linux/kernel/git/x/wireless-next"
                            ".git"), ["a/b.c"]) == "wireless-next"
    # look-alikes: a maintainer's own tree, a tree named like rdma but elsewhere
    assert M.tree_tag(entry("git git://git.kernel.org/pub/scm/linux/kernel/git/foo/linux.git"),
                      ["a/b.c"]) == ""
    assert M.tree_tag(entry("git https://github.com/someone/myrdma.git"), ["a/b.c"]) == ""


def test_add_recipients_folds_like_format_patch(tmp_path):
    p = tmp_path / "0001-x.patch"
    p.write_text("From 0 Mon\nFrom: A <a@b>\nSubject: [PATCH] x\n\nbody\n")
    M.add_recipients(p, ["A <a@k.org>", "B <b@k.org>"], ["l@v.org"])
    assert p.read_text() == ("From 0 Mon\nFrom: A <a@b>\nSubject: [PATCH] x\n"
                             "To: A <a@k.org>,\n    B <b@k.org>\nCc: l@v.org\n\nbody\n")


# ------------------------------------------------------------------ a fake tree

SECOND = DRIVER.replace("struct dev", "struct sec").replace("static int f(", "static int f2(")


def mail_tree(root: Path, history: bool = False) -> Path:
    small_tree(root)
    (root / "MAINTAINERS").write_text(MAINTAINERS)
    (root / "scripts").mkdir()
    (root / "scripts/get_maintainer.pl").write_text(STUB)
    (root / "drivers/foo/second.c").write_text(SECOND)
    (root / "drivers/bar").mkdir()
    (root / "drivers/bar/bar.c").write_text(DRIVER)
    if history:
        def git(*a):
            subprocess.run(["git", "-C", str(root), *a], check=True, capture_output=True,
                           env={**os.environ, "GIT_AUTHOR_NAME": "K", "GIT_AUTHOR_EMAIL":
                                "k@kernel.org", "GIT_COMMITTER_NAME": "K",
                                "GIT_COMMITTER_EMAIL": "k@kernel.org"})
        git("init", "-q")
        git("add", "-A")
        git("commit", "-q", "-m", "Linux 6.1")
        for msg in ("net: foo: Fix a leak", "net: foo: Use kzalloc",
                    "Merge branch 'x'", "foo: old style"):
            with open(root / "drivers/foo/foo.c", "a") as f:
                f.write("\n")
            git("commit", "-q", "-am", msg)
    return root


def audit3() -> dict:
    lock = sem("drivers/foo/foo.c:dev.lock", ops=[("drivers/foo/foo.c", 12, "down")])
    second = sem("drivers/foo/second.c:sec.lock", struct="sec",
                 ops=[("drivers/foo/second.c", 12, "down")])
    bar = sem("drivers/bar/bar.c:dev.lock", ops=[("drivers/bar/bar.c", 12, "down")])
    return {"kernel_version": "6.1.192", "semaphores": [lock, second, bar]}


def gen(tmp_path, kernel, monkeypatch, signoff=("A U Thor", "author@kernel.org"), ids=None):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    return series.generate(kernel, audit3(), tmp_path / "out", tmp_path / "trees",
                           ids=ids, signoff=signoff)


@needs_spatch
def test_series_per_maintainers_entry_with_own_recipients(tmp_path, monkeypatch):
    res = gen(tmp_path, mail_tree(tmp_path / "linux"), monkeypatch)
    by = {s.subsystem: s for s in res.series}
    assert sorted(by) == ["BAR DRIVER", "FOO DRIVER"]
    foo = by["FOO DRIVER"]
    assert foo.dir.name == "foo-driver"
    cover, one, two = (p.read_text() for p in foo.patches)
    # two drivers of one entry: two patches; no tree tag on a base that is not
    # net-next, but the cover letter says where the series goes
    assert "Subject: [PATCH 1/2] foo: Convert the dev semaphore to a mutex" in one
    assert "Subject: [PATCH 0/2] foo: Convert semaphores to mutexes" in cover
    words = " ".join(cover.split())
    # where the series goes is for its sender, in a file the mail does not carry
    sending = " ".join((foo.dir / "evidence" / "sending.txt").read_text().split())
    assert "MAINTAINERS routes this through net-next" in sending
    assert "a stable release: check them against the current MAINTAINERS" in sending
    assert "MAINTAINERS routes" not in words and "MAINTAINERS routes" not in one
    assert "Patch 1 (foo) converts dev.lock to a mutex." in \
        " ".join(cover.split())
    assert "2006" in cover and "Converted:" not in cover and "Refused:" not in cover
    # a series of mutexes only says nothing of completions
    assert "optimistic spinning" in words and "only counts events" not in words
    # each patch its own people, the cover letter their union
    assert "To: Foo Maint <foo@kernel.org>\nCc: foo-list@vger.kernel.org" in one
    assert "Second Maint" not in one and "Foo Maint" not in two
    assert "To: Second Maint <second@kernel.org>\n" in two
    assert "To: Foo Maint <foo@kernel.org>,\n    Second Maint <second@kernel.org>\n" in cover
    assert "Bar Maint" not in cover
    # the sender is no recipient
    assert "A U Thor" not in cover.split("\n\n")[0].split("\nTo: ", 1)[1]
    # one patch: no cover letter, no numbers; tip.git with a branch gives no tag
    (bar,) = by["BAR DRIVER"].patches
    text = bar.read_text()
    assert bar.name.startswith("0001-") and \
        "Subject: [PATCH] bar: Convert the dev semaphore to a mutex" in text
    assert "To: Bar Maint <bar@kernel.org>\nCc: linux-kernel@vger.kernel.org\n" in text
    assert "base-commit:" not in text


@needs_spatch
def test_a_tree_with_history_gives_its_prefix_and_base_commit(tmp_path, monkeypatch):
    kernel = mail_tree(tmp_path / "linux", history=True)
    res = gen(tmp_path, kernel, monkeypatch, ids=["drivers/foo/foo.c:dev.lock"])
    (patch,) = res.series[0].patches
    text = patch.read_text()
    # the history's prefix; still no tag: this history is not net-next's
    assert "Subject: [PATCH] net: foo: Convert the dev semaphore to a mutex" in text
    head = subprocess.run(["git", "-C", str(kernel), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert f"base-commit: {head}" in text
    # the same tree tagged pristine (the project's import): no base, the rules' prefix
    subprocess.run(["git", "-C", str(kernel), "tag", "pristine"], check=True)
    res = gen(tmp_path, kernel, monkeypatch, ids=["drivers/foo/foo.c:dev.lock"])
    text = res.series[0].patches[0].read_text()
    assert "base-commit:" not in text and "] foo: Convert the dev semaphore" in text


@needs_spatch
def test_no_signoff_means_no_signed_off_by(tmp_path, monkeypatch):
    res = gen(tmp_path, mail_tree(tmp_path / "linux"), monkeypatch, signoff=None,
              ids=["drivers/bar/bar.c:dev.lock"])
    text = res.series[0].patches[0].read_text()
    assert "Signed-off-by" not in text and "tested" not in text.split("\n---\n")[0]
    assert "sem2mutex@localhost" not in text.split("\n\n")[0].split("\nTo: ", 1)[1] and "To: Bar Maint <bar@kernel.org>\n" in text


# ------------------------------------------------------------------ subject

def test_prefix_of_subjects():
    assert subject.prefix_of_subjects(["RDMA/hns: Fix a", "RDMA/hns: Add b",
                                       "RDMA/core: c", "Merge tag 'x'"]) == "RDMA/hns: "
    assert subject.prefix_of_subjects(["net: hns3: fix a", "net: hns3: b", "net: c"]) == \
        "net: hns3: "
    # look-alikes: no majority, a single commit, a sentence with a colon
    assert subject.prefix_of_subjects(["a: x", "b: y", "c: z"]) == ""
    assert subject.prefix_of_subjects(["a: x"]) == ""
    assert subject.prefix_of_subjects(["Fix the bug: x", "Fix the bug: y"]) == ""


def test_summary_names_the_lock_without_its_type_word():
    one = [sem("drivers/x/hns_roce_device.h:hns_roce_cmdq.poll_sem")]
    assert subject.summary(one) == "Convert the poll semaphore to a mutex"
    # "Convert pll_mutex to a mutex" would say nothing: the type word goes
    assert subject.summary([sem("a/b.c:em28xx_dvb.pll_mutex")]) == \
        "Convert the pll semaphore to a mutex"
    # a member named after its type, or vague, comes with its struct
    assert subject.summary([sem("a/b.c:hisi_hba.sem")]) == \
        "Convert the hisi_hba semaphore to a mutex"
    assert subject.summary([sem("include/linux/parport.h:ieee1284_info.irq", "completion")]) \
        == "Convert the ieee1284_info.irq semaphore to a completion"
    # what a long prefix leaves (usb: gadget: raw_gadget: leaves 50 of 75)
    queue = [sem("drivers/usb/gadget/legacy/raw_gadget.c:raw_event_queue.sema", "completion")]
    assert subject.summary(queue, 75 - len("usb: gadget: raw_gadget: ")) == \
        "Make the raw_event_queue semaphore a completion"
    assert subject.summary(queue, 53).startswith("Convert the raw_event_queue")
    # look-alikes: a name that only ends in the letters of a type word keeps them
    assert subject.summary([sem("a/b.c:tsem", "completion")]) == \
        "Convert the tsem semaphore to a completion"
    two = [sem("a/b.c:f.socket_lock"), sem("a/b.c:g.frontends_lock")]
    assert subject.summary(two) == "Convert the socket and frontends semaphores to mutexes"
    assert subject.summary(two * 2) == "Convert the driver's semaphores to mutexes"
    assert subject.summary([sem("a/b.c:f.cmd_lock"), sem("a/b.c:x.ready", "completion")]) \
        == "Convert the cmd and ready semaphores to mutexes and completions"


# ------------------------------------------------------------------ message

BNX = ("down_trylock() in bnx2x_prev_is_path_marked() runs in process: "
       "drivers/net/b.c:14334 bnx2x_io_slot_reset() is pci_error_handlers.slot_reset "
       "(process) -> drivers/net/b.c:14277 bnx2x_io_slot_reset() calls bnx2x_prev_unload()"
       " -> drivers/net/b.c:10769 bnx2x_prev_unload_common() calls "
       "bnx2x_prev_is_path_marked()")


def test_a_trylock_names_its_context_in_words_without_line_numbers():
    s = sem("drivers/net/b.c:bnx2x_prev_sem", kind="static")
    s["reasons"] = ["initial count 1", BNX]
    text = " ".join(message.lock_paragraph(message.Converted(s)))
    text = " ".join(text.split())
    assert ("The down_trylock() in bnx2x_prev_is_path_marked() becomes mutex_trylock(); "
            "every path to it runs in process context, for example: bnx2x_io_slot_reset()"
            in text)
    assert "b.c:" not in text and "14334" not in text and "->" not in text
    # the only path is no example (xenbus' shrinker)
    ops, s["ops"] = s["ops"], [{"op": "down_trylock", "function": "bnx2x_prev_is_path_marked",
                 "path": "drivers/net/b.c", "line": 10700,
                 "callers": [BNX.partition(": ")[2]], "callers_more": 0}]
    only = " ".join(" ".join(message.lock_paragraph(message.Converted(s))).split())
    assert ("becomes mutex_trylock(); it is only reached from one path, in process context: "
            "bnx2x_io_slot_reset()" in only) and "for example" not in only
    # look-alike: no trylock reason, no such paragraph
    s["reasons"], s["ops"] = ["initial count 1"], ops
    assert "down_trylock" not in "\n".join(message.lock_paragraph(message.Converted(s)))


def test_the_audit_listing_goes_below_the_dashes_and_the_body_says_who_holds_it():
    s = sem("drivers/x/a.c:d.l", ops=[("drivers/x/a.c", n, "down") for n in (3, 9)])
    s["ops"][1]["function"] = "g"
    s["evidence"] = [f"drivers/x/a.c:{n}: down() in f{n}()" for n in range(1, 8)]
    item = message.Converted(s)
    msg = message.commit_message("x: ", "Convert the d semaphore to a mutex", [item],
                                 "A <a@kernel.org>")
    notes = below.reviewer_notes([item])
    full = below.evidence([item], "6.1.192")
    assert all(e not in msg for e in s["evidence"]) and all(e in full for e in s["evidence"])
    # nothing of the tool below the ---: the sender's notes name the evidence;
    # the body says, in a sentence, how the semaphore was found
    assert notes == "" and "Linux 6.1.192" in full
    sending = below.sending_notes([], ["evidence/0001-x.txt"])
    assert "- evidence/0001-x.txt" in sending and "sem2mutex" not in sending
    assert "Found, and converted, with the Coccinelle scripts of sem2mutex." in \
        " ".join(msg.split())
    s["rule"] = "lock.mutex"
    assert "lock.mutex" in full or "lock.mutex" in below.evidence([item], "6.1.192")
    assert "only held inside f() and g()" in msg and "lock.mutex" not in msg
    assert msg.rstrip().endswith("Signed-off-by: A <a@kernel.org>")
    # nothing here says how it was tested: the verification writes that
    assert "tested" not in msg.lower()


def test_the_testing_line_is_what_the_verification_ran():
    from classify.convert import testing
    rec = {"apply": "ok", "problems": [], "not_built": [], "new_sparse": [],
           "build": {"a.c": {"arch": "x86_64", "after": {"status": "ok"}},
                     "b.c": {"arch": "m68k", "after": {"status": "ok"}}}}
    line = testing.testing_sentence(rec)
    assert line.startswith("Compile-tested only: built with sparse before and after on "
                           "x86_64 and m68k allmodconfig (gcc")
    assert "m68k-linux-gnu-gcc" in line
    # a forced choice of machine: its compiler, and the option in words
    forced = {**rec, "build": {"c.c": {"arch": "mips+SGI_IP32", "after": {"status": "ok"}}}}
    line = testing.testing_sentence(forced)
    assert "on mips (with CONFIG_SGI_IP32=y) allmodconfig (mips-linux-gnu-gcc" in line
    # look-alikes: a file no configuration builds, a patch that did not apply
    rec2 = {**rec, "build": {"a.c": {"arch": "x86_64", "after": {"status": "not built"}}},
            "not_built": ["a.c: CONFIG_A depends on BROKEN"]}
    assert testing.testing_sentence(rec2) == \
        "Not compile-tested: a.c: CONFIG_A depends on BROKEN."
    assert testing.testing_sentence({"apply": "does not apply: x"}) == ""
    booted = sem("drivers/x/a.c:d.l")
    booted["runtime"] = {"status": "exercised-clean", "boots": [
        {"boot": "runtime-xen", "result": "clean", "ops": 4}]}
    said = testing.testing_sentence(rec, [booted])
    assert said.startswith("Built with sparse") and "Booted once in QEMU (x86_64) with " \
        "lockdep and CONFIG_DEBUG_MUTEXES, the semaphore made a debug mutex" in said
    booted["runtime"] = {"status": "violated", "boots": [{"boot": "b", "result": "violated"}]}
    assert "QEMU" not in testing.testing_sentence(rec, [booted])


def test_the_testing_paragraph_goes_before_the_trailers_once(tmp_path):
    from classify.convert import testing
    p = tmp_path / "p.patch"
    p.write_text("From 0\nSubject: x\n\nwhy\n\nSigned-off-by: A <a@k>\n---\n"
                 " a.c | 2 +-\n")
    testing.write_testing(p, "Compile-tested only: here.")
    testing.write_testing(p, "Compile-tested only: there.")
    assert p.read_text() == ("From 0\nSubject: x\n\nwhy\n\nCompile-tested only: there."
                             "\n\nSigned-off-by: A <a@k>\n---\n a.c | 2 +-\n")
    q = tmp_path / "q.patch"
    q.write_text("From 0\nSubject: x\n\nwhy\n---\n a.c | 2 +-\n")
    testing.write_testing(q, "Compile-tested only: here.")
    assert "why\n\nCompile-tested only: here.\n---\n" in q.read_text()


def test_insert_notes_below_the_dashes(tmp_path):
    p = tmp_path / "p.patch"
    p.write_text("Subject: x\n\nwhy\n\nSigned-off-by: A <a@k>\n---\n a.c | 2 +-\n\n"
                 "diff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n")
    below.insert_notes(p, "Notes for the reviewer:\n- one\n")
    assert p.read_text().startswith("Subject: x\n\nwhy\n\nSigned-off-by: A <a@k>\n---\n"
                                    "Notes for the reviewer:\n- one\n\n a.c | 2 +-\n")


# ------------------------------------------------------------------ identity

@pytest.mark.parametrize("env, ok", [
    ({"GIT_AUTHOR_NAME": "Ada L", "GIT_AUTHOR_EMAIL": "ada@kernel.org"}, True),
    ({"GIT_AUTHOR_NAME": GIT_ENV["GIT_AUTHOR_NAME"],
      "GIT_AUTHOR_EMAIL": GIT_ENV["GIT_AUTHOR_EMAIL"]}, False),
    ({"GIT_AUTHOR_NAME": "Seed", "GIT_AUTHOR_EMAIL": "m@users.noreply.seed.example"}, False),
    ({"GIT_AUTHOR_NAME": "X", "GIT_AUTHOR_EMAIL": "x@example.org"}, False),
    # look-alike of a reserved domain that is a real one
    ({"GIT_AUTHOR_NAME": "X", "GIT_AUTHOR_EMAIL": "x@example-corp.com"}, True),
])
def test_identity_refuses_placeholders(tmp_path, env, ok):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if ok:
        assert identity.identity(tmp_path, env) == (env["GIT_AUTHOR_NAME"],
                                                   env["GIT_AUTHOR_EMAIL"])
    else:
        with pytest.raises(identity.IdentityError, match="SIGNOFF=0"):
            identity.identity(tmp_path, env)


def test_identity_none_at_all(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    with pytest.raises(identity.IdentityError, match="no identity"):
        identity.identity(tmp_path, {})


# ------------------------------------------------------------------ the reports

def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "classify", "patches", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@needs_spatch
def test_patches_leaves_the_reports_alone_and_record_updates_them(tmp_path):
    kernel = mail_tree(tmp_path / "linux")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "audit.json").write_text(json.dumps(audit3()))
    # a record an earlier run left of a semaphore the audit no longer converts
    (reports / "patches.json").write_text(
        '{"semaphores": {"drivers/gone/gone.c:g.lock": {"status": "converted"}}}\n')
    (reports / "audit.md").write_text("# audit\n")
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in reports.iterdir()}
    out = tmp_path / "work" / "patches"
    res = _cli("--kernel", str(kernel), "--audit", str(reports / "audit.json"), "--out",
               str(out), "--no-verify", "--id", "drivers/bar/bar.c:dev.lock",
               env={"GIT_AUTHOR_NAME": "Ada L", "GIT_AUTHOR_EMAIL": "ada@kernel.org"})
    assert res.returncode == 0, res.stderr
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in reports.iterdir()} \
        == before
    assert "drivers/bar/bar.c:dev.lock" in json.loads((out / "patches.json").read_text())[
        "semaphores"]
    res = _cli("--kernel", str(kernel), "--audit", str(reports / "audit.json"), "--out",
               str(out), "--record", "--no-report")
    assert res.returncode == 0, res.stderr
    recorded = json.loads((reports / "patches.json").read_text())
    assert recorded["semaphores"]["drivers/bar/bar.c:dev.lock"]["status"] == "converted"
    assert "drivers/gone/gone.c:g.lock" not in recorded["semaphores"]


def test_a_placeholder_identity_stops_the_run_in_one_line(tmp_path):
    kernel = mail_tree(tmp_path / "linux")
    audit = tmp_path / "audit.json"
    audit.write_text(json.dumps(audit3()))
    res = _cli("--kernel", str(kernel), "--audit", str(audit), "--out",
               str(tmp_path / "out"), "--no-verify",
               env={"GIT_AUTHOR_NAME": "sem2mutex", "GIT_AUTHOR_EMAIL": "sem2mutex@localhost"})
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "placeholder" in res.stderr
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ verified means built

def config_tree(root: Path) -> tuple[Path, Path]:
    (root / "drivers/foo").mkdir(parents=True)
    (root / "drivers/Makefile").write_text("obj-y += foo/\n")
    (root / "drivers/foo/Makefile").write_text(
        "obj-$(CONFIG_FOO) += foo.o\nobj-$(CONFIG_BAR) += bar.o\n"
        "obj-$(CONFIG_ODD) += odd.o\nobj-$(CONFIG_GONE) += gone.o\n")
    (root / "drivers/foo/Kconfig").write_text(
        'config FOO\n\ttristate "foo"\n\tdepends on X86_64 && BROKEN\n\thelp\n\t  Foo.\n\n'
        'config BAR\n\ttristate "bar"\n\tdepends on X86_64\n\n'
        'config ODD\n\ttristate "odd"\n\tdepends on ARM || (X86 && !X86_64)\n\n'
        'if ARM || ARM64\nsource "drivers/foo/Kconfig.arm"\nendif\n')
    (root / "drivers/foo/Kconfig.arm").write_text(
        'config AVS\n\ttristate "avs"\n\tdepends on ARCH_BRCMSTB || COMPILE_TEST\n')
    (root / "drivers/foo/Makefile").write_text(
        (root / "drivers/foo/Makefile").read_text() + "obj-$(CONFIG_AVS) += avs.o\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    build = root / "build"
    build.mkdir()
    (build / ".config").write_text("CONFIG_X86_64=y\nCONFIG_X86=y\nCONFIG_BAR=m\n"
                                   "CONFIG_COMPILE_TEST=y\n# CONFIG_FOO is not set\n")
    return root, build


def test_not_enabled_names_the_unmet_dependency(tmp_path):
    from classify import kbuild
    tree, build = config_tree(tmp_path)
    assert kbuild.not_enabled(tree, build, "drivers/foo/foo.c") == \
        "CONFIG_FOO depends on BROKEN"
    assert kbuild.not_enabled(tree, build, "drivers/foo/bar.c") == ""     # look-alike: on
    assert kbuild.not_enabled(tree, build, "drivers/foo/odd.c") == \
        "CONFIG_ODD depends on ARM || (X86 && !X86_64)"
    # its depends on are met (COMPILE_TEST): the if its Kconfig file is read in is not
    assert kbuild.not_enabled(tree, build, "drivers/foo/avs.c") == \
        "CONFIG_AVS: drivers/foo/Kconfig.arm is read only if ARM || ARM64"
    assert kbuild.kconfig_true("ARCH_BRCMSTB || COMPILE_TEST", {"CONFIG_COMPILE_TEST": "y"})
    assert kbuild.kconfig_true("X86 && !X86_64", {"CONFIG_X86": "y",
                                                  "CONFIG_X86_64": "y"}) is False
    assert kbuild.kconfig_true('FOO="bar"', {}) is None
    assert kbuild.not_enabled(tree, build, "drivers/foo/gone.c") == \
        "CONFIG_GONE is not defined by any Kconfig file"
    c = kbuild.compile_file(tree, build, "drivers/foo/foo.c")   # make never runs
    assert (c.status, c.why) == ("not built", "not built here: CONFIG_FOO depends on BROKEN")
    both = kbuild.compile_files(tree, build, ["drivers/foo/foo.c", "drivers/foo/odd.c"])
    assert {r: c.why for r, c in both.items()} == {
        "drivers/foo/foo.c": "not built here: CONFIG_FOO depends on BROKEN",
        "drivers/foo/odd.c": "not built here: CONFIG_ODD depends on ARM || (X86 && !X86_64)"}


def _fake_compile(status_of_file):
    from classify.kbuild import Compile

    def compile_files(tree, build_dir, rels, logfile=None, sparse=True, check_config=True):
        out = {}
        for rel in rels:
            st, why = status_of_file(rel)
            out[rel] = Compile(rel, st, why, [], ["error: x"] if st == "failed" else [], 0.0)
        return out
    return compile_files


def _verify(tmp_path, monkeypatch, status_of_file):
    from classify.convert import verify as V
    monkeypatch.setattr(V, "compile_files", _fake_compile(status_of_file))
    monkeypatch.setattr(V, "git_am", lambda tree, patch: "")
    monkeypatch.setattr(V, "checkpatch", lambda tree, patch: V.Checkpatch(0, 0, 0))
    monkeypatch.setattr(V, "includers", lambda tree, h: ["drivers/foo/user.c"])
    patch = tmp_path / "0001-x.patch"
    patch.write_text("diff --git a/drivers/foo/foo.c b/drivers/foo/foo.c\n"
                     "diff --git a/drivers/foo/foo.h b/drivers/foo/foo.h\n")
    rec = V.verify_patch(tmp_path, tmp_path, patch, tmp_path / "logs")
    return rec, V.status_of(rec)


def test_a_patch_to_a_file_the_config_leaves_out_is_not_verified(tmp_path, monkeypatch):
    rec, status = _verify(tmp_path, monkeypatch, lambda rel: (
        ("not built", "not built here: CONFIG_FOO depends on BROKEN")
        if rel == "drivers/foo/foo.c" else ("ok", "")))
    assert status == "not built"
    assert rec["not_built"] == ["drivers/foo/foo.c: not built here: CONFIG_FOO depends on "
                                "BROKEN"]
    rec, status = _verify(tmp_path, monkeypatch, lambda rel: ("ok", ""))
    assert status == "verified" and rec["not_built"] == []


def test_an_includer_failing_before_is_reported(tmp_path, monkeypatch):
    rec, status = _verify(tmp_path, monkeypatch, lambda rel: (
        ("failed", "make failed") if rel == "drivers/foo/user.c" else ("ok", "")))
    assert status == "problem"
    assert any("user.c" in p and "before the patch" in p for p in rec["problems"])
    # look-alike: an includer the configuration leaves out is no problem
    rec, status = _verify(tmp_path, monkeypatch, lambda rel: (
        ("not built", "not built here: CONFIG_X depends on ARM")
        if rel == "drivers/foo/user.c" else ("ok", "")))
    assert status == "verified" and not rec["problems"]


def test_a_file_built_after_but_not_before_has_no_new_warnings(tmp_path, monkeypatch):
    """The make before the patch stopped on another target (scripts/unifdef could
    not run): the file's warnings after have nothing to be compared with."""
    from classify.convert import verify as V
    from classify.kbuild import Compile, Diagnostic
    applied = []

    def compile_files(tree, build_dir, rels, logfile=None, sparse=True, check_config=True):
        before = not applied
        warn = [Diagnostic("drivers/foo/user.c", 142, "warning", "dubious: x | !y")]
        return {rel: Compile(rel, "not built" if before and rel.endswith("user.c") else "ok",
                             "make stopped first: x" if before else "",
                             warn if not before and rel.endswith("user.c") else [], [], 0.0)
                for rel in rels}
    rec, status = _verify(tmp_path, monkeypatch, lambda rel: ("ok", ""))
    assert status == "verified"                     # look-alike: built both times
    monkeypatch.setattr(V, "compile_files", compile_files)
    monkeypatch.setattr(V, "git_am", lambda tree, patch: applied.append(1) and "")
    patch = tmp_path / "0001-x.patch"
    rec = V.verify_patch(tmp_path, tmp_path, patch, tmp_path / "logs")
    assert rec["new_sparse"] == []
    assert any("user.c: not built before the patch" in p for p in rec["problems"])


# ------------------------------------------------------------------ diff style

@pytest.mark.parametrize("old, new, want", [
    ("\tstruct semaphore\tpoll_sem;", "\tstruct mutex poll_sem;",
     "\tstruct mutex\t\tpoll_sem;"),
    ("\tstruct semaphore                mgmt_lock;", "\tstruct mutex mgmt_lock;",
     "\tstruct mutex" + " " * 20 + "mgmt_lock;"),
    ("\tstruct semaphore\tx;", "\tstruct completion x;", "\tstruct completion\tx;"),
    ("static struct semaphore\ts;", "static struct mutex s;", "static struct mutex\ts;"),
    # look-alikes: one space stays one; another line is not this one's pair
    ("\tstruct semaphore sem;", "\tstruct mutex sem;", "\tstruct mutex sem;"),
    ("\tstruct semaphore\ta;", "\tstruct mutex b;", "\tstruct mutex b;"),
])
def test_aligned_keeps_the_name_column(old, new, want):
    from classify.convert import transform
    assert transform.aligned(old, new) == want


ALIGNED = DRIVER.replace("struct dev {\n\tstruct semaphore lock;\n",
                         "struct dev {\n\tint\t\t\tcount;\n\tstruct semaphore\tlock;\n"
                         ).replace("\tdown(&d->lock);\n",
                                   "\t/* down() keeps the others out */\n\tdown(&d->lock);\n")


@needs_spatch
def test_the_patch_keeps_alignment_and_flags_a_stale_comment(tmp_path, monkeypatch):
    kernel = small_tree(tmp_path / "linux")
    (kernel / "drivers/foo/foo.c").write_text(ALIGNED)
    res = series.generate(kernel, {"kernel_version": "6.1.192", "semaphores": [
        sem("drivers/foo/foo.c:dev.lock", ops=[("drivers/foo/foo.c", 13, "down")])]},
        tmp_path / "out", tmp_path / "trees", signoff=("A", "a@kernel.org"))
    text = res.series[0].patches[0].read_text()
    # the definition gets the comment checkpatch --strict asks for (finish.py)
    assert "+\tstruct mutex\t\tlock; /* serialises f() */\n" in text
    notes = text.split("\n---\n", 1)[1].split("\ndiff --git", 1)[0]
    # the comment right above the changed call is this lock's: rewritten, not flagged
    assert "+\t/* mutex_lock() keeps the others out */\n" in text
    assert "still speaks of the semaphore" not in notes
    # look-alike: the untouched semaphore's lines are neither changed nor flagged
    assert "d->other" not in notes and "semaphore other" not in notes


def test_stale_comments_only_near_changed_lines(tmp_path):
    from classify.convert import transform
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    src = tmp_path / "a.c"
    body = ["/* up() far away */"] + ["x;"] * 10 + ["/* the semaphore */", "down(&s);", "y;"]
    src.write_text("\n".join(body) + "\n")
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "a"], check=True, env=env)
    src.write_text(src.read_text().replace("down(&s);", "mutex_lock(&s);"))
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qam", "b"], check=True, env=env)
    found = transform.stale_comments(tmp_path)
    assert found == ['a.c:12: a comment still speaks of the semaphore: "/* the semaphore */"']


def test_continuation_lines_are_indented():
    s = sem("drivers/infiniband/hw/hns/hns_roce_device.h:hns_roce_cmdq.poll_sem")
    s["evidence"] = ["drivers/infiniband/hw/hns/hns_roce_cmd.c:69: down() in "
                     "hns_roce_cmd_mbox_poll()", "a.c:1: up() in f()"]
    notes = below.evidence([message.Converted(s)], "6.1.192")
    assert ("    drivers/infiniband/hw/hns/hns_roce_cmd.c:69: down() in\n"
            "      hns_roce_cmd_mbox_poll()\n    a.c:1: up() in f()\n") in notes
    assert all(len(ln) <= 75 or len(ln.split()) <= 2 or ln.lstrip().startswith("spatch ")
               for ln in notes.splitlines())


def test_a_paired_mutex_says_how_its_take_and_release_were_paired():
    s = sem("drivers/s/hisi_sas.h:hisi_hba.sem")
    s["rule"] = "lock.paired_on_one_task"
    s["reasons"] = ["initial count 1", "taken in one function and released in another:",
                    "  drivers/s/main.c:2295 a() calls b() and gives it back at line 2298"]
    text = " ".join(" ".join(message.lock_paragraph(message.Converted(s))).split())
    assert "taken by one call and released by a later one, on the same task" in text
    # the pairing is argued in the message, not handed to the reviewer, even
    # for a release whose callers were not followed
    s["ops"] = [{"op": "up", "path": "drivers/s/v3.c", "line": 5, "function": "done",
                 "context": "unknown: x"}]
    assert below.reviewer_notes([message.Converted(s)]) == ""
    assert below.reviewer_notes([message.Converted({**s, "rule": "lock.mutex"})]) != ""
    plain = {**s, "rule": "lock.mutex"}
    assert "a later one" not in " ".join(message.lock_paragraph(message.Converted(plain)))


def test_the_steps_of_a_pairing_are_bullets_without_line_numbers():
    s = sem("drivers/s/hisi_sas.h:hisi_hba.sem")
    s["rule"] = "lock.paired_on_one_task"
    s["reasons"] = ["initial count 1", "taken in one function and released in another:",
                    "  drivers/s/main.c:2295 a() calls b() and gives it back at line 2298",
                    "  drivers/s/v3.c:5201, :5210 c() is pci_error_handlers.reset_done (x.h)"]
    text = "\n".join(message.lock_paragraph(message.Converted(s)))
    assert "- a() calls b() and gives it back\n" in text
    assert "- c() is pci_error_handlers.reset_done (x.h)" in text
    assert not re.search(r"\d{3}", text)


def test_stale_words_in_a_comment_block_a_kernel_doc_and_a_message(tmp_path):
    from classify.convert import transform
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    src = tmp_path / "a.c"
    body = (["/**", " * struct priv - the device", " * @proc_sem: Semaphore for proc accessing.",
             " * @other: not the one", " */"] + ["x;"] * 20 +
            ["/* the interrupt handler wakes us; we can't down() the",
             "   semaphore from there. */",
             "if (down_interruptible(&p->proc_sem))",
             "\tpr_err(\"down_interruptible failed\\n\");",
             "/* down() in a far function */"])
    src.write_text("\n".join(body) + "\n")
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "a"], check=True, env=env)
    src.write_text(src.read_text().replace("down_interruptible(&p->proc_sem)",
                                           "mutex_lock_interruptible(&p->proc_sem)"))
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qam", "b"], check=True, env=env)
    found = transform.stale_comments(tmp_path, name="proc_sem")
    assert [f.split(": ", 1)[0] for f in found] == ["a.c:3", "a.c:26", "a.c:27", "a.c:29",
                                                    "a.c:30"]
    assert "a message still speaks" in found[3]
    # look-alikes: the kernel-doc is found by the lock's name, not by distance
    assert [f.split(": ", 1)[0] for f in transform.stale_comments(tmp_path, name="other")] \
        == ["a.c:26", "a.c:27", "a.c:29", "a.c:30"]


def test_a_wait_under_the_lock_is_said_in_the_message_without_line_numbers():
    s = sem("drivers/xen/pvcalls-back.c:pvcalls_fedata.socket_lock",
            ops=[("drivers/xen/pvcalls-back.c", 998, "down")])
    wait = ("backend_disconnect() holds socket_lock while release_passive() calls "
            "destroy_workqueue() (drivers/xen/pvcalls-back.c:468); the work item "
            "accept() it waits for takes socket_lock (drivers/xen/pvcalls-back.c:368): "
            "this deadlock exists with the semaphore too.")
    with_wait = message.commit_message("xen: ", "Convert", [message.Converted(s, waits=[wait])],
                                       None)
    words = " ".join(with_wait.split())
    assert "calls destroy_workqueue(); the work item accept()" in words
    assert "It needs a fix of its own, which should come before this patch." in words
    assert ":468" not in with_wait
    # two of them: the fix is asked for once
    two = message.commit_message("xen: ", "Convert",
                                 [message.Converted(s, waits=[wait, wait.replace("468", "9")])],
                                 None)
    assert " ".join(two.split()).count("fix of its own") == 1 and "Each needs" in two
    # look-alike: no finding, no such paragraph
    assert "separate fix" not in message.commit_message("xen: ", "Convert",
                                                        [message.Converted(s)], None)


def test_a_lock_is_held_in_process_context_because_every_take_sleeps():
    s = sem("drivers/xen/pvcalls-back.c:pvcalls_fedata.socket_lock",
            ops=[("drivers/xen/pvcalls-back.c", 368, "down"),
                 ("drivers/xen/pvcalls-back.c", 370, "down_interruptible")])
    s["ops"][0].update(context="process: drivers/xen/pvcalls-back.c:954 x",
                       callers=["drivers/xen/pvcalls-back.c:889 pvcalls_back_event() calls f()"])
    assert message.sleeping_takes([message.Converted(s)]) == (
        "Every take is a down() or down_interruptible(), which sleeps: the callers "
        "already run in process context, where a mutex may be taken.")
    # a trylock is no sleeping take: the sentence says so
    tried = {**s, "ops": s["ops"] + [{**s["ops"][0], "op": "down_trylock"}]}
    assert message.sleeping_takes([message.Converted(tried)]).startswith(
        "Every take but the down_trylock() is a down()")
    msg = " ".join(message.commit_message("xen: ", "s", [message.Converted(s)], None).split())
    assert "which sleeps" in msg and "paths that start" not in msg
    notes = "\n".join(below.callers_notes([message.Converted(s)]))
    assert "drivers/xen/pvcalls-back.c:889 pvcalls_back_event() calls f()" in \
        " ".join(notes.split())
    # a start whose context is unknown: a take sleeps, nothing left unproven;
    # a release in a function that does not take it is
    s["ops"][0].update(context="process + unknown: x", callers=[
        "drivers/x.c:3 g() is stored in s.cb: its callers are not followed"])
    del s["ops"][1]
    assert below.shared_risks([message.Converted(s)]) == []
    s["ops"][0]["op"] = "up"
    assert below.shared_risks([message.Converted(s)])[0].startswith(
        "Some paths to f() start at a function stored in a structure whose callers "
        "were not followed")
    # ... unless the function that releases it takes it too (and sleeps there)
    taken = {**s, "ops": s["ops"] + [{**s["ops"][0], "op": "down", "line": 360}]}
    assert below.shared_risks([message.Converted(taken)]) == []
    del s["ops"][0]["context"], s["ops"][0]["callers"]
    assert below.callers_notes([message.Converted(s)]) == []


def test_a_path_of_the_call_graph_in_words():
    said = message.chain_prose(BNX.split(": ", 1)[1])
    assert said == ("bnx2x_io_slot_reset(), the pci_error_handlers.slot_reset callback, "
                    "calls bnx2x_prev_unload(), which calls bnx2x_prev_is_path_marked()")
    reg = ("drivers/p.c:3 p_init() registers p_thread() with kthread_run() (process) -> "
           "drivers/p.c:9 p_thread() calls f()")
    assert message.chain_prose(reg) == ("p_thread(), registered with kthread_run(), "
                                        "calls f()")
    passed = ("x.c:3 count() is shrinker.count_objects (process) -> count() passes "
              "reclaim() to bus_for_each_dev(), which calls it")
    assert message.chain_prose(passed) == ("count(), the shrinker.count_objects callback, "
                                           "calls bus_for_each_dev(), which calls reclaim()")
    # look-alike: a hop it cannot say in words stays as the audit wrote it
    odd = "drivers/p.c:3 a() is x.y (process) -> a() jumps to b()"
    assert message.chain_prose(odd) == "a() is x.y (process) -> a() jumps to b()"


def test_a_reason_loses_every_line_number_of_the_tree():
    said = message.without_lines(
        "every i2c_gate_ctrl(..., 1) of ngene-cards.c is followed by i2c_gate_ctrl(..., 0) "
        "on each way out of its function (:188, :210); drivers/x.c:12 f() calls g() (x.c:3)")
    assert ":188" not in said and ":210" not in said and ":12" not in said and ":3" not in said
    assert said.startswith("every i2c_gate_ctrl(..., 1) of ngene-cards.c is followed")
    assert "function; f() calls g()" in said
    assert message.without_lines("h() calls f(), which takes it, and every path of h() "
                                 "releases it afterwards, at line 12") == (
        "h() calls f(), which takes it, and every path of h() releases it afterwards")


def test_the_cover_says_why_for_the_kinds_it_converts():
    from classify.convert import cover
    only = " ".join(cover.motivation({"completion"}).split())
    assert "only counts events" in only and "optimistic spinning" not in only
    assert "2006" not in only                   # the mutex migration is not its story
    both = cover.motivation({"mutex", "completion"})
    assert "optimistic spinning" in both and "only counts events" in both and "2006" in both


def test_a_lock_only_taken_under_rtnl_is_named_for_the_reviewer():
    def ksz(callers, more=0):
        s = sem("drivers/net/k.c:dev_priv.proc_sem", ops=[("drivers/net/k.c", 9, "down")])
        s["ops"][0].update(function="netdev_ioctl", callers=callers, callers_more=more)
        return s
    ioctl = "drivers/net/k.c:6446 netdev_ioctl() is net_device_ops.ndo_eth_ioctl (process)"
    said = " ".join(below.reviewer_notes([message.Converted(ksz([ioctl]))]).split())
    assert ("Every take of proc_sem is in netdev_ioctl(), the net_device_ops.ndo_eth_ioctl "
            "callback, which the core calls with RTNL held") in said
    # look-alikes: one path from a work item, or paths not all followed
    work = "drivers/net/k.c:70 k_work() is registered with INIT_WORK() (process)"
    for s in (ksz([ioctl, work]), ksz([ioctl], more=2)):
        assert "RTNL" not in below.reviewer_notes([message.Converted(s)])


def test_the_driver_s_other_semaphores_are_said_with_why_they_stay():
    from classify.convert.series import driver_others
    ioctl = sem("drivers/scsi/e/e_ioctl.c:buffered_ioctl_semaphore", kind="static")
    nvram = {**sem("drivers/scsi/e/e.h:e_adapter.nvram_semaphore", "counting"),
             "rule": "lock.released_by_another_function",
             "reasons": ["binary semaphore released by another function: up() in "
                         "e_nvram_callback(), which never takes it (maybe another task)"]}
    pool = {**sem("drivers/scsi/e/e.h:e_adapter.pool", "counting"),
            "rule": "certain.count_above_one",
            "reasons": ["count above 1: initial count MAX_FRAGMENTS = 64"]}
    elsewhere = {**sem("drivers/scsi/f/f.h:f.sem", "counting"), "rule": "certain.timed_lock"}
    shared = {**sem("include/linux/e.h:e_bus.sem", "counting"), "rule": "certain.timed_lock"}
    other_lock = sem("drivers/scsi/e/e.c:other_lock", kind="static")   # a mutex of its own
    items = [message.Converted(ioctl)]
    others = driver_others([ioctl, nvram, pool, elsewhere, shared, other_lock], items,
                           ["drivers/scsi/e/e_ioctl.c", "include/linux/e.h"])
    # include/linux/e.h is a header of all subsystems: its semaphores are no
    # driver's (parport's header beside HID's)
    assert [s["id"] for s in others] == [nvram["id"], pool["id"]]
    # a directory that gathers components: only the files of the same one
    # (iwpm_util.c's patch says nothing of user_mad.c's sm_sem)
    iwpm = sem("drivers/infiniband/core/iwpm_util.h:iwpm_nlmsg_request.sem", "completion")
    sm = {**sem("drivers/infiniband/core/user_mad.c:ib_umad_port.sm_sem", "counting"),
          "rule": "certain.trylock"}
    cm = {**sem("drivers/infiniband/core/iwpm_msg.c:iwpm_x.sem", "counting"),
          "rule": "certain.trylock"}
    assert driver_others([iwpm, sm, cm], [message.Converted(iwpm)],
                         ["drivers/infiniband/core/iwpm_util.c"]) == [cm]
    msg = " ".join(message.commit_message("scsi: e: ", "s", items, None, others).split())
    assert ("nvram_semaphore stays a semaphore: it is released by e_nvram_callback(), which "
            "does not take it, and a mutex must be released by the task that took it.") in msg
    assert "pool stays a semaphore: it starts at MAX_FRAGMENTS (64) and counts" in msg
    assert "stays" not in message.commit_message("scsi: e: ", "s", items, None)


def test_several_renames_are_said_in_the_plural():
    one = message.Converted(sem("a/b.c:d.x_sem"), new_name="x_lock")
    two = message.Converted(sem("a/b.c:d.y_sem"), new_name="y_lock")
    said = " ".join(message.commit_message("a: ", "s", [one, two], None).split())
    assert "Rename x_sem to x_lock and y_sem to y_lock, so that the names no longer say" in said
    assert "the name no longer says" in " ".join(
        message.commit_message("a: ", "s", [one], None).split())


BOOTED = """From 1 Mon Sep 17 00:00:00 2001
Subject: [PATCH] x: Convert the y semaphore to a completion

Message as it was then.
---
 x.c | 2 +-

diff --git a/x.c b/x.c
--- a/x.c
+++ b/x.c
@@ -1 +1 @@
-\tdown(&y);
+\twait_for_completion(&y);
-- 
2.39.5
"""


def test_a_patch_booted_as_it_is_says_so(tmp_path: Path) -> None:
    from classify.convert.testing import converted_line
    (tmp_path / "booted").mkdir()
    (tmp_path / "booted" / "0001-x.patch").write_text(BOOTED)
    mailed = tmp_path / "0001-x.patch"
    mailed.write_text(BOOTED.replace("Message as it was then.", "A better message."))
    runs = [{"boot": f"runtime-x-converted.{n}", "patch": "0001-x.patch", "result": "clean",
             "verdict": "completed"} for n in (1, 2)]
    s = {"id": "x.c:y", "runtime": {"status": "not-exercised", "converted": runs}}
    line = converted_line([s], mailed, tmp_path / "booted")
    assert line == ("Booted twice in QEMU (x86_64) with this patch, with lockdep and "
                    "CONFIG_DEBUG_MUTEXES (and a debug series that checks the semaphores "
                    "left), running a workload that reaches the converted code: no warning.")
    assert "DEBUG_MUTEX_FULL" not in line       # no such option upstream
    # look-alikes: another diff was booted; one boot broke; none booted this one
    other = tmp_path / "other.patch"
    other.write_text(BOOTED.replace("wait_for_completion(", "wait_for_completion_killable("))
    assert converted_line([s], other, tmp_path / "booted") == ""
    broke = {**s, "runtime": {"converted": [runs[0], {**runs[1], "result": "broken"}]}}
    assert converted_line([broke], mailed, tmp_path / "booted") == ""
    assert converted_line([s, {"id": "x.c:z"}], mailed, tmp_path / "booted") == ""
    assert converted_line([s], mailed, None) == ""
    # the patches as make patches writes them: no signature
    bare = tmp_path / "bare.patch"
    bare.write_text(BOOTED.replace("-- \n2.39.5\n", ""))
    assert converted_line([s], bare, tmp_path / "booted").startswith("Booted twice in QEMU")
    (tmp_path / "booted" / "0001-x.patch").write_text(bare.read_text())
    assert converted_line([s], other, tmp_path / "booted") == ""
    assert converted_line([s], bare, tmp_path / "booted").startswith("Booted twice in QEMU")
