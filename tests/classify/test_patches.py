"""classify.patches and classify.verify without a kernel tree: subject prefixes,
selection by SUBSYS/ID, refusals, the conversion of one semaphore of a small
synthetic tree into a format-patch series (deterministic, the other semaphores of
the file untouched), and the parsers of sparse and checkpatch output (real
captured output in tests/classify/patches/)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from classify import kbuild
from classify import tree
from classify.convert import maintainers
from classify.convert import message
from classify.convert import notes as below
from classify.convert import select
from classify.convert import series
from classify.convert import subject
from classify.convert import transform
from classify.convert import verify as V
from classify.report import to_json, to_markdown

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "patches"
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests"))
from test_tree import fake_kernel  # noqa: E402

needs_spatch = pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch missing")


# ------------------------------------------------------------------ subject

@pytest.mark.parametrize("paths, prefix", [
    (["drivers/net/ethernet/micrel/ksz884x.c"], "net: ksz884x: "),
    (["drivers/net/ethernet/huawei/hinic/hinic_hw_wq.c"], "net: hinic: "),
    # the Xen tree's slash form
    (["drivers/xen/pvcalls-back.c"], "xen/pvcalls-back: "),
    (["drivers/xen/xenbus/xenbus_probe.c", "drivers/xen/xenbus/xenbus_client.c"],
     "xen/xenbus: "),
    (["drivers/scsi/esas2r/esas2r_ioctl.c"], "scsi: esas2r: "),
    (["drivers/infiniband/hw/hns/hns_roce_cmd.c"], "RDMA/hns: "),
    # the upper-layer protocols are IB/, the drivers and the core RDMA/
    (["drivers/infiniband/ulp/isert/ib_isert.c"], "IB/isert: "),
    (["drivers/infiniband/core/iwpm_msg.c", "drivers/infiniband/core/iwpm_util.c"],
     "RDMA/iwpm: "),
    (["drivers/infiniband/core/cma.c"], "RDMA/cma: "),
    (["drivers/infiniband/hw/vmw_pvrdma/pvrdma_cmd.c",
      "drivers/infiniband/hw/vmw_pvrdma/pvrdma_main.c"], "RDMA/vmw_pvrdma: "),
    (["drivers/scsi/hisi_sas/hisi_sas_main.c", "drivers/scsi/hisi_sas/hisi_sas_v3_hw.c"],
     "scsi: hisi_sas: "),
    (["drivers/scsi/sg.c"], "scsi: sg: "),
    (["drivers/platform/x86/intel/ifs/core.c", "drivers/platform/x86/intel/ifs/sysfs.c"],
     "platform/x86/intel/ifs: "),
    (["drivers/staging/vc04_services/interface/vchiq_arm/vchiq_arm.c"],
     "staging: vchiq_arm: "),
    (["drivers/usb/gadget/legacy/raw_gadget.c"], "usb: gadget: raw_gadget: "),
    (["drivers/cpufreq/brcmstb-avs-cpufreq.c"], "cpufreq: brcmstb-avs-cpufreq: "),
    (["drivers/parport/ieee1284.c", "drivers/parport/share.c"], "parport: "),
    # drivers/char gathers unrelated drivers: the next directory is the subsystem
    # and the subsystem's name is not said twice
    (["drivers/char/ipmi/ipmi_ipmb.c"], "ipmi: ipmb: "),
    (["drivers/char/ipmi/ipmi_ssif.c"], "ipmi: ssif: "),
    (["drivers/char/ipmi/kcs_bmc.c"], "ipmi: kcs_bmc: "),
    # the DRM tree's slash form; amd/ gathers AMD's drivers
    (["drivers/gpu/drm/amd/amdkfd/kfd_chardev.c", "drivers/gpu/drm/amd/amdkfd/kfd_debug.c",
      "drivers/gpu/drm/amd/amdkfd/kfd_process.c"], "drm/amdkfd: "),
    (["drivers/gpu/drm/i915/i915_drv.c"], "drm/i915: "),
    (["drivers/gpu/drm/drm_gem.c"], "drm: "),
    # wireless drivers are "wifi:", not "net:"
    (["drivers/net/wireless/intersil/orinoco/orinoco_usb.c"], "wifi: orinoco: "),
])
def test_subject_prefix(paths, prefix):
    assert subject.subject_prefix(paths) == prefix


def test_subject_prefix_negative_cases():
    assert not subject.subject_prefix(["drivers/char/ipmi/ipmi_ipmb.c"]).startswith("char")
    assert not subject.subject_prefix(["drivers/net/wireless/intersil/orinoco/orinoco_usb.c"]
                                ).startswith("net")
    assert "drivers" not in subject.subject_prefix(["drivers/xen/pvcalls-back.c"])
    assert not subject.subject_prefix(["drivers/gpu/drm/amd/amdkfd/kfd_process.c"]
                                      ).startswith(("drm: ", "drm/amd:"))


def test_cover_prefix_is_what_the_patches_share():
    assert subject.common_prefix(["net: hinic: ", "net: ksz884x: "], "drivers/net") == "net: "
    # drivers of one subsystem share its label
    assert subject.common_prefix(["RDMA/hns: ", "RDMA/isert: "], "drivers/infiniband") == \
        "RDMA: "
    assert subject.common_prefix(["RDMA/iwpm: ", "IB/isert: "], "drivers/infiniband") == \
        "RDMA: "
    assert subject.common_prefix(["xen/pvcalls-back: ", "xen/xenbus: "], "drivers/xen") == \
        "xen: "
    # nothing shared: the fallback
    assert subject.common_prefix(["xen: a: ", "net: b: "], "X") == "X: "


# ------------------------------------------------------------------ selection

def sem(sid, cls="mutex", kind="member", struct="dev", ops=(), init=()):
    path = sid.split(":")[0]
    return {"id": sid, "class": cls, "subsystem": "/".join(path.split("/")[:2]),
            "declared": {"path": path, "line": 5, "kind": kind, "struct": struct,
                         "array": False, "function": ""},
            "ops": [{"path": p, "line": ln, "op": op, "function": "f"} for p, ln, op in ops],
            "init": [{"path": p, "line": ln, "count": "1", "value": 1, "form": "sema_init"}
                     for p, ln in init],
            "reasons": ["initial count 1"], "evidence": [f"{path}:9: down() in f()"],
            "possible_ops": [], "escapes": []}


SEMS = [sem("drivers/xen/a.c:dev.lock"), sem("drivers/xen/a.c:dev.wait", "completion"),
        sem("drivers/xen/b.c:dev.count", "counting"),
        sem("drivers/xenbus/c.c:bus.lock"), sem("drivers/net/d.c:priv.sem", "unknown")]


def test_select_by_subsys_takes_the_prefix_as_a_directory():
    chosen, skipped = select.select(SEMS, "drivers/xen", [])
    assert [s["id"] for s in chosen] == ["drivers/xen/a.c:dev.lock", "drivers/xen/a.c:dev.wait"]
    assert not skipped
    # trailing slash, and a single file
    assert len(select.select(SEMS, "drivers/xen/", [])[0]) == 2
    assert [s["id"] for s in select.select(SEMS, "drivers/xenbus/c.c", [])[0]] == \
        ["drivers/xenbus/c.c:bus.lock"]


def test_select_by_id_and_unknown_id():
    chosen, skipped = select.select(SEMS, None, ["drivers/xen/a.c:dev.wait", "no/such.c:x"])
    assert [s["id"] for s in chosen] == ["drivers/xen/a.c:dev.wait"]
    assert [(o.id, o.why) for o in skipped] == [
        ("no/such.c:x", ["no semaphore with this id in the audit"])]


def test_select_by_id_of_a_counting_semaphore_says_why():
    chosen, skipped = select.select(SEMS, None, ["drivers/xen/b.c:dev.count"])
    assert not chosen
    assert "classed counting" in skipped[0].why[0]


def test_select_subsystem_without_convertible_semaphore():
    chosen, skipped = select.select(SEMS, "drivers/net", [])
    assert not chosen
    assert skipped[0].id == "SUBSYS=drivers/net"
    assert "none classed mutex or completion" in skipped[0].why[0]
    _, skipped = select.select(SEMS, "sound", [])
    assert "no semaphore is declared or used there" in skipped[0].why[0]


def test_a_header_member_belongs_to_the_code_using_it():
    parport = sem("include/linux/parport.h:ieee1284_info.irq", "completion",
                  ops=[("drivers/parport/ieee1284.c", 75, "down_interruptible")],
                  init=[("drivers/parport/share.c", 469)])
    assert [s["id"] for s in select.select([parport], "drivers/parport", [])[0]] == [parport["id"]]
    assert not select.select([parport], "drivers/usb", [])[0]
    assert select.series_subsystem(parport) == "drivers/parport"
    assert select.series_subsystem(SEMS[0]) == "drivers/xen"


def test_select_everything_by_default_but_only_convertible():
    chosen, skipped = select.select(SEMS, None, [])
    assert {s["class"] for s in chosen} == {"mutex", "completion"}
    assert len(chosen) == 3 and not skipped


def test_cocci_id_drops_the_path_of_a_member_and_a_global_only():
    assert transform.cocci_id(sem("a/b.c:dev.lock")) == "dev.lock"
    assert transform.cocci_id(sem("a/b.c:g", kind="global")) == "g"
    assert transform.cocci_id(sem("a/b.c:s", kind="static")) == "a/b.c:s"


# ------------------------------------------------------------------ refusals

def test_parse_refusals():
    err = ("sem_to_mutex: /tmp/cocci_small_output-123-abc12-x.c:24: semaphore dev.lock "
           "not converted: in f(), sema_init() with count 2, not 1: not a mutex\n"
           "init_defs_builtins: /usr/lib/coccinelle/standard.h\n"
           "sem_to_mutex: drivers/x.c:3: semaphore dev.lock converted\n")
    assert transform.parse_refusals(err) == [
        "x.c:24: semaphore dev.lock not converted: in f(), sema_init() with count 2, "
        "not 1: not a mutex"]
    assert transform.parse_refusals("warning: something else\n") == []


# ------------------------------------------------------------------ a small tree

DRIVER = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/semaphore.h>

struct dev {
	struct semaphore lock;
	struct semaphore other;
};

static int f(struct dev *d)
{
	down(&d->lock);
	down(&d->other);
	up(&d->other);
	up(&d->lock);
	return 0;
}

static void g(struct dev *d)
{
	sema_init(&d->lock, 1);
	sema_init(&d->other, 1);
}
"""

