"""The runtime set's harness pieces without a kernel: the QEMU command line and the QMP
key presses, the mutex_debug warnings in the parser, the variants (made by the marking
mechanism, spatch on a small kernel tree), the devices and the evaluation of a runtime boot."""

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from classify import lockmap, runtime_records
from classify.records.boot import Boot
from classify.records.runtime import RuntimeRecord
from classify.convert.marking import MARKING_NAME, SUBJECT
from classify.tree import GIT_ENV
from qemu import runrecord, runtime, variants
from qemu.boot import BootResult
from qemu.scenarios import Scenario
from qemu.source import Source
from qemu.parse import clean_lines, find_reports, lockdep_classes, parse_log
from qemu.run import KEYS_TRIGGER, RunRequest, RunStatus, key_events, qemu_command, run_qemu
from qemu.scenarios import load_scenario, named_set, standard_set

IC = "fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"


def test_qemu_command_with_devices_and_qmp(tmp_path):
    req = RunRequest(Path("bz"), Path("rd"), tmp_path / "log", memory_mb=512,
                     extra_args=("-drive", "file=d.img,format=raw,if=virtio"),
                     qmp=tmp_path / "q.sock", keys=2)
    cmd = qemu_command(req)
    assert cmd[cmd.index("-m") + 1] == "512"
    assert cmd[cmd.index("-qmp") + 1] == f"unix:{tmp_path / 'q.sock'},server=on,wait=off"
    assert cmd[-2:] == ["-drive", "file=d.img,format=raw,if=virtio"]
    assert "-qmp" not in qemu_command(RunRequest(Path("bz"), Path("rd"), tmp_path / "l"))


def test_key_events_press_and_release():
    ev = key_events(("a",))
    assert [e["arguments"]["events"][0]["data"]["down"] for e in ev] == [True, False]
    assert ev[0]["arguments"]["events"][0]["data"]["key"] == {"type": "qcode", "data": "a"}


def fake_qmp(path: Path, got: list):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        f = conn.makefile("rwb")
        f.write(b'{"QMP": {}}\n')
        f.flush()
        for line in f:
            got.append(json.loads(line))
            f.write(b'{"return": {}}\n')
            f.flush()
        conn.close()
        srv.close()
    threading.Thread(target=serve, daemon=True).start()


def test_keys_are_sent_when_the_guest_asks(tmp_path):
    got: list = []
    fake_qmp(tmp_path / "q.sock", got)
    script = f"echo booting; echo '[ 1.0] {KEYS_TRIGGER}'; sleep 1; echo done"
    res = run_qemu(RunRequest(Path("bz"), Path("rd"), tmp_path / "log", timeout=10,
                              command=("sh", "-c", script), qmp=tmp_path / "q.sock", keys=3))
    assert res.status is RunStatus.EXITED
    assert got[0] == {"execute": "qmp_capabilities"} and len(got) == 1 + 3 * 2
    log = (tmp_path / "log").read_text()
    assert "s2m-harness: keys: 3 pressed\n" in log
    assert parse_log(log).verdict == "truncated"     # the harness line stays the last one


def test_no_keys_without_the_trigger(tmp_path):
    got: list = []
    fake_qmp(tmp_path / "q.sock", got)
    run_qemu(RunRequest(Path("bz"), Path("rd"), tmp_path / "log", timeout=10,
                        command=("sh", "-c", "echo s2m-init: done"), qmp=tmp_path / "q.sock",
                        keys=3))
    assert got == [] and "keys:" not in (tmp_path / "log").read_text()


WARN = """------------[ cut here ]------------
mutex_debug &hdev->driver_input_lock@drivers/hid/hid-core.c:2927: down_trylock() in interrupt context, a mutex is for task context only
WARNING: CPU: 0 PID: 0 at include/linux/semaphore.h:190 hid_input_report+0x1c5/0x1e0
Modules linked in:
CPU: 0 PID: 0 Comm: swapper Not tainted 6.1.192+ #1
RIP: 0010:hid_input_report+0x1c5/0x1e0
Call Trace:
 <IRQ>
 hid_irq_in+0x7a/0x220
 __usb_hcd_giveback_urb+0x95/0x120
 </IRQ>
---[ end trace 0000000000000000 ]---
"""


def test_mutex_debug_context_warning_is_one_report_naming_the_semaphore():
    reps = find_reports(clean_lines(WARN))
    assert [r.kind for r in reps] == ["mutex_debug_context"]
    assert reps[0].locks[0].lock_class == "&hdev->driver_input_lock@drivers/hid/hid-core.c:2927"
    assert reps[0].title.endswith("in hid_irq_in")
    # a plain WARNING stays a warning
    plain = WARN.replace(WARN.splitlines()[1] + "\n", "")
    assert [r.kind for r in find_reports(clean_lines(plain))] == ["warning"]


def test_runtime_scenarios_are_a_set_of_their_own():
    names = named_set("runtime")
    assert names and not set(names) & set(standard_set())
    for n in names:
        sc = load_scenario(n)
        assert sc.fragments == runtime.FRAGMENTS and sc.steps[0].startswith("workload:")
        assert sc.about and (sc.variant == "trust" or variants.variant_id(sc.variant) in sc.about)
        wl = sc.steps[0].split(":", 1)[1]
        assert (Path(runtime.__file__).parent / "initramfs" / "workloads" / f"{wl}.sh").is_file()


