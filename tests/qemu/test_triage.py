"""`python3 -m qemu triage` (`make triage`): a tester's log read against the audit.

The acceptance: on every console log of the committed runtime set
(reports/linux-6.1.192/runtime/), triage's runtime record is the one the runtime set
derives for that boot (qemu.runrecord.derive on that boot's artifacts), and an edited
log no longer gives it."""

import json
from pathlib import Path

import pytest

from classify.report.runtime import summary_line
from qemu import cli, runrecord, triage

REPO = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).parent / "logs"
AUDIT_PATH = REPO / "reports" / "linux-6.1.192" / "audit.json"
AUDIT = json.loads(AUDIT_PATH.read_text())
SEMS = {s["id"]: s for s in AUDIT["semaphores"]}
# the runtime set's own record: which ids its trust kernel marked beyond the counting
# pool, and which semaphores' files its kernel compiled
RECORD = json.loads((AUDIT_PATH.parent / "runtime.json").read_text())
IC = "fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"
B_SEMA = "fs/xfs/xfs_buf.h:xfs_buf.b_sema"


ARTS = AUDIT_PATH.parent / "runtime"
RUN = json.loads((ARTS / "run.json").read_text()) if (ARTS / "run.json").is_file() else {}
LOG_BOOTS = [b for b in RUN.get("boots", []) if "log" in b]


def runtime_way(boot: dict, tmp_path: Path, text: str | None = None) -> dict:
    """The record `make boot-test SCENARIOS=runtime` derives for this boot alone: its
    artifacts (run.json with just this boot, and its log) through runrecord.derive."""
    arts = tmp_path / "runtime"
    arts.mkdir(exist_ok=True)
    (arts / boot["log"]).write_text(text if text is not None else
                                    (ARTS / boot["log"]).read_text(errors="replace"))
    (arts / "run.json").write_text(json.dumps({**RUN, "boots": [boot]}))
    return runrecord.derive(AUDIT, arts).to_json()


def triage_way(boot: dict, log: Path, tmp_path: Path) -> dict:
    (tmp_path / "built.txt").write_text("\n".join(RUN["built"]) + "\n")
    out = tmp_path / "triage.json"
    rc = cli.main(["triage", str(log), "--audit", str(AUDIT_PATH), "--built",
                   str(tmp_path / "built.txt"), "--record", str(out), "--boot", boot["name"]])
    assert rc == 0
    return json.loads(out.read_text())


def same_but_variants(a: dict, b: dict) -> bool:
    """Triage knows the one variant of its log, the run all of them."""
    return {k: v for k, v in a.items() if k != "variants"} == \
        {k: v for k, v in b.items() if k != "variants"}


@pytest.mark.parametrize("boot", LOG_BOOTS, ids=[b["name"] for b in LOG_BOOTS])
def test_triage_reproduces_the_runtime_record(boot, tmp_path, capsys):
    expected = runtime_way(boot, tmp_path)
    got = triage_way(boot, ARTS / boot["log"], tmp_path)
    assert same_but_variants(got, expected)
    # and the run's record of this boot is the committed one
    assert got["boots"][boot["name"]] == RECORD["boots"][boot["name"]]


@pytest.mark.parametrize("boot", LOG_BOOTS, ids=[b["name"] for b in LOG_BOOTS])
def test_an_edited_log_gives_another_record(boot, tmp_path, capsys):
    """Negative control: every lock class of the log's semaphores renamed."""
    expected = runtime_way(boot, tmp_path)
    text = (ARTS / boot["log"]).read_text(errors="replace")
    classes = sorted({e["lock_class"] for r in expected["semaphores"].values()
                      for e in r.get("boots", []) if e.get("lock_class")})
    if not classes:
        pytest.skip("the boot ran no semaphore of the audit")
    edited = tmp_path / "edited" / boot["log"]
    edited.parent.mkdir()
    for c in classes:
        text = text.replace(c, "&edited->lock@kernel/edited.c:1")
    edited.write_text(text)
    got = triage_way(boot, edited, tmp_path)
    assert not same_but_variants(got, expected)


def run_json(tmp_path, capsys, *args: str) -> dict:
    rc = cli.main(["triage", *args, "--audit", str(AUDIT_PATH), "--json"])
    assert rc == 0
    return json.loads(capsys.readouterr().out)


def test_an_ordinary_lock_is_not_a_semaphore_of_the_audit(tmp_path, capsys):
    got = run_json(tmp_path, capsys, str(LOGS / "circular-locking-abba.log"))
    assert [r["kind"] for r in got["reports"]] == ["circular_locking"]
    locks = got["reports"][0]["locks"]
    assert [lk["lock_class"] for lk in locks] == ["rule_a.lock", "rule_b.lock"]
    assert {(lk["id"], lk["reading"]) for lk in locks} == {(None, triage.NOT_OURS)}
    assert got["variant"] == "series" and got["records"] == {}