COUNTED = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/semaphore.h>

struct pool {
	struct semaphore slots;
};

static void h(struct pool *p)
{
	sema_init(&p->slots, 2);
	down(&p->slots);
	up(&p->slots);
}
"""


def small_tree(root: Path) -> Path:
    fake_kernel(root)
    (root / "drivers/foo").mkdir(parents=True)
    (root / "drivers/foo/foo.c").write_text(DRIVER)
    (root / "drivers/foo/pool.c").write_text(COUNTED)
    return root


def small_audit() -> dict:
    lock = sem("drivers/foo/foo.c:dev.lock", ops=[("drivers/foo/foo.c", 12, "down"),
                                                   ("drivers/foo/foo.c", 15, "up")],
               init=[("drivers/foo/foo.c", 21)])
    other = sem("drivers/foo/foo.c:dev.other", ops=[("drivers/foo/foo.c", 13, "down"),
                                                     ("drivers/foo/foo.c", 14, "up")],
                init=[("drivers/foo/foo.c", 22)])
    # classed mutex here on purpose: the script must refuse it (count 2)
    slots = sem("drivers/foo/pool.c:pool.slots", struct="pool",
                ops=[("drivers/foo/pool.c", 11, "down"), ("drivers/foo/pool.c", 12, "up")],
                init=[("drivers/foo/pool.c", 10)])
    return {"kernel_version": "6.1.192", "semaphores": [lock, other, slots]}


def run_generate(tmp_path, name, ids, monkeypatch, epoch="1700000000"):
    if epoch:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    else:
        monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    kernel = tmp_path / "linux"
    if not kernel.exists():
        small_tree(kernel)
    return series.generate(kernel, small_audit(), tmp_path / name / "patches",
                      tmp_path / name / "trees" / "patches", ids=ids,
                      signoff=("A U Thor", "author@example.org"))


@needs_spatch
def test_one_semaphore_converted_the_other_untouched(tmp_path, monkeypatch):
    res = run_generate(tmp_path, "one", ["drivers/foo/foo.c:dev.lock"], monkeypatch)
    (series,) = res.series
    assert [o.status for o in series.outcomes] == ["converted"]
    (patch,) = series.patches                  # one patch: no cover letter
    text = patch.read_text()
    assert "Subject: [PATCH] foo: Convert the dev semaphore to a mutex" in text
    assert "Signed-off-by: A U Thor <author@example.org>" in text
    # the audit's evidence: named below the ---, in a file of its own beside
    # the patch, in a subdirectory (git send-email <dir> does not send it)
    shown = f"evidence/{patch.stem}.txt"
    assert shown in (patch.parent / "evidence" / "sending.txt").read_text()
    assert "evidence/" not in text
    assert "drivers/foo/foo.c:9: down() in f()" in (patch.parent / shown).read_text()
    assert "drivers/foo/foo.c:9: down() in f()" not in text
    # no signature below the diff for the mail to carry
    assert "\n-- \n" not in text
    assert "base-commit:" not in text          # a copied tree has no real history
    removed = [ln[1:] for ln in text.splitlines()
               if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:] for ln in text.splitlines()
             if ln.startswith("+") and not ln.startswith("+++")]
    assert "\tmutex_lock(&d->lock);" in added and "\tmutex_unlock(&d->lock);" in added
    # the semaphore not chosen: none of its lines is removed or changed
    assert not [ln for ln in removed if "other" in ln]
    assert not [ln for ln in added if "other" in ln]
    # and the file after the patch still has them verbatim
    tree = tmp_path / "one" / "trees" / "patches"
    after = (tree / "drivers/foo/foo.c").read_text()
    for line in DRIVER.splitlines():
        if "other" in line:
            assert line in after


@needs_spatch
def test_refused_conversion_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    res = run_generate(tmp_path, "ref", ["drivers/foo/pool.c:pool.slots",
                                         "drivers/foo/foo.c:dev.other", "no/such.c:x"],
                       monkeypatch)
    outcomes = {o.id: o for o in res.outcomes}
    refused = outcomes["drivers/foo/pool.c:pool.slots"]
    assert refused.status == "refused"
    assert any("count 2" in w for w in refused.why), refused.why
    assert outcomes["drivers/foo/foo.c:dev.other"].status == "converted"
    assert outcomes["no/such.c:x"].status == "skipped"
    # one patch made: no cover letter; the refusal is in series.json and the output
    assert len(res.series[0].patches) == 1
    # the refused file is left as it was in the worktree
    tree = tmp_path / "ref" / "trees" / "patches"
    assert (tree / "drivers/foo/pool.c").read_text() == COUNTED
    index = json.loads((res.series[0].dir / "series.json").read_text())
    assert [p["id"] for p in index["patches"]] == ["drivers/foo/foo.c:dev.other"]
    assert index["refused"][0]["id"] == "drivers/foo/pool.c:pool.slots"


def _without_dates(path: Path) -> str:
    return "".join(ln for ln in path.read_text().splitlines(True)
                   if not ln.startswith("Date: "))


@needs_spatch
def test_two_runs_give_the_same_patches(tmp_path, monkeypatch):
    ids = ["drivers/foo/foo.c:dev.lock", "drivers/foo/foo.c:dev.other"]
    one = run_generate(tmp_path, "a", ids, monkeypatch, epoch="")
    two = run_generate(tmp_path, "b", ids, monkeypatch, epoch="")
    names = [p.name for p in one.series[0].patches]
    # two locks of one driver: one patch, no cover letter
    assert names == [p.name for p in two.series[0].patches] and len(names) == 1
    text = one.series[0].patches[0].read_text()
    assert "[PATCH] foo: Convert the driver's semaphores to mutexes" in text or \
        "[PATCH] foo: Convert the dev and dev semaphores to mutexes" not in text
    assert text.count("diff --git a/drivers/foo/foo.c") == 1
    for p, q in zip(one.series[0].patches, two.series[0].patches):
        assert _without_dates(p) == _without_dates(q)
    # with SOURCE_DATE_EPOCH even the dates agree: byte-identical
    three = run_generate(tmp_path, "c", ids, monkeypatch)
    four = run_generate(tmp_path, "d", ids, monkeypatch)
    for p, q in zip(three.series[0].patches, four.series[0].patches):
        assert p.read_bytes() == q.read_bytes()
    # a second run into the same directory replaces the series, leaves no stale file
    again = run_generate(tmp_path, "c", ids[:1], monkeypatch)
    assert len(list(again.series[0].dir.glob("*.patch"))) == 1


@needs_spatch
def test_generated_patch_applies_with_git_am(tmp_path, monkeypatch):
    res = run_generate(tmp_path, "am", ["drivers/foo/foo.c:dev.lock"], monkeypatch)
    kernel = tmp_path / "linux"
    check = series.fresh_worktree(kernel, tmp_path / "am" / "trees" / "verify")
    assert tree.git_am(check, res.series[0].patches[0]) == ""
    assert "mutex_lock(&d->lock)" in (check / "drivers/foo/foo.c").read_text()
    # the notes below the --- are not part of the commit
    msg = tree.git(check, "log", "-1", "--format=%B")
    assert "Notes for the reviewer" not in msg and "Made by sem2mutex" not in msg
    assert "only held inside f()" in msg
    # applied once more, it no longer applies: a message, not an exception
    why = tree.git_am(check, res.series[0].patches[0])
    assert why and "patch" in why.lower()


def test_cli_unknown_id_is_refused_in_one_line(tmp_path):
    kernel = small_tree(tmp_path / "linux")
    audit = tmp_path / "audit.json"
    audit.write_text(json.dumps(small_audit()))
    res = subprocess.run([sys.executable, "-m", "classify", "patches", "--kernel", str(kernel),
                          "--audit", str(audit), "--id", "no/such.c:x", "--out",
                          str(tmp_path / "out"), "--no-verify", "--no-report"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1
    assert "--id no/such.c:x: no semaphore with this id in " in res.stderr
    assert not (tmp_path / "out").exists()


def test_cli_missing_audit_and_bad_arguments(tmp_path):
    kernel = fake_kernel(tmp_path / "linux")
    res = subprocess.run([sys.executable, "-m", "classify", "patches", "--kernel", str(kernel),
                          "--audit", str(tmp_path / "none.json"), "--no-report"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "run `make audit`" in res.stderr
    res = subprocess.run([sys.executable, "-m", "classify", "patches", "--bogus"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2


# ------------------------------------------------------------------ parsers

def test_parse_sparse_from_make_s_output():
    """make -s: no kbuild lines; gcc's [-W...] diagnostics are not sparse's."""
    text = (FIXTURES / "sparse-ksz884x.log").read_text()
    diags = kbuild.parse_sparse(text, "/work/s2m-patches/work/trees/verify")
    assert diags and all(d.path == "drivers/net/ethernet/micrel/ksz884x.c" for d in diags)
    assert len(diags) == len({(d.line, d.msg) for d in diags})   # duplicates dropped
    gcc = "drivers/x.c:3:5: warning: unused variable 'x' [-Wunused-variable]\n"
    assert kbuild.parse_sparse(gcc) == []


def test_parse_sparse_keeps_only_what_check_printed():
    text = (FIXTURES / "sparse-pvcalls-kbuild.log").read_text()
    diags = kbuild.parse_sparse(text, "/work/s2m-patches/work/trees/verify")
    assert {d.path for d in diags} == {"drivers/xen/pvcalls-back.c"}
    assert all(d.kind == "warning" for d in diags)
    cc_section = ("  CC [M]  drivers/x.o\n"
                  "drivers/x.c:3:5: warning: something gcc says\n")
    assert kbuild.parse_sparse(cc_section) == []


def test_new_warnings_ignores_moved_lines_but_counts_new_ones():
    before = [kbuild.Diagnostic("a.c", 10, "warning", "context imbalance in 'f'")]
    moved = [kbuild.Diagnostic("a.c", 11, "warning", "context imbalance in 'f'")]
    assert V.new_warnings(before, moved) == []
    extra = moved + [kbuild.Diagnostic("a.c", 20, "warning", "incorrect type")]
    assert [d.msg for d in V.new_warnings(before, extra)] == ["incorrect type"]


def test_parse_checkpatch_clean_with_a_check():
    cp = V.parse_checkpatch((FIXTURES / "checkpatch-pvcalls-clean.log").read_text())
    assert (cp.errors, cp.warnings, cp.checks) == (0, 0, 1)
    assert cp.messages == ["CHECK: struct mutex definition without comment"]


def test_parse_checkpatch_with_errors():
    cp = V.parse_checkpatch((FIXTURES / "checkpatch-errors.log").read_text())
    assert cp.errors >= 1
    assert any(m.startswith("ERROR: ") for m in cp.messages)


def test_parse_checkpatch_without_totals_is_never_clean():
    assert V.parse_checkpatch("perl: cannot open file\n").errors == 1


def test_includers_of_a_changed_header_are_compiled_too(tmp_path):
    files = {"include/linux/foodev.h": "struct foodev;\n",
             "drivers/a.c": "#include <linux/foodev.h>\n",
             "drivers/b.c": "#include <linux/foodev_other.h>\n",
             "drivers/foo/foo_dev.h": "struct cmdq;\n",
             "drivers/foo/foo.c": '#include "foo_dev.h"\n',
             "drivers/foo/sub/bar.c": '#include "../foo_dev.h"\n#include "foo_dev.h"\n',
             "drivers/other/foo.c": '#include "foo_dev.h"\n',
             "drivers/foo/foo_dev_extra.h": '#include "foo_dev.h"\n'}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    assert V.includers(tmp_path, "include/linux/foodev.h") == ["drivers/a.c"]
    assert V.includers(tmp_path, "drivers/foo/foo_dev.h") == ["drivers/foo/foo.c",
                                                             "drivers/foo/sub/bar.c"]


def test_patch_files():
    text = (FIXTURES / "checkpatch-pvcalls-clean.log").read_text()
    assert V.patch_files(text) == []
    diff = "diff --git a/drivers/x.c b/drivers/x.c\n--- a/drivers/x.c\n"
    assert V.patch_files(diff) == ["drivers/x.c"]


def test_config_symbols_follow_composite_objects_and_directories(tmp_path):
    (tmp_path / "drivers/net/hinic").mkdir(parents=True)
    (tmp_path / "drivers/Makefile").write_text("obj-$(CONFIG_NET) += net/\n")
    (tmp_path / "drivers/net/Makefile").write_text("obj-$(CONFIG_HINIC) += hinic/\n")
    (tmp_path / "drivers/net/hinic/Makefile").write_text(
        "obj-$(CONFIG_HINIC) += hinic.o\n\nhinic-y := hinic_main.o \\\n\thinic_hw_io.o\n")
    assert kbuild.config_symbols(tmp_path, "drivers/net/hinic/hinic_hw_io.c") == \
        ["CONFIG_HINIC", "CONFIG_NET"]
    assert kbuild.config_symbols(tmp_path, "drivers/net/hinic/absent.c") == []


def test_why_not_built_names_the_symbol(tmp_path):
    (tmp_path / "drivers/foo").mkdir(parents=True)
    (tmp_path / "drivers/foo/Makefile").write_text("obj-$(CONFIG_FOO_ARM) += foo.o\n")
    build = tmp_path / "build"
    build.mkdir()
    (build / ".config").write_text("# CONFIG_FOO_ARM is not set\n")
    assert kbuild.why_not_built(tmp_path, build, "drivers/foo/foo.c").startswith(
        "CONFIG_FOO_ARM not set by allmodconfig")
    (build / ".config").write_text("CONFIG_FOO_ARM=m\n")
    assert "although CONFIG_FOO_ARM is set" in kbuild.why_not_built(tmp_path, build,
                                                               "drivers/foo/foo.c")


@pytest.mark.parametrize("record, status", [
    ({"apply": "ok", "problems": [], "build": {"a.c": {"after": {"status": "ok"}}}},
     "verified"),
    ({"apply": "ok", "problems": [], "build": {"a.c": {"after": {"status": "not built"}}}},
     "not built"),
    ({"apply": "ok", "problems": ["a.c: 1 new sparse warning(s)"], "build": {}}, "problem"),
    ({"apply": "does not apply: x", "problems": ["x"]}, "not applied"),
])
def test_status_of(record, status):
    assert V.status_of(record) == status


# ------------------------------------------------------------------ report

@needs_spatch
def test_report_shows_patch_status_only_when_given(tmp_path):
    from classify.audit import run_audit
    src = tmp_path / "drv.c"
    src.write_text(DRIVER)
    audit = run_audit(src, tmp_path / "cache", version="file-drv")
    plain = to_json(audit)
    assert all("patch" not in s for s in plain["semaphores"])
    sid = plain["semaphores"][0]["id"]
    patches = {"config": "x86_64 allmodconfig", "semaphores": {sid: {
        "status": "converted", "series": "drivers-foo", "patch": "0001-x.patch",
        "verify": "verified", "checkpatch": {"errors": 0, "warnings": 0, "checks": 1},
        "new_sparse": [], "build": {"drivers/foo/foo.c": "ok"}, "problems": []}}}
    shown = to_json(audit, patches)
    assert shown["semaphores"][0]["patch"]["verify"] == "verified"
    md = to_markdown(audit, patches)
    assert "## Conversion patches" in md and "drivers-foo/0001-x.patch: verified" in md
    assert "## Conversion patches" not in to_markdown(audit)


HEADER = """\
/* SPDX-License-Identifier: GPL-2.0 */
#include <linux/semaphore.h>