def test_plan_variants_trust_first_and_marks():
    sems = {IC: {"class": "counting"}, "x:b": {"class": "unknown"}, "x:c": {"class": "counting"},
            "x:d": {"class": "unknown"}}
    scs = [load_scenario("runtime-xfs")]
    scs = [scs[0].__class__(**{**scs[0].__dict__, "variant": "unmark:x:b", "about": ("x:b",)}),
           scs[0].__class__(**{**scs[0].__dict__, "variant": "trust",
                               "about": (IC, "x:c", "x:d")})]
    names, marks = runtime.plan_variants(scs, sems)
    assert names == ["trust", "unmark:x:b"]
    assert marks == ["x:b", IC, "x:c"]       # isolation of x:b; never the unknown x:d
    # a conversion patch's variant marks nothing of its own
    conv = scs + [dataclasses.replace(scs[0], variant="convert:x:d", about=("x:d",))]
    assert runtime.plan_variants(conv, sems) == (names + ["convert:x:d"], marks)
    for bad_variant in ("unmark:nope", "convert:nope"):
        bad = [dataclasses.replace(scs[0], variant=bad_variant)]
        with pytest.raises(Exception, match="nope"):
            runtime.plan_variants(bad, sems)


def test_a_conversion_variant_is_recorded_with_its_patch_and_marks_less_its_id():
    made = [variants.Variant("trust", "c1", frozenset({IC, "x:c"})),
            variants.Variant("convert:x:c", "c2", frozenset({IC}), patch=Path("p/0001-x.patch")),
            variants.Variant("convert:x:e", "", frozenset({IC, "x:c"}),
                             refused="its conversion patch was not made: refused")]
    recs = runrecord.variant_records(made)
    assert recs["convert:x:c"].to_json() == {"converts": "x:c", "patch": "0001-x.patch"}
    assert recs["convert:x:e"].not_made.startswith("its conversion patch was not made")
    assert runrecord.marked_in(recs, "convert:x:c") == {IC}
    assert runrecord.marked_in(recs, "trust") == {IC, "x:c"}


def test_the_scenarios_follow_a_moved_declaration_and_name_those_left_out():
    from dataclasses import replace
    from qemu.variants import for_tree
    sc = load_scenario("runtime-btrfs-challenge")
    old = "fs/btrfs/ctree.h:btrfs_fs_info.uuid_tree_rescan_sem"
    gone = replace(sc, name="runtime-ftdi", variant="unmark:drivers/usb/misc/ftdi-elan.c:"
                   "usb_ftdi.sw_lock", about=("drivers/usb/misc/ftdi-elan.c:usb_ftdi.sw_lock",))
    # 6.12: btrfs_fs_info moved to fs.h; ftdi-elan was removed
    sems = {"fs/btrfs/fs.h:btrfs_fs_info.uuid_tree_rescan_sem": {"class": "counting"}}
    kept, left = for_tree([sc, gone], sems)
    new = "fs/btrfs/fs.h:btrfs_fs_info.uuid_tree_rescan_sem"
    assert [(k.variant, k.about) for k in kept] == [(f"unmark:{new}", (new,))]
    assert left == {"runtime-ftdi": "this tree has no drivers/usb/misc/ftdi-elan.c:"
                                    "usb_ftdi.sw_lock"}
    # a conversion's variant follows its id too
    conv = replace(sc, variant=f"convert:{old}")
    assert [k.variant for k in for_tree([conv], sems)[0]] == [f"convert:{new}"]
    # the tree it was written for: unchanged; two of the same name: not guessed
    assert for_tree([sc], {old: {}}) == ([sc], {})
    two = {f"{h}:btrfs_fs_info.uuid_tree_rescan_sem": {} for h in ("a.h", "b.h")}
    assert for_tree([sc], two)[1] == {sc.name: f"this tree has no {old}"}


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env={**os.environ, **GIT_ENV}).stdout.strip()


# A small kernel tree with the series applied as prepare_source leaves it: 0001, the
# series' own marking (here the line edit of x.s's declaration, blind to its alias in
# a.c), 0005.  x.s is declared in a.h and aliased by a local pointer in a.c (the
# two-file case a line edit misses); y.s is its look-alike (same member name, another
# struct), never to be marked; b.c's other gives its address to a function (the
# script refuses it); c.c's spare is a counting semaphore no scenario names.
A_H = "struct x {\n\tstruct semaphore s;\n\tstruct semaphore t;\n};\nstruct y {\n" \
      "\tstruct semaphore s;\n};\n"
A_C = """#include "a.h"

void fa(struct x *xx, struct y *yy)
{
\tstruct semaphore *p = &xx->s;
\tstruct semaphore *q = &yy->s;

\tsema_init(&xx->s, 2);
\tsema_init(&xx->t, 1);
\tdown(p);
\tup(p);
\tdown(q);
\tup(q);
\tdown(&xx->t);
\tup(&xx->t);
}
"""
B_C = """static struct semaphore other;

void take(struct semaphore *s);

void fb(void)
{
\tsema_init(&other, 3);
\ttake(&other);
}
"""
C_C = "static struct semaphore spare;\n\nvoid fc(void)\n{\n\tsema_init(&spare, 4);\n" \
      "\tdown(&spare);\n}\n"
SERIES = ["0001-first.patch", MARKING_NAME, "0005-later.patch"]


def small_sem(sid, cls, line, kind, init=()):
    path = sid.split(":")[0]
    return {"id": sid, "class": cls, "declared": {"path": path, "line": line, "kind": kind},
            "init": [{"path": p, "line": ln} for p, ln in init], "ops": []}


SMALL_AUDIT = [small_sem("fs/a.h:x.s", "counting", 2, "member", [("fs/a.c", 5)]),
               small_sem("fs/a.h:x.t", "unknown", 3, "member", [("fs/a.c", 9)]),
               small_sem("fs/a.h:y.s", "unknown", 6, "member", [("fs/a.c", 6)]),
               small_sem("fs/b.c:other", "counting", 1, "static", [("fs/b.c", 7)]),
               small_sem("fs/c.c:spare", "counting", 1, "static", [("fs/c.c", 5)])]


