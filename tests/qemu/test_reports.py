"""Report parser against real console logs of our own boots (syzkaller pkg/report style).

Each tests/qemu/logs/*.log starts with a header, then a blank line, then the raw console
log exactly as the harness saved it:

    TITLE: <title of the first report>          (absent for KIND: none)
    KIND: <kind of the first report>             ("none": the log must have no report)
    ALSO: <other kinds in the log, comma list>   (optional)
    LOCKS: <lock classes of the first report>    (optional, comma list)
    TASK: <task of the first report>             (optional)
    SOURCE: <which boot produced it>
    DERIVED: <real fixture> by derive.py: <change>   (only for a format our boots cannot
                                                  produce; see logs/derive.py)

Every fixture is also a negative case for every detector it does not name: the set of
report kinds found must be exactly KIND + ALSO.
"""

import re
from pathlib import Path

import pytest

from qemu.parse import find_reports, clean_lines, parse_log

LOGS = Path(__file__).parent / "logs"
FIXTURES = sorted(LOGS.glob("*.log"))


def load(path: Path) -> tuple[dict[str, str], str]:
    text = path.read_text(errors="replace")
    head, _, body = text.partition("\n\n")
    header = {}
    for line in head.splitlines():
        key, _, value = line.partition(":")
        header[key.strip()] = value.strip()
    return header, body


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture(path):
    header, body = load(path)
    reports = find_reports(clean_lines(body))
    kinds = {r.kind for r in reports}
    want = set() if header["KIND"] == "none" else {header["KIND"]}
    want |= {k.strip() for k in header.get("ALSO", "").split(",") if k.strip()}
    assert kinds == want
    if header["KIND"] == "none":
        return
    first = reports[0]
    assert first.kind == header["KIND"]
    assert first.title == header["TITLE"]
    if "LOCKS" in header:
        assert [lk.lock_class for lk in first.locks] == \
            [x.strip() for x in header["LOCKS"].split(",") if x.strip()]
    if "TASK" in header:
        assert first.task == header["TASK"]


def test_fixture_set_is_real_and_covers_the_kinds():
    kinds = set()
    for path in FIXTURES:
        header, body = load(path)
        assert "SOURCE" in header, f"{path.name}: say which boot produced it"
        if "DERIVED" in header:     # test_derived.py checks derive.py makes it so
            source = header["DERIVED"].split(" by derive.py: ")[0]
            path, (header, body) = LOGS / source, load(LOGS / source)
            assert "DERIVED" not in header, f"{path.name}: derive from a real log"
        assert "s2m-harness: " in body or "work/logs-kp/" in header["SOURCE"], \
            f"{path.name}: neither saved by our harness nor taken from work/logs-kp"
        kinds.add(header["KIND"])
        kinds |= {k.strip() for k in header.get("ALSO", "").split(",") if k.strip()}
    assert {"panic", "hang", "none"} <= kinds


def _restamp(body: str, shift: float) -> str:
    """The same log as another boot would print it: every timestamp moved."""
    return re.sub(r"^\[\s*(\d+\.\d+)\]",
                  lambda m: f"[{float(m.group(1)) + shift:12.6f}]", body, flags=re.M)


def _titles(body: str) -> list[tuple[str, str]]:
    return [(r.kind, r.title) for r in parse_log(body).reports]


def test_titles_are_stable_across_boots():
    """Timestamps differ from boot to boot; the reports' kinds and titles must not."""
    for path in FIXTURES:
        _, body = load(path)
        assert _titles(_restamp(body, 1234.5)) == _titles(body), path.name


def test_title_stability_is_not_blindness():
    """The look-alike: the same log with the culprit's name changed gets a new title."""
    _, body = load(LOGS / "circular-locking-abba.log")
    assert _titles(body.replace("check_abba", "check_other")) != _titles(body)


def _first(name: str):
    _, body = load(LOGS / name)
    return find_reports(clean_lines(body))[0]


def test_circular_roles_and_frames():
    rep = _first("circular-locking-abba.log")
    roles = [(lk.role, lk.lock_class) for lk in rep.locks]
    assert roles[:2] == [("acquiring", "rule_a.lock"), ("held", "rule_b.lock")]
    assert ("chain", "rule_b.lock") in roles
    assert rep.locks[0].at.startswith("mutex_debug_down+")
    assert rep.frames[:4] == ["__mutex_lock", "mutex_lock_nested", "mutex_debug_down",
                              "check_abba"]


def test_lock_names_map_back_to_semaphore_ids():
    """The parser keeps lockdep's class names; the one mapper (classify.lockmap)
    turns them into the audit's ids, here with the rule-check module's semaphores
    as the audit."""
    from classify.lockmap import build_index, lock_to_id
    sems = [{"id": "kernel/locking/mutex_rule_check.c:md@" + f, "declared": {
        "kind": "local", "path": "kernel/locking/mutex_rule_check.c", "line": line - 2},
        "init": [{"path": "kernel/locking/mutex_rule_check.c", "line": line}], "ops": []}
        for f, line in (("check_owner_unlock", 151), ("check_free_held", 202))]
    index = build_index(sems)
    rep = _first("bad-unlock-balance-owner-unlock.log")
    assert rep.locks[0].role == "releasing"
    assert lock_to_id(rep.locks[0].lock_class, index) == \
        "kernel/locking/mutex_rule_check.c:md@check_owner_unlock"
    freed = _first("held-lock-freed.log")
    assert [lk.role for lk in freed.locks] == ["freed", "held"]
    assert {lock_to_id(lk.lock_class, index) for lk in freed.locks} == \
        {"kernel/locking/mutex_rule_check.c:md@check_free_held"}
    # DEFINE_SEMAPHORE(rule_a) is named by __MUTEX_INITIALIZER: no file, and no
    # semaphore of this audit by that name.
    assert lock_to_id(_first("recursive-locking.log").locks[0].lock_class, index) is None