struct cmdq {
	struct semaphore poll_sem;
};

struct foodev {
	struct cmdq cmd;
};
"""

CMD = """\
// SPDX-License-Identifier: GPL-2.0
#include "foo_dev.h"

static int poll(struct foodev *hr)
{
	down(&hr->cmd.poll_sem);
	up(&hr->cmd.poll_sem);
	return 0;
}

static void init(struct foodev *hr)
{
	sema_init(&hr->cmd.poll_sem, 1);
}
"""


def generate_one(tmp_path, kernel, semaphore, monkeypatch):
    """generate() for one semaphore of a small tree: (result, its outcome)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    res = series.generate(kernel, {"kernel_version": "6.1.192", "semaphores": [semaphore]},
                     tmp_path / "out", tmp_path / "trees" / "patches",
                     signoff=("A U Thor", "author@example.org"))
    (outcome,) = res.outcomes
    return res, outcome


@needs_spatch
def test_member_behind_a_header_struct_is_converted_with_header_types(tmp_path, monkeypatch):
    """hr->cmd.poll_sem: struct foodev lives in a local header; with --no-includes
    spatch cannot type hr->cmd, so the file is tried again reading local headers."""
    kernel = small_tree(tmp_path / "linux")
    (kernel / "drivers/foo/foo_dev.h").write_text(HEADER)
    (kernel / "drivers/foo/foo_cmd.c").write_text(CMD)
    poll = sem("drivers/foo/foo_dev.h:cmdq.poll_sem", struct="cmdq",
               ops=[("drivers/foo/foo_cmd.c", 6, "down"), ("drivers/foo/foo_cmd.c", 7, "up")],
               init=[("drivers/foo/foo_cmd.c", 13)])
    res, o = generate_one(tmp_path, kernel, poll, monkeypatch)
    assert o.status == "converted", o.why
    assert o.files == ["drivers/foo/foo_cmd.c", "drivers/foo/foo_dev.h"]
    text = res.series[0].patches[0].read_text()
    # renamed with its type (classify/convert/finish.py)
    assert "+\tmutex_lock(&hr->cmd.poll_lock);" in text
    assert "+\tstruct mutex poll_lock; /* serialises f() */" in text