def small_kernel(root: Path) -> tuple[Path, Path]:
    """(the tree, the series directory holding the patch after the marking)."""
    repo = root / "k"
    (repo / "fs").mkdir(parents=True)
    (repo / "kernel").mkdir()
    for rel, text in {"Makefile": "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 192\n",
                      "fs/a.h": A_H, "fs/a.c": A_C, "fs/b.c": B_C, "fs/c.c": C_C}.items():
        (repo / rel).write_text(text)
    git(repo, "init", "-q")
    for subject, rel, text in [
            ("base", None, None),
            ("locking: semaphore: Introduce struct arch_semaphore", "Kconfig", "# arch\n"),
            (SUBJECT, "fs/a.h", A_H.replace("struct semaphore s;", "struct arch_semaphore s;", 1)),
            ("later", "kernel/after.c", "int after;\n")]:
        if rel:
            (repo / rel).write_text(text)
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", subject)
    series = root / "kp"
    series.mkdir()
    (series / SERIES[2]).write_text(git(repo, "format-patch", "-1", "--stdout", "HEAD") + "\n")
    return repo, series


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The small kernel and its variants, made once (spatch takes seconds per file)."""
    if shutil.which("spatch") is None:
        pytest.skip("spatch missing")
    root = tmp_path_factory.mktemp("runtime")
    repo, series = small_kernel(root)
    source = Source(repo, repo, SERIES, "x")
    sems = {s["id"]: s for s in SMALL_AUDIT}
    names = ["trust", "unmark:fs/a.h:x.s", "unmark:fs/a.h:x.t", "unmark:fs/b.c:other"]
    head = git(repo, "rev-parse", "HEAD")
    made = runtime.make_variants(source, sems, names,
                                 ["fs/a.h:x.s", "fs/a.h:x.t", "fs/b.c:other"],
                                 root / "mark", series)
    return SimpleNamespace(root=root, repo=repo, series=series, source=source, sems=sems,
                           head=head, names=names, variants={v.name: v for v in made})


def test_variants_are_made_by_the_marking_mechanism(small):
    repo, v = small.repo, small.variants
    # the source tree (HEAD and files) is not touched
    assert git(repo, "rev-parse", "HEAD") == small.head
    assert git(repo, "status", "--porcelain") == ""

    def show(name, path):
        return git(repo, "show", f"{v[name].commit}:{path}") + "\n"
    trust_h, trust_c = show("trust", "fs/a.h"), show("trust", "fs/a.c")
    # trust: x.s marked with its alias in the other file; the look-alike y.s untouched
    assert trust_h == A_H.replace("struct semaphore s;", "struct arch_semaphore s;", 1) \
        .replace("struct semaphore t;", "struct arch_semaphore t;")
    assert trust_c == A_C.replace("struct semaphore *p", "struct arch_semaphore *p")
    assert "static struct arch_semaphore spare;" in show("trust", "fs/c.c")   # the pool
    assert show("trust", "fs/b.c") == B_C                                    # refused
    assert show("trust", "kernel/after.c") == "int after;\n"        # the series goes on
    assert v["trust"].marked == {"fs/a.h:x.s", "fs/a.h:x.t", "fs/c.c:spare"}
    assert list(v["trust"].not_marked) == ["fs/b.c:other"]
    assert v["trust"].not_marked["fs/b.c:other"].startswith("refused: ")
    assert "its address goes elsewhere" in v["trust"].not_marked["fs/b.c:other"]
    # unmark:x.s is the exact inverse of its marking, the alias included
    assert show("unmark:fs/a.h:x.s", "fs/a.c") == A_C
    assert show("unmark:fs/a.h:x.s", "fs/a.h") == A_H.replace("struct semaphore t;",
                                                              "struct arch_semaphore t;")
    assert v["unmark:fs/a.h:x.s"].marked == v["trust"].marked - {"fs/a.h:x.s"}
    assert v["unmark:fs/a.h:x.t"].marked == v["trust"].marked - {"fs/a.h:x.t"}
    # a refused id has no variant, and says why
    refused = v["unmark:fs/b.c:other"]
    assert not refused.commit and "not marked in trust" in refused.refused
    assert "its address goes elsewhere" in refused.refused
    for name in ("trust", "unmark:fs/a.h:x.s", "unmark:fs/a.h:x.t"):
        assert "struct y {\n\tstruct semaphore s;\n};" in show(name, "fs/a.h")


def test_a_second_run_reuses_the_marking(small, monkeypatch):
    def no_spatch(*a, **kw):
        raise AssertionError("the marking ran again")
    monkeypatch.setattr(variants, "mark_commits", no_spatch)
    again = runtime.make_variants(small.source, small.sems, small.names,
                                  ["fs/a.h:x.s", "fs/a.h:x.t", "fs/b.c:other"],
                                  small.root / "mark", small.series)
    assert {v.name: (v.commit, v.marked) for v in again} == {
        v.name: (v.commit, v.marked) for v in small.variants.values()}


def test_a_changed_patch_after_the_marking_is_put_back_without_marking_again(
        small, monkeypatch, tmp_path):
    """A new or changed series patch after 0004 (a rule check of PARTIAL mode, say)
    gives a new trust commit from the same marking commits: git am, no spatch."""
    def no_spatch(*a, **kw):
        raise AssertionError("the marking ran again")
    monkeypatch.setattr(variants, "mark_commits", no_spatch)
    series = tmp_path / "kp"
    series.mkdir()
    patch = (small.series / SERIES[2]).read_text()
    assert "+int after;" in patch
    (series / SERIES[2]).write_text(patch.replace("+int after;", "+int after2;"))
    names = ["trust", "unmark:fs/a.h:x.s"]
    marks = ["fs/a.h:x.s", "fs/a.h:x.t", "fs/b.c:other"]
    changed = {v.name: v for v in runtime.make_variants(small.source, small.sems, names,
                                                          marks, small.root / "mark", series)}
    assert changed["trust"].commit != small.variants["trust"].commit
    assert git(small.repo, "show", f"{changed['trust'].commit}:kernel/after.c") == "int after2;"
    assert changed["trust"].marked == small.variants["trust"].marked
    assert git(small.repo, "show", f"{changed['unmark:fs/a.h:x.s'].commit}:fs/a.c") + "\n" == A_C
    # and back: the original series gives the original commits again
    again = {v.name: v.commit for v in runtime.make_variants(
        small.source, small.sems, names, marks, small.root / "mark", small.series)}
    assert again["trust"] == small.variants["trust"].commit


def test_device_args_and_slug():
    sc = load_scenario("runtime-hid")
    args = runtime.device_args(sc, [])
    assert "usb-kbd,bus=xhci.0,id=kbd0" in args and "i8042=off" in args
    net = runtime.device_args(load_scenario("runtime-netconsole"), [Path("/d.img")])
    assert "user,id=n0,restrict=on" in net and "file=/d.img,format=raw,if=virtio" in net
    two = runtime.device_args(load_scenario("runtime-xfs"), [Path("/c.img"), Path("/b.img")])
    assert [a for a in two if a.startswith("file=")] == [
        "file=/c.img,format=raw,if=virtio", "file=/b.img,format=raw,if=virtio"]
    assert runtime.slug("unmark:" + IC) == "unmark-fs-xfs-xfs_log_priv.h-xlog_in_core.ic_sema"
    scsi = runtime.device_args(load_scenario("runtime-megasas"), [])
    assert scsi[:2] == ["-device", "megasas"]


def test_make_firmware(tmp_path, monkeypatch):
    code, store = tmp_path / "CODE.fd", tmp_path / "VARS.fd"
    monkeypatch.setattr(runtime, "OVMF_CODE", code)
    monkeypatch.setattr(runtime, "OVMF_VARS", store)
    args, errors = runtime.make_firmware("ovmf", tmp_path / "boot" / "vars.fd")
    assert not args and errors == [f"{code} not found: apt-get install ovmf"]
    code.write_bytes(b"code")
    store.write_bytes(b"vars")
    args, errors = runtime.make_firmware("ovmf", tmp_path / "boot" / "vars.fd")
    # the code read only, the variables a copy of the store: a boot cannot change OVMF's
    assert not errors and args == [
        "-drive", f"if=pflash,format=raw,readonly=on,file={code}",
        "-drive", f"if=pflash,format=raw,file={tmp_path / 'boot' / 'vars.fd'}"]
    assert (tmp_path / "boot" / "vars.fd").read_bytes() == b"vars"
    assert runtime.make_firmware("uboot", tmp_path / "x.fd") == (
        [], ["unknown firmware 'uboot' (known: ovmf)"])
    assert load_scenario("runtime-efi").firmware == "ovmf"


LOG = """KTAP version 1
# s2m-init scenario: runtime-xfs
1..2
ok 1 boot
ok 2 workload:xfs
{report}# lockdep-class: 0000 OPS:      12 FD:    1 BD:    1 +.+.: &iclog->ic_sema@fs/xfs/xfs_log.c:1639
s2m-init: done
s2m-harness: qemu exited with status 0 after 20.0 s
"""
BAD_UNLOCK = """=====================================
WARNING: bad unlock balance detected!
6.1.192+ #1 Not tainted
-------------------------------------
kworker/0:2/30 is trying to release lock (&iclog->ic_sema@fs/xfs/xfs_log.c:1639) at:
[<ffffffff81234567>] xlog_ioend_work+0x10/0x20
but there are no more locks to release!
"""


def test_evaluate_runtime():
    sems = [{"id": IC, "class": "counting", "declared": {"path": "fs/xfs/xfs_log_priv.h",
             "line": 204, "kind": "member"},
             "init": [{"path": "fs/xfs/xfs_log.c", "line": 1639}], "ops": []}]
    index = lockmap.build_index(sems)
    sc = load_scenario("runtime-xfs")
    clean = parse_log(LOG.format(report=""))
    assert runtime.evaluate_runtime(sc, clean, index, frozenset({IC})).passed
    reported = parse_log(LOG.format(report=BAD_UNLOCK))
    # as a debug mutex the report is the evidence; as a semaphore it is a failure
    assert runtime.evaluate_runtime(sc, reported, index, frozenset()).passed
    ev = runtime.evaluate_runtime(sc, reported, index, frozenset({IC}))
    assert not ev.passed and "bad_unlock_balance" in ev.problems[0]
    failed = parse_log(LOG.format(report="").replace("ok 2 workload", "not ok 2 workload"))
    ev = runtime.evaluate_runtime(sc, failed, index, frozenset({IC}))
    assert ev.problems == ["workload step workload:xfs: not ok"]
    # a conversion patch's boot: any report fails it, even one about a debug mutex
    conv = dataclasses.replace(sc, variant=f"convert:{IC}")
    assert runtime.evaluate_runtime(conv, clean, index, frozenset()).passed
    ev = runtime.evaluate_runtime(conv, reported, index, frozenset())
    assert not ev.passed and "bad_unlock_balance" in ev.problems[0]


def test_make_disks(tmp_path):
    if not Path("/usr/sbin/mkfs.xfs").exists():
        pytest.skip("xfsprogs not installed")
    assert runtime.make_disks("xfs", tmp_path / "x.img") == ([tmp_path / "x.img"], [])
    assert (tmp_path / "x.img").stat().st_size == 320 << 20
    images, errors = runtime.make_disks("nosuchfs", tmp_path / "y.img")
    assert not images and errors[0].startswith("mkfs.nosuchfs not found")


def test_make_disks_bcache_formats_a_cache_and_a_backing_device(tmp_path):
    if not Path("/usr/sbin/make-bcache").exists():
        pytest.skip("bcache-tools not installed")
    images, errors = runtime.make_disks("bcache", tmp_path / "b.img")
    assert not errors and [p.name for p in images] == ["b.cache.img", "b.backing.img"]
    # bcache's magic (c68573f6-4e1a-45ca-8265-f57f48ba6d81) at 4 KiB + 24 in both
    magic = bytes.fromhex("c68573f64e1a45ca8265f57f48ba6d81")
    for image in images:
        with image.open("rb") as f:
            f.seek(4096 + 24)
            assert f.read(16) == magic, image


def test_count_warning_names_its_semaphore():
    text = (Path(__file__).parent / "logs" / "warning-one-holder.log").read_text()
    rep = find_reports(clean_lines(text.partition("\n\n")[2]))[0]
    assert rep.kind == "warning"
    assert [lk.lock_class for lk in rep.locks] == ["&md@kernel/locking/mutex_rule_check.c:141"]
    # the message with the count is the body's first line: the record keeps it
    assert rep.body[0].startswith("mutex_debug &md@kernel/locking/mutex_rule_check.c:141 "
                                  "initialized with count 2")
    assert rep.detail == rep.body[0]
    plain = find_reports(clean_lines(WARN.replace(WARN.splitlines()[1] + "\n", "")))[0]
    assert plain.locks == [] and plain.detail == ""


def test_a_count_warning_after_its_warning_line_names_its_semaphore_too():
    """Where WARN() has no trap (arm, every arch before 4.x), warn_slowpath_fmt prints
    the message after the WARNING line: the same lock and the same detail."""
    text = (Path(__file__).parent / "logs" / "warning-one-holder.log").read_text()
    lines = clean_lines(text.partition("\n\n")[2])
    i = next(n for n, ln in enumerate(lines) if "initialized with count" in ln)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    rep = find_reports(lines)[0]
    assert rep.kind == "warning" and rep.headline.startswith("WARNING: CPU: 0")
    assert [lk.lock_class for lk in rep.locks] == ["&md@kernel/locking/mutex_rule_check.c:141"]
    assert rep.detail.startswith("mutex_debug &md@kernel/locking/mutex_rule_check.c:141 "
                                 "initialized with count 2")


def test_runtime_test_orchestration(small, tmp_path, monkeypatch):
    """The whole chain with fake build and boot on the small kernel's variants (reused
    from the stamp): variants in order, one build each, a probe's build failure as its
    evidence, a variant not made named, runtime.json with every id and each variant."""
    apath = tmp_path / "reports" / "audit.json"
    apath.parent.mkdir()
    apath.write_text(json.dumps({"semaphores": SMALL_AUDIT}))
    monkeypatch.setattr(runtime, "audit_path", lambda v: apath)
    monkeypatch.setattr(runtime, "check_kernel_tree", lambda k: type("T", (), {"version": "6.1.192"}))
    monkeypatch.setattr(runtime, "prepare_source", lambda k: small.source)
    monkeypatch.setattr(runtime.Places, "of", classmethod(lambda cls, v: cls(
        small.root / "wt", small.root / "mark", tmp_path / "build", tmp_path / "images")))
    monkeypatch.setattr(variants, "series_dir_of", lambda k: small.series)
    monkeypatch.setattr(runtime, "RUNTIME_DIR", tmp_path / "rt")
    built = []

    def fake_build(source, v, places):
        built.append(v.name)
        if v.name == "unmark:fs/a.h:x.t":
            v.errors = ["/o/fs/a.c:9:3: error: no member named 'count'"]
        else:
            v.image, v.build = tmp_path / "bz", runtime.BuildResult(
                runtime.BuildStatus.SUCCESS, 1.0, tmp_path / "bz")
        return v
    monkeypatch.setattr(runtime, "build_variant", fake_build)
    monkeypatch.setattr(runtime, "built_sources", lambda build: {"fs/a.c"})
    monkeypatch.setattr(runtime, "make_initramfs", lambda req: type(
        "I", (), {"status": runtime.InitramfsStatus.SUCCESS})())
    booted = []

    def fake_boot(sc, v, source, index, initramfs, out_dir, accel, name):
        booted.append((name, v.name))
        if v.image is None:
            return BootResult(name, True, "not_built", [])
        ops = 7 if sc.name == "t-trust" else 2
        report = BAD_UNLOCK.replace("&iclog->ic_sema@fs/xfs/xfs_log.c:1639",
                                    "&a->s@fs/a.c:5") if v.name != "trust" else ""
        if name == "t-challenge.2":         # the other outcome of a race
            report = report.replace("bad unlock balance detected!",
                                    "lock held when returning to user space!")
        (out_dir / f"{name}.log").write_text(
            LOG.replace("&iclog->ic_sema@fs/xfs/xfs_log.c:1639", "&a->s@fs/a.c:5")
            .replace("OPS:      12", f"OPS:       {ops}").format(report=report))
        return BootResult(sc.name, True, "completed", [])
    monkeypatch.setattr(runtime, "boot_one", fake_boot)

    def scn(name, variant, about, verdict="completed", repeat=1):
        return Scenario(name, "", runtime.FRAGMENTS, steps=("workload:xfs",), set="runtime",
                        variant=variant, about=tuple(about), verdict=verdict, repeat=repeat)
    scs = [scn("t-challenge", "unmark:fs/a.h:x.s", ["fs/a.h:x.s"], repeat=3),
           scn("t-trust", "trust", ["fs/a.h:x.s", "fs/a.h:x.t"]),
           scn("t-probe", "unmark:fs/a.h:x.t", ["fs/a.h:x.t"], "not_built"),
           scn("t-other", "unmark:fs/b.c:other", ["fs/b.c:other"])]
    out = tmp_path / "boots"
    out.mkdir()
    results, data = runtime.runtime_test(scs, tmp_path, out, record=tmp_path / "runtime.json")
    assert built == ["trust", "unmark:fs/a.h:x.s", "unmark:fs/a.h:x.t"]
    assert sorted(booted) == sorted([
        ("t-trust", "trust"), ("t-challenge.1", "unmark:fs/a.h:x.s"),
        ("t-challenge.2", "unmark:fs/a.h:x.s"), ("t-challenge.3", "unmark:fs/a.h:x.s"),
        ("t-probe", "unmark:fs/a.h:x.t")])
    assert booted[0] == ("t-trust", "trust") and booted[-1][0] == "t-probe"
    other = [r for r in results if r.scenario == "t-other"][0]
    assert not other.passed and "not made" in other.problems[0]
    assert "refused" in other.problems[0]
    text = (tmp_path / "runtime.json").read_text()
    record = json.loads(text)
    # the record is what the artifacts say: the same bytes derived again from them
    arts = tmp_path / "runtime"
    assert runrecord.derive({"semaphores": SMALL_AUDIT}, arts).dumps() == text
    assert sorted(p.name for p in arts.iterdir()) == [
        "run.json", "t-challenge.1.log", "t-challenge.2.log", "t-challenge.3.log",
        "t-trust.log", "unmark-fs-a.h-x.t.build.txt"]
    assert (arts / "unmark-fs-a.h-x.t.build.txt").read_text() == \
        "/o/fs/a.c:9:3: error: no member named 'count'\n"
    recs = record["semaphores"]
    assert recs["fs/a.h:x.s"]["status"] == "violated"
    assert recs["fs/a.h:x.s"]["repeats"] == [{"scenario": "t-challenge", "boots": 3, "outcomes": [
        {"outcome": "bad_unlock_balance: WARNING: bad unlock balance detected! in "
                    "xlog_ioend_work", "seen": 2},
        {"outcome": "lock_held_return_to_user: WARNING: lock held when returning to user "
                    "space! in xlog_ioend_work", "seen": 1}]}]
    assert recs["fs/a.h:x.s"]["boots"][0] == {"boot": "t-trust", "ran_as": "semaphore",
                                              "result": "clean", "ops": 7,
                                              "lock_class": "&a->s@fs/a.c:5"}
    assert recs["fs/a.h:x.t"]["status"] == "does-not-build-as-a-mutex"
    assert recs["fs/a.h:x.t"]["compiler"] == "fs/a.c:9: error: no member named 'count'"
    assert record["boots"]["t-probe"]["build_errors"] == [recs["fs/a.h:x.t"]["compiler"]]
    assert recs["fs/b.c:other"]["status"] == "not-built"
    assert record["boots"]["t-other"]["verdict"] == "not_made"
    assert data.trust_marks == ["fs/a.h:x.s", "fs/a.h:x.t", "fs/b.c:other"]
    made = record["variants"]
    assert made["trust"]["marked"] == ["fs/a.h:x.s", "fs/a.h:x.t", "fs/c.c:spare"]
    assert list(made["trust"]["not_marked"]) == ["fs/b.c:other"]
    assert made["unmark:fs/a.h:x.s"] == {"unmarks": "fs/a.h:x.s"}
    assert "refused" in made["unmark:fs/b.c:other"]["not_made"]
    summary = runtime.summary(results, data, {s.name: list(s.about) for s in scs})
    assert "runtime: fs/a.h:x.s: violated: bad_unlock_balance" in summary
    assert "runtime: trust: fs/b.c:other NOT MARKED, runs as a debug mutex: refused: " \
        in summary
    assert "runtime: variant unmark:fs/b.c:other NOT MADE: " in summary
    assert "runtime: 4 boots of 2 kernels; 1 kernel(s) did not build, not booted: " \
        "unmark:fs/a.h:x.t; 1 variant(s) not made: unmark:fs/b.c:other" in summary


# Real console logs of runtime boots kept as parser fixtures (tests/qemu/logs/runtime-*.log,
# an earlier run than the committed record, whose logs are in reports/linux-*/runtime/):
# the header's SEM
# names the audit id the first report must map to, EXERCISED the ids whose lock classes
# the log's "# lockdep-class:" lines must show with operations.
RUNTIME_LOGS = sorted((Path(__file__).parent / "logs").glob("runtime-*.log"))
AUDIT = Path(__file__).resolve().parents[2] / "reports" / "linux-6.1.192" / "audit.json"


def _header(path):
    head, _, body = path.read_text(errors="replace").partition("\n\n")
    return dict(ln.split(":", 1) for ln in head.splitlines() if ":" in ln), body


@pytest.mark.parametrize("path", RUNTIME_LOGS, ids=[p.stem for p in RUNTIME_LOGS])
def test_runtime_fixture_maps_to_the_audit(path):
    header, body = _header(path)
    index = lockmap.build_index(json.loads(AUDIT.read_text())["semaphores"])
    parsed = parse_log(body)
    if "SEM" in header:
        assert lockmap.report_ids(parsed.reports[0], index) == [header["SEM"].strip()]
    else:
        assert parsed.reports == []
    boot = Boot(path.stem, "trust", frozenset(), lockdep_classes(clean_lines(body)))
    ex = runtime_records.exercised(boot, index)
    for sid in [x.strip() for x in header.get("EXERCISED", "").split(",") if x.strip()]:
        assert ex[sid].ops > 0, sid


def test_a_trust_variant_that_does_not_build_fails_its_boots_by_name():
    """Not a crash: the trust kernel is about no one semaphore, so its build error
    fails each of its boots with the error lines."""
    v = runtime.Variant("trust", "0" * 40, frozenset())
    v.errors = ["fs/xfs/xfs_trace.h:431: error: 'struct mutex_debug' has no member named 'count'"]
    res = runtime.boot_one(load_scenario("runtime-xfs"), v, None, lockmap.build_index([]), None,
                           Path("/nonexistent"), "tcg")
    assert not res.passed and res.verdict == "not_built"
    assert res.problems[0] == "variant trust did not build:" and "xfs_trace.h:431" in res.problems[1]


def test_every_semaphore_that_ran_has_its_challenge_or_probe():
    """The committed record against the scenarios: each semaphore that ran in the trust
    kernel is booted unmarked too (issue 17), and the check catches one that is not."""
    from qemu.scenarios import list_scenarios
    audit = json.loads((runtime.audit_path("6.1.192")).read_text())
    sems = {s["id"]: s for s in audit["semaphores"]}
    data = RuntimeRecord.load(runtime.audit_path("6.1.192").parent / "runtime.json")
    scs = [load_scenario(n) for n in list_scenarios()]
    scs = [sc for sc in scs if sc.set == "runtime"]
    assert runtime.unchallenged(data, scs, sems) == []
    netpoll = "include/linux/netpoll.h:netpoll_info.dev_lock"
    without = [sc for sc in scs if sc.variant != "unmark:" + netpoll]
    assert runtime.unchallenged(data, without, sems) == [netpoll]
    # a mutex needs none: the trust kernel already runs it as a debug mutex
    as_mutex = dict(sems, **{netpoll: dict(sems[netpoll], **{"class": "mutex"})})
    assert runtime.unchallenged(data, without, as_mutex) == []


BCACHE_SPLAT = """
======================================================
WARNING: possible circular locking dependency detected
6.1.192+ #1 Not tainted
------------------------------------------------------
kworker/0:2/32 is trying to acquire lock:
ffff9d208293f5a8 ((wq_completion)bcache_gc){+.+.}-{0:0}, at: __flush_workqueue+0x82/0x3a9

