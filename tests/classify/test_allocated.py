"""Semaphores allocated at run time (classify.allocated): which pointers make a
family, how it is classed, and the marking that keeps a counting one a struct
arch_semaphore (cocci/sem_alloc_to_arch.cocci) without touching anything else."""

import shutil
import subprocess
from pathlib import Path

import pytest

from classify.audit import run_audit
from classify.convert import marking as M
from classify.report import to_json

FIXTURES = Path(__file__).resolve().parent / "fixtures"
needs_spatch = pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch missing")


def family(name, cache):
    [fam] = run_audit(FIXTURES / name, cache, nice=0).allocated
    return fam


def test_a_family_is_the_pointers_no_declared_semaphore_reaches(shared_cache):
    fam = family("allocated_handle.c", shared_cache)
    assert fam.scope == ["handle_create", "handle_delete", "handle_signal", "handle_wait"]
    # bus holds &bus_sem: a declared semaphore's pointer is not one of them
    assert "allocated_handle.c:bus" not in fam.pointers and len(fam.pointers) == 4
    assert [(o["op"], o["function"]) for o in fam.ops] == [
        ("down_timeout", "handle_wait"), ("up", "handle_signal")]
    assert fam.init[0]["count"] == "units" and fam.init[0]["value"] is None


def test_reaching_into_the_semaphore_makes_it_counting(shared_cache):
    fam = family("allocated_handle.c", shared_cache)
    assert fam.cls == "counting"
    assert fam.internals == ["allocated_handle.c:30: sem->wait_list"]
    assert "only in a struct arch_semaphore" in fam.reasons[0]


def test_a_count_above_one_makes_it_counting(shared_cache):
    fam = family("allocated_pool.c", shared_cache)
    assert (fam.cls, fam.init[0]["value"]) == ("counting", 4)
    assert "count 4" in fam.reasons[0]


def test_a_binary_one_without_internals_stays_unknown(shared_cache):
    fam = family("allocated_binary.c", shared_cache)
    assert (fam.cls, fam.internals) == ("unknown", [])
    # the pointer at file scope, and every function that uses it
    assert fam.scope == ["sock_probe", "sock_sem", "sock_send"]
    assert "DEBUG_MUTEX_FULL" in fam.reasons[0]


def test_a_cast_brings_its_function_into_the_scope(shared_cache):
    fam = family("allocated_static_cast.c", shared_cache)
    assert fam.scope == ["slots", "slots_init", "slots_put", "slots_wait"]
    # h->slots->count is another structure's field
    assert fam.internals == [] and not fam.conflicts
    assert (fam.cls, fam.init[0]["value"]) == ("counting", 4)


def test_another_semaphore_in_its_functions_is_a_conflict(shared_cache):
    fam = family("allocated_conflict.c", shared_cache)
    # other holds a call's result: not one of them, and in the creator's scope
    assert fam.pointers == ["allocated_conflict.c:sem@pool_create",
                            "allocated_conflict.c:sem@pool_delete"]
    assert fam.cls == "counting" and fam.internals == ["allocated_conflict.c:31: sem->count"]
    assert [c.split(": ", 1)[1] for c in fam.conflicts] == [
        "other in pool_create() is a struct semaphore * that is not one of them",
        "other is also assigned something other than an allocation or a cast handle"]
    assert "cannot all change" in fam.reasons[-1]
    [mark] = M.mark_all(Path("/nonexistent"), M.counting_pool(
        {"semaphores": [], "allocated": [fam.to_json()]}))
    assert mark.status == "refused" and "other in pool_create()" in mark.why[0]


def test_the_audit_record_names_it(shared_cache):
    data = to_json(run_audit(FIXTURES / "allocated_handle.c", shared_cache, nice=0))
    [rec] = data["allocated"]
    assert rec["id"] == "allocated_handle.c:*sem@handle_create"
    assert rec["declared"] == {"path": "allocated_handle.c", "line": 21, "kind": "allocated"}
    # the declared semaphores are counted apart: an allocated family is not one of them
    assert data["total"] == 1


def test_the_counting_pool_takes_counting_families_only():
    fams = [{"id": "a.c:*sem@f", "class": "counting", "declared": {"kind": "allocated"}},
            {"id": "b.c:*p", "class": "unknown", "declared": {"kind": "allocated"}}]
    pool = M.counting_pool({"semaphores": [], "allocated": fams})
    assert [s["id"] for s in pool] == ["a.c:*sem@f"]
    assert M.short_name(pool[0]) == "the semaphores f() allocates"


@needs_spatch
def test_the_marking_changes_the_family_and_nothing_else(tmp_path, shared_cache):
    repo = tmp_path / "tree"
    repo.mkdir()
    shutil.copy(FIXTURES / "allocated_handle.c", repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "base"], check=True)
    rec = to_json(run_audit(FIXTURES / "allocated_handle.c", shared_cache, nice=0))
    [mark] = M.mark_all(repo, M.counting_pool(rec))
    assert (mark.status, mark.files) == ("marked", ["allocated_handle.c"]), mark.why
    diff = subprocess.run(["git", "-C", str(repo), "show", "--format=", "-U0"],
                          capture_output=True, text=True, check=True).stdout
    added = " ".join(ln[1:].strip() for ln in diff.splitlines()
                     if ln.startswith("+") and not ln.startswith("+++"))
    # spatch breaks the first line at 80 columns
    assert added == (
        "struct arch_semaphore *sem = kzalloc(sizeof(struct arch_semaphore), GFP_KERNEL); "
        + " ".join(["struct arch_semaphore *sem = (struct arch_semaphore *)handle;"] * 3))
    text = (repo / "allocated_handle.c").read_text()
    assert "static struct semaphore bus_sem;" in text
    assert "struct semaphore *bus = &bus_sem;" in text