def test_split_addresses_people_to_lists_cc():
    out = ('Juergen Gross <jgross@suse.com>\n"David S. Miller" <davem@davemloft.net>\n'
           "xen-devel@lists.xenproject.org\nlinux-kernel@vger.kernel.org\n"
           "Juergen Gross <jgross@suse.com>\nnot an address\n")
    to, cc = maintainers.split_addresses(out)
    assert to == ["Juergen Gross <jgross@suse.com>", '"David S. Miller" <davem@davemloft.net>']
    assert cc == ["xen-devel@lists.xenproject.org", "linux-kernel@vger.kernel.org"]


def test_commit_message_lines_fit_checkpatch():
    s = sem("drivers/staging/vc04_services/interface/vchiq_arm/vchiq_arm.c:g_free_fragments_mutex",
            kind="static", ops=[("drivers/staging/vc04_services/interface/vchiq_arm/vchiq_arm.c",
                                 700, "down_interruptible")])
    s["evidence"] = ["drivers/staging/vc04_services/interface/vchiq_arm/vchiq_arm.c:700: "
                     "down_interruptible() in create_pagelist()"]
    item = message.Converted(s)
    msg = message.commit_message("staging: vchiq_arm: ",
                                 "Convert the g_free_fragments semaphore to a mutex", [item],
                                 "A <a@example.org>")
    notes = below.evidence([item], "6.1.192")
    body = msg.split("\n\n", 1)[1]
    # checkpatch's 75 columns in the message; below the --- only a path too long
    # to break may pass them
    assert all(len(ln) <= 75 for ln in body.splitlines() if not ln.startswith("Signed-off-by"))
    assert all(len(ln) <= 75 or " " not in ln.strip(" -") or ln.lstrip().startswith("spatch ")
               for ln in notes.splitlines())
    assert "-D sem=vchiq_arm.c:g_free_fragments_mutex" in notes
    assert "vchiq_arm.c:700" in notes and "vchiq_arm.c:700" not in msg
    assert "-D sem=" not in msg and "Made by sem2mutex" not in msg   # notes stay below ---
    # a completion waited for interruptibly: the -EINTR note; a mutex: none
    c = sem("a/b.c:d.e", "completion", ops=[("a/b.c", 3, "down_interruptible")])
    said = " ".join(message.commit_message("a: ", "s", [message.Converted(c, mapped=True)],
                                           None).split())
    assert "map a nonzero return to -EINTR" in said
    assert "-EINTR" not in below.reviewer_notes([message.Converted(c)])
    assert "-EINTR" not in msg and "-EINTR" not in notes