but task is already holding lock:
ffffffff8a99fd00 (&bch_register_lock){+.+.}-{3:3}, at: cache_set_free+0x2b/0x121

which lock already depends on the new lock.


the existing dependency chain (in reverse order) is:

-> #2 (&bch_register_lock){+.+.}-{3:3}:
       __mutex_lock+0xae/0x291
       mutex_lock_nested+0x16/0x18
       cached_dev_free+0x59/0x147
       process_one_work+0x1db/0x310
       worker_thread+0x188/0x253
       kthread+0xbe/0xc6
       ret_from_fork+0x1f/0x30

-> #1 ((work_completion)(&cl->work)#3){+.+.}-{0:0}:
       process_one_work+0x1a5/0x310
       worker_thread+0x188/0x253
       kthread+0xbe/0xc6
       ret_from_fork+0x1f/0x30

-> #0 ((wq_completion)bcache_gc){+.+.}-{0:0}:
       __lock_acquire+0xe74/0x11dd
       lock_acquire+0xd1/0x1f0
       __flush_workqueue+0xa2/0x3a9
       drain_workqueue+0x54/0x119
       destroy_workqueue+0x33/0x1d5
       cache_set_free+0x92/0x121
       process_one_work+0x1db/0x310
       worker_thread+0x188/0x253
       kthread+0xbe/0xc6
       ret_from_fork+0x1f/0x30

