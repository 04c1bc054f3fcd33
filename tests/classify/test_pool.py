"""scan_files: the same answer as a loop, from other processes when it pays."""

import os

from classify.census import pool


def scan_with_pid(rel, text):
    return {"len": len(text), "rel": rel, "pid": os.getpid()}


def items(n):
    return [(f"f{i}.c", "x" * i) for i in range(n)]


def test_many_files_are_scanned_by_workers_with_the_answer_of_a_loop(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    got = pool.scan_files(scan_with_pid, items(pool.MIN_PARALLEL * 2))
    assert list(got) == [rel for rel, _ in items(pool.MIN_PARALLEL * 2)]
    assert [(g["rel"], g["len"]) for g in got.values()] == \
        [(rel, len(text)) for rel, text in items(pool.MIN_PARALLEL * 2)]
    assert os.getpid() not in {g["pid"] for g in got.values()}


def test_few_files_are_scanned_here():
    got = pool.scan_files(scan_with_pid, items(pool.MIN_PARALLEL - 1))
    assert {g["pid"] for g in got.values()} == {os.getpid()}
    assert [g["len"] for g in got.values()] == list(range(pool.MIN_PARALLEL - 1))


def test_spatch_batches_hold_every_file_once_two_per_job_big_files_spread():
    from classify.facts import _batches
    texts = {f"f{i}.c": "x" * (1000 - i) for i in range(40)}
    todo = [(rel, "key-" + rel) for rel in texts]
    batches = _batches(todo, texts, jobs=2)
    assert len(batches) == 4
    assert sorted(item for b in batches for item in b) == sorted(todo)
    # the four biggest files start four different batches
    assert {b[0][0] for b in batches} == {"f0.c", "f1.c", "f2.c", "f3.c"}
    assert _batches(todo[:3], texts, jobs=2) == [[todo[0]], [todo[1]], [todo[2]]]
    assert _batches([], texts, jobs=2) == []