@needs_spatch
def test_member_behind_a_global_header_struct_is_converted_with_include_dirs(
        tmp_path, monkeypatch):
    """port->phys->info.irq: the struct lives in include/linux/, which only
    --all-includes with the kernel's include directories reads (parport's case)."""
    kernel = small_tree(tmp_path / "linux")
    (kernel / "include/linux").mkdir(parents=True, exist_ok=True)
    (kernel / "include/linux/foodev.h").write_text(
        HEADER.replace("struct foodev {\n\tstruct cmdq cmd;\n};",
                       "struct foodev {\n\tstruct foodev *phys;\n\tstruct cmdq cmd;\n};"))
    (kernel / "drivers/foo/foo_cmd.c").write_text(
        CMD.replace('#include "foo_dev.h"', "#include <linux/foodev.h>")
           .replace("&hr->cmd", "&hr->phys->cmd"))
    poll = sem("include/linux/foodev.h:cmdq.poll_sem", struct="cmdq",
               ops=[("drivers/foo/foo_cmd.c", 6, "down"), ("drivers/foo/foo_cmd.c", 7, "up")],
               init=[("drivers/foo/foo_cmd.c", 13)])
    res, o = generate_one(tmp_path, kernel, poll, monkeypatch)
    assert o.status == "converted", o.why
    text = res.series[0].patches[0].read_text()
    # renamed with its type (classify/convert/finish.py)
    assert "+\tmutex_lock(&hr->phys->cmd.poll_lock);" in text
    assert "+\tstruct mutex poll_lock; /* serialises f() */" in text