other info that might help us debug this:

Chain exists of:
  (wq_completion)bcache_gc --> (work_completion)(&cl->work)#3 --> &bch_register_lock

 Possible unsafe locking scenario:

       CPU0                    CPU1
       ----                    ----
  lock(&bch_register_lock);
                               lock((work_completion)(&cl->work)#3);
                               lock(&bch_register_lock);
  lock((wq_completion)bcache_gc);

 *** DEADLOCK ***

3 locks held by kworker/0:2/32:
 #0: ffff9d2080147ad8 ((wq_completion)events){+.+.}-{0:0}, at: process_one_work+0x16d/0x310
 #1: ffff9d209f867e80 ((work_completion)(&cl->work)#3){+.+.}-{0:0}, at: process_one_work+0x16d/0x310
 #2: ffffffff8a99fd00 (&bch_register_lock){+.+.}-{3:3}, at: cache_set_free+0x2b/0x121

stack backtrace:
CPU: 0 PID: 32 Comm: kworker/0:2 Not tainted 6.1.192+ #1 
Workqueue: events cache_set_free
Call Trace:
 <TASK>
 dump_stack_lvl+0x52/0x62
 dump_stack+0x10/0x12
 print_circular_bug+0x228/0x237
 check_noncircular+0xac/0xbe
 __lock_acquire+0xe74/0x11dd
 lock_acquire+0xd1/0x1f0
"""


def test_evaluate_runtime_accepts_only_the_reports_a_scenario_declares():
    """runtime-bcache-gc declares the bcache lockdep report its reboot prints (about no
    semaphore): with it the trust boot passes, without it the declared report is
    missing, and any other report about no semaphore still fails the boot."""
    index = lockmap.build_index([])
    sc = load_scenario("runtime-bcache-gc")
    log = LOG.replace("runtime-xfs", sc.name).replace("workload:xfs", "workload:bcachegc")
    with_splat = parse_log(log.format(report="") + BCACHE_SPLAT)
    assert with_splat.reports and runtime.evaluate_runtime(sc, with_splat, index,
                                                           frozenset()).passed
    ev = runtime.evaluate_runtime(sc, parse_log(log.format(report="")), index, frozenset())
    assert ev.problems == ["missing expected report: circular_locking "
                           "'possible circular locking dependency detected'"]
    other = dataclasses.replace(sc, reports=())
    ev = runtime.evaluate_runtime(other, with_splat, index, frozenset())
    assert not ev.passed and "report not about a debug-mutex semaphore" in ev.problems[0]


IC_SEMS = [{"id": IC, "class": "counting", "declared": {"path": "fs/xfs/xfs_log_priv.h",
            "line": 204, "kind": "member"},
            "init": [{"path": "fs/xfs/xfs_log.c", "line": 1639}], "ops": []}]
TIMEOUT = "s2m-harness: timeout after 300 s, killed qemu after 300.1 s"
HUNG_REBOOT = """INFO: task reboot:57 blocked for more than 120 seconds.
      Not tainted 6.1.192+ #1
"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
task:reboot          state:D stack:0     pid:57    ppid:1      flags:0x00004000
Call Trace:
 <TASK>
 __schedule+0x453/0x495
 schedule+0x80/0xaf
 wait_for_device_probe+0x6d/0x8a
 device_shutdown+0xe/0x163
 </TASK>
"""


def hung_log(*parts: str) -> str:
    """The workload's log, then parts (reports) in order, ended by the harness's
    timeout."""
    text = LOG.format(report="".join(parts))
    return text.replace("s2m-harness: qemu exited with status 0 after 20.0 s", TIMEOUT)


def test_evaluate_runtime_a_challenge_may_expect_a_hang():
    """smscufx's challenge deadlocks its probe (a recursive debug mutex), and the reboot
    waits for it: the harness's hang is what the scenario expects, not a failure, when
    a report that names the challenged semaphore comes before it."""
    index = lockmap.build_index(IC_SEMS)
    hung = parse_log(hung_log(BAD_UNLOCK))
    assert hung.verdict == "hang"
    ev = runtime.evaluate_runtime(load_scenario("runtime-xfs-challenge"), hung, index,
                                  frozenset())
    assert "verdict hang, expected completed" in ev.problems
    expecting = load_scenario("runtime-smscufx-challenge")
    assert expecting.verdict == "hang"
    sc = dataclasses.replace(load_scenario("runtime-xfs-challenge"), verdict="hang",
                             reports=expecting.reports)
    # the named report, then the hung reboot, then the harness's timeout: passes
    both = parse_log(hung_log(BAD_UNLOCK, HUNG_REBOOT))
    assert [r.kind for r in both.reports] == ["bad_unlock_balance", "hung_task", "hang"]
    ev = runtime.evaluate_runtime(sc, both, index, frozenset())
    assert ev.passed, ev.problems


def test_a_declared_hang_needs_a_report_naming_the_challenged_semaphore_first():
    """A hang the scenario declares, with no report naming the semaphore its kernel
    leaves a debug mutex, or with that report only after the kernel's first sign of the
    hang, could be the harness's own: the boot fails."""
    index = lockmap.build_index(IC_SEMS)
    expecting = load_scenario("runtime-smscufx-challenge")
    sc = dataclasses.replace(load_scenario("runtime-xfs-challenge"), verdict="hang",
                             reports=expecting.reports)
    alone = parse_log(hung_log(HUNG_REBOOT))
    ev = runtime.evaluate_runtime(sc, alone, index, frozenset())
    assert ev.problems == [f"the declared hang (hung_task: INFO: task reboot blocked for more "
                           f"than N seconds in wait_for_device_probe) at line "
                           f"{alone.reports[0].line}, but no report before it names {IC}"]
    late = parse_log(hung_log(HUNG_REBOOT, BAD_UNLOCK))
    ev = runtime.evaluate_runtime(sc, late, index, frozenset())
    assert not ev.passed and "no report before it names" in ev.problems[0]
    # the timeout alone (no hung task): the same
    ev = runtime.evaluate_runtime(dataclasses.replace(sc, reports=tuple(
        r for r in sc.reports if r.kind == "hang")), parse_log(hung_log()), index, frozenset())
    assert not ev.passed and "(hang: s2m-harness: timeout" in ev.problems[0]
    # a trust kernel challenges nothing: its declared hang never passes
    trust = dataclasses.replace(sc, variant="trust")
    ev = runtime.evaluate_runtime(trust, parse_log(hung_log(HUNG_REBOOT)), index, frozenset())
    assert ev.problems and "challenges no semaphore" in ev.problems[-1]


def test_a_declared_broken_workload_needs_a_report_naming_the_semaphore_first():
    """raw_gadget's challenge breaks its own workload: the step's "not ok" passes
    after a report naming the semaphore, and fails without one or before it."""
    index = lockmap.build_index(IC_SEMS)
    sc = dataclasses.replace(load_scenario("runtime-xfs-challenge"),
                             ktap={"s2m-init/workload:xfs": "not ok"})
    broken = LOG.replace("ok 2 workload:xfs", "{report}not ok 2 workload:xfs", 1)
    first = parse_log(broken.replace("{report}", BAD_UNLOCK, 1).format(report=""))
    assert first.reports and runtime.evaluate_runtime(sc, first, index, frozenset()).passed
    after = parse_log(broken.replace("{report}", "", 1).format(report=BAD_UNLOCK))
    assert after.reports[0].line > 5
    ev = runtime.evaluate_runtime(sc, after, index, frozenset())
    assert ev.problems == [f"the declared 'not ok' of workload step workload:xfs at line 5, "
                           f"but no report before it names {IC}"]
    none = parse_log(broken.replace("{report}", "", 1).format(report=""))
    assert not runtime.evaluate_runtime(sc, none, index, frozenset()).passed
    # and a step that is "ok" although the scenario expects it broken is still a failure
    ev = runtime.evaluate_runtime(sc, parse_log(LOG.format(report=BAD_UNLOCK)), index,
                                  frozenset())
    assert ev.problems == ["workload step workload:xfs: ok, expected not ok"]


def test_the_committed_runtime_boots_pass_their_scenarios():
    """Each console log of the committed run, evaluated again against its scenario as it
    stands now: an expectation changed after the run (a challenge that hangs, one that
    breaks its own workload) is held to the real logs, not only to made-up ones."""
    record = runtime.audit_path("6.1.192").parent / "runtime"
    run = json.loads((record / "run.json").read_text())
    audit = json.loads(runtime.audit_path("6.1.192").read_text())
    index = lockmap.build_index(audit["semaphores"])
    trust = set(run["variants"]["trust"]["marked"])
    failed = []
    for boot in [b for b in run["boots"] if b.get("log")]:
        unmarked = boot["variant"].split(":", 1)[1:]
        parsed = parse_log((record / boot["log"]).read_text(errors="replace"))
        ev = runtime.evaluate_runtime(load_scenario(boot["scenario"]), parsed, index,
                                      frozenset(trust - set(unmarked)))
        if not ev.passed:
            failed.append((boot["name"], ev.problems))
    assert len(run["boots"]) > 100 and failed == []