def test_a_counting_challenge_confirms_counting(tmp_path, capsys):
    got = run_json(tmp_path, capsys, str(LOGS / "runtime-xfs-challenge-ic-sema.log"))
    (rep,) = got["reports"]
    assert rep["kind"] == "bad_unlock_balance" and rep["task"] == "kworker/0:1H/21"
    assert [(lk["id"], lk["class"], lk["reading"]) for lk in rep["locks"]] == [
        (IC, "counting", triage.CONFIRMS)]
    # the isolation mark: b_sema ran as a semaphore, which says nothing
    (ex, *_) = [e for e in got["exercised"] if e["id"] == B_SEMA]
    assert "marked" in ex["reading"]
    text = cli.main(["triage", str(LOGS / "dmesg-runtime-xfs-challenge-ic-sema.log")])
    assert text == 0 and f"{IC} [counting]: confirms counting" in capsys.readouterr().out


def test_an_unknown_semaphore_that_ran_as_a_mutex(tmp_path, capsys):
    """On a kernel of the series the unknown b_sema is a debug mutex: it ran, no report."""
    got = run_json(tmp_path, capsys, str(LOGS / "runtime-xfs-trust.log"), "--variant",
                   "series")
    ex = {e["id"]: e for e in got["exercised"]}
    assert ex[B_SEMA]["reading"] == triage.UNKNOWN_AS_MUTEX and ex[B_SEMA]["ops"] == 1439
    assert got["records"][B_SEMA]["boots"][0]["ran_as"] == "mutex"
    assert "marked" in ex[IC]["reading"]          # counting: a semaphore in the series


def test_a_reported_mutex_contradicts_the_verdict():
    audit = {**AUDIT, "semaphores": [{**s, "class": "mutex"} if s["id"] == IC else s
                                     for s in AUDIT["semaphores"]]}
    text = (LOGS / "runtime-xfs-challenge-ic-sema.log").read_text()
    res = triage.triage(text, audit, "b", f"unmark:{IC}", frozenset(), [], None)
    assert res["reports"][0]["locks"][0]["reading"] == "contradicts the mutex verdict"
    assert "FINDING" in summary_line(res["record"].semaphores[IC])


def test_exit_status_and_help(tmp_path, capsys):
    assert cli.main(["triage", str(tmp_path / "absent.log")]) == 2
    assert "cannot read" in capsys.readouterr().err
    log = LOGS / "runtime-xfs-trust.log"
    assert cli.main(["triage", str(log), "--variant", "unmark:nope"]) == 2
    with pytest.raises(SystemExit) as ex:
        cli.main(["triage"])
    assert ex.value.code == 2
    with pytest.raises(SystemExit) as ex:
        cli.main(["triage", "--help"])
    assert ex.value.code == 0 and "confirms counting" in capsys.readouterr().out


def test_variants_mark_what_the_runtime_set_marks():
    counting = {i for i, s in SEMS.items() if s["class"] == "counting"}
    marks = triage.trust_marks(SEMS)
    assert marks == RECORD["trust_marks"]
    assert triage.variant_marked(SEMS, "series", marks) == counting
    trust = triage.variant_marked(SEMS, "trust", marks)
    assert trust == counting | set(marks)
    assert triage.variant_marked(SEMS, f"unmark:{IC}", marks) == trust - {IC}
    assert IC in triage.variant_marked(SEMS, "trust", marks, refused=set()) and \
        IC not in triage.variant_marked(SEMS, "trust", marks, refused={IC})


def test_make_triage(tmp_path):
    import subprocess

    def make(*args):
        return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args],
                              capture_output=True, text=True, timeout=60)
    assert "triage" in make("help").stdout
    res = make("-n", "triage", "LOG=d.txt", "AUDIT=a.json", "JSON=1", f"OUT={tmp_path}/r")
    assert f"-m qemu triage d.txt --audit a.json --json --record {tmp_path}/r" in res.stdout
    res = make("triage")
    assert res.returncode != 0 and "make triage: error: give LOG=" in res.stderr
    res = make("triage", f"LOG={LOGS / 'runtime-xfs-challenge-ic-sema.log'}")
    assert res.returncode == 0 and "confirms counting" in res.stdout


def test_a_semaphore_allocated_at_run_time_is_named():
    """ACPI's semaphores, allocated at run time, ran in the x86_64 defconfig boot as
    the class of their sema_init() site: triage names their family, apart from the
    records of the declared semaphores."""
    text = (AUDIT_PATH.parent / "full-kernel" / "x86_64-defconfig.log").read_text(
        errors="replace")
    result = triage.triage(text, AUDIT, "defconfig", "series", frozenset(), [], None)
    [item] = result["allocated"]
    assert item["id"] == "drivers/acpi/osl.c:*sem@acpi_os_create_semaphore"
    assert item["lock_class"] == "sem@drivers/acpi/osl.c:1208" and item["ops"] > 0
    assert item["class"] == "counting" and "0004" in item["reading"]
    assert item["id"] not in result["record"].semaphores
    # negative control: a class of another site names no family
    other = text.replace("sem@drivers/acpi/osl.c:1208", "sem@drivers/acpi/other.c:7")
    assert triage.triage(other, AUDIT, "defconfig", "series", frozenset(), [],
                         None)["allocated"] == []