def test_clean_kunit_boot_ktap_tree():
    _, body = load(LOGS / "none-clean-kunit.log")
    parsed = parse_log(body)
    assert parsed.verdict == "completed" and parsed.debug_locks == 1
    kunit = next(d for d in parsed.ktap if d.name == "kunit")
    suite = kunit.children[0]
    assert (suite.name, suite.status, suite.plan) == ("mutex_debug", "ok", 6)
    assert all(c.status == "ok" for c in suite.children)
    assert dict(next(d for d in parsed.ktap if d.name == "s2m-init").leaves()) == \
        {"s2m-init/boot": "ok"}


def test_printk_timestamps_are_stripped():
    ours, theirs = _first("circular-locking-abba.log"), _first(
        "circular-locking-abba-printk-time.log")
    assert (ours.kind, ours.title, ours.task) == (theirs.kind, theirs.title, theirs.task)
    assert [lk.name for lk in ours.locks] == [lk.name for lk in theirs.locks]


def test_lockdep_turns_itself_off_after_a_report():
    _, body = load(LOGS / "circular-locking-abba.log")
    assert parse_log(body).debug_locks == 0


def fixture_arch(body: str) -> str:
    """The machine a real log was printed on: QEMU's arm64 virt board names its device
    tree model, the PC its BIOS memory map."""
    if "Machine model: linux,dummy-virt" in body:
        return "arm64"
    if "BIOS-provided physical RAM map" in body:
        return "x86_64"
    return ""


def test_fixture_arch_tells_the_machines_apart():
    _, x86 = load(LOGS / "circular-locking-abba.log")
    assert fixture_arch(x86) == "x86_64"
    assert fixture_arch(x86.replace("BIOS-provided physical RAM map", "memory map")) == ""
    _, arm = load(LOGS / "arm64-virt-rule-abba.log")
    assert fixture_arch(arm) == "arm64"
    # the derived arm64 log is an x86 boot with arm64 stack dumps: not a real arm64 log
    _, derived = load(LOGS / "arm64-circular-locking-abba.log")
    assert fixture_arch(derived) == "x86_64"


def test_every_kind_of_the_standard_set_has_a_real_x86_64_and_arm64_log():
    """For each report kind the standard boot set provokes on a machine (and a clean
    boot), the corpus holds a real log of that machine, read by test_fixture above.
    (lock_held_return_to_user has no arm64 log: arm64 6.1 has no lockdep_sys_exit(),
    which rule-user_return's [expect.arm64] says, and its arm64 log shows.)"""
    from qemu.scenarios import load_scenario, standard_set
    wanted = {(r.kind, arch) for n in standard_set() for arch in ("x86_64", "arm64")
              for r in load_scenario(n).for_arch(arch).reports}
    wanted |= {("none", "x86_64"), ("none", "arm64")}
    assert ("lock_held_return_to_user", "x86_64") in wanted and len(wanted) >= 24
    have: dict[str, set[str]] = {}
    for path in FIXTURES:
        header, body = load(path)
        if "DERIVED" in header or not fixture_arch(body):
            continue
        for kind in {header["KIND"]} | {k.strip() for k in header.get("ALSO", "").split(",")
                                        if k.strip()}:
            have.setdefault(kind, set()).add(fixture_arch(body))
    missing = sorted(f"{k} on {a}" for k, a in wanted if a not in have.get(k, set()))
    assert not missing, "no real fixture for: " + ", ".join(missing)


def test_lockdep_classes():
    from classify.records.boot import LockClass
    from qemu.parse import lockdep_classes
    lines = ["# lockdep-class: 00000000a1b2c3d4 OPS:     123 FD:    1 BD:    2 +.+.: "
             "(console_sem).lock",
             "# lockdep-class: 00000000a1b2c3d5 OPS:       0 FD:    0 BD:    0 ....: "
             "&iclog->ic_sema@fs/xfs/xfs_log.c:1639",
             "# lockdep-class: 00000000a1b2c3d6 FD:    0 BD:    1 -.-.: &bp->b_sema@fs/xfs/"
             "xfs_buf.c:239#2",
             "# lockdep_stats: lock-classes: 222", "ffff (console_sem).lock"]
    assert lockdep_classes(lines) == [
        LockClass("(console_sem).lock", "(console_sem).lock", 123, "+.+."),
        LockClass("&iclog->ic_sema@fs/xfs/xfs_log.c:1639",
                  "&iclog->ic_sema@fs/xfs/xfs_log.c:1639", 0, "...."),
        LockClass("&bp->b_sema@fs/xfs/xfs_buf.c:239#2", "&bp->b_sema@fs/xfs/xfs_buf.c:239",
                  None, "-.-.")]


def test_kernel_version_and_scenario_of_a_log():
    from qemu.parse import kernel_version, scenario_of
    text = ("[    0.000000] Linux version 6.1.192+ (root@h) (gcc 12.2.0) #1 SMP\n"
            "[    0.000000] Command line: console=ttyS0 s2m.scenario=runtime-xfs quiet\n")
    assert (kernel_version(text), scenario_of(text)) == ("6.1.192", "runtime-xfs")
    assert (kernel_version("no banner"), scenario_of("Command line: console=ttyS0")) == ("", "")
