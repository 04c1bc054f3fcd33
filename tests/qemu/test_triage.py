"""`python3 -m qemu triage` (`make triage`): a tester's log read against the audit.

The acceptance: on every saved runtime-set log, triage's runtime record is the one the
runtime set computes for that boot (qemu.runtime.boot_record + write_record on the
same log, with the variant its header names), and an edited log no longer gives it."""

import json
from pathlib import Path

import pytest

from classify import evidence as rt
from qemu import cli, runtime, triage
from qemu.scenarios import load_scenario, named_set
from qemu.variants import Variant

REPO = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).parent / "logs"
RUNTIME_LOGS = sorted(LOGS.glob("runtime-*.log"))
AUDIT_PATH = REPO / "reports" / "linux-6.1.192" / "audit.json"
AUDIT = json.loads(AUDIT_PATH.read_text())
SEMS = {s["id"]: s for s in AUDIT["semaphores"]}
# the runtime set's own record: which ids its trust kernel marked beyond the counting
# pool, and which semaphores' files its kernel compiled
RECORD = json.loads((AUDIT_PATH.parent / "runtime.json").read_text())
IC = "fs/xfs/xfs_log_priv.h:xlog_in_core.ic_sema"
B_SEMA = "fs/xfs/xfs_buf.h:xfs_buf.b_sema"


def header_of(path: Path) -> tuple[dict[str, str], str]:
    head, _, body = path.read_text(errors="replace").partition("\n\n")
    return {k.strip(): v.strip() for k, _, v in
            (ln.partition(":") for ln in head.splitlines())}, body


def built_files() -> set[str]:
    index = rt.build_index(AUDIT["semaphores"])
    return {f for sid, rec in RECORD["semaphores"].items() if rec["status"] != "not-built"
            for f in index.files.get(sid, ())}


def runtime_way(path: Path, tmp_path: Path) -> dict:
    """The record as `make boot-test SCENARIOS=runtime` computes it for this boot."""
    header, body = header_of(path)
    variant = header["SOURCE"].rsplit("; variant ", 1)[1].split(" (")[0]
    name = max((n for n in named_set("runtime") if path.stem.startswith(n)
                and load_scenario(n).variant == variant), key=len)
    counting = {i for i, s in SEMS.items() if s["class"] == "counting"}
    trust = frozenset(counting | set(RECORD["trust_marks"]))
    v = Variant(variant, marked=trust - {variant[len("unmark:"):]},
                image=tmp_path / "bzImage")             # built and booted
    out = tmp_path / "boots"
    out.mkdir(exist_ok=True)
    (out / f"{name}.log").write_text(body)          # the console as the boot wrote it
    boot = runtime.boot_record(load_scenario(name), v, out)
    runtime.write_record(AUDIT, rt.build_index(AUDIT["semaphores"]), "6.1.192",
                         RECORD["trust_marks"], [boot], built_files(),
                         tmp_path / "runtime.json", tmp_path, AUDIT_PATH, [v])
    return json.loads((tmp_path / "runtime.json").read_text())


def triage_way(path: Path, tmp_path: Path, *extra: str) -> dict:
    (tmp_path / "built.txt").write_text("\n".join(sorted(built_files())) + "\n")
    out = tmp_path / "triage.json"
    rc = cli.main(["triage", str(path), "--audit", str(AUDIT_PATH), "--built",
                   str(tmp_path / "built.txt"), "--record", str(out), *extra])
    assert rc == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("path", RUNTIME_LOGS, ids=[p.stem for p in RUNTIME_LOGS])
def test_triage_reproduces_the_runtime_record(path, tmp_path, capsys):
    expected = runtime_way(path, tmp_path)
    got = triage_way(path, tmp_path)
    assert got == expected
    header, _ = header_of(path)
    sid = header.get("SEM") or header["EXERCISED"].split(",")[0].strip()
    assert got["semaphores"][sid]["status"] == ("violated" if "SEM" in header else "clean")


@pytest.mark.parametrize("path", RUNTIME_LOGS, ids=[p.stem for p in RUNTIME_LOGS])
def test_an_edited_log_gives_another_record(path, tmp_path, capsys):
    """Negative control: the lock class of the semaphore the log is about renamed."""
    expected = runtime_way(path, tmp_path)
    header, _ = header_of(path)
    sid = header.get("SEM") or header["EXERCISED"].split(",")[0].strip()
    lock_class = header.get("LOCKS") or expected["semaphores"][sid]["boots"][0]["lock_class"]
    text = path.read_text(errors="replace")
    assert lock_class in text
    edited = tmp_path / path.name
    edited.write_text(text.replace(lock_class, "&edited->lock@kernel/edited.c:1"))
    got = triage_way(edited, tmp_path)
    assert got != expected
    assert got["semaphores"][sid] != expected["semaphores"][sid]


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
    assert "FINDING" in rt.summary_line(res["record"]["semaphores"][IC])


def test_exit_status_and_help(tmp_path, capsys):
    assert cli.main(["triage", str(tmp_path / "absent.log")]) == 1
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