@pytest.mark.parametrize("signed,flag", [(True, False), (False, True)])
def test_checkpatch_skips_the_sign_off_check_only_for_an_unsigned_patch(
        tmp_path, monkeypatch, signed, flag):
    """SIGNOFF=0 patches carry no Signed-off-by on purpose; a signed patch is checked
    in full (the look-alike: a "Signed-off-by:" below the --- does not count)."""
    patch = tmp_path / "p.patch"
    sob = "Signed-off-by: A Person <a@kernel.org>\n" if signed else ""
    patch.write_text(f"Subject: [PATCH] x: Convert y\n\nWhy.\n\n{sob}---\n"
                     "Signed-off-by: in the notes\n")
    seen = {}

    def fake_run(cmd, **kw):
        seen["cmd"] = cmd
        return subprocess.CompletedProcess(cmd, 0, "total: 0 errors, 0 warnings, "
                                           "0 checks, 5 lines checked\n", "")

    monkeypatch.setattr(V.subprocess, "run", fake_run)
    assert V.checkpatch(tmp_path, patch).errors == 0
    assert ("--no-signoff" in seen["cmd"]) is flag


def test_a_semaphore_whose_address_sits_in_another_pointer_is_refused():
    held = sem("drivers/foo/a.c:tsem", "completion", kind="local")
    held["followed"] = [{"at": "drivers/foo/a.c:9", "pointer": "include/foo.h:.act.sem",
                         "kind": "member", "calls": 3, "also": ["drivers/foo/b.c:osem"]}]
    local = sem("drivers/foo/a.c:lsem", kind="static")
    local["followed"] = [{"at": "drivers/foo/a.c:12", "pointer": "drivers/foo/a.c:p@f",
                          "kind": "local", "calls": 1, "also": []}]
    chosen, skipped = select.select([held, local], None, [])
    assert [s["id"] for s in chosen] == ["drivers/foo/a.c:lsem"]
    [out] = skipped
    assert out.status == "refused" and "member pointer include/foo.h:.act.sem" in out.why[0]
    assert "drivers/foo/b.c:osem" in out.why[0]
