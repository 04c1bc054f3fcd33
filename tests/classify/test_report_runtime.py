"""classify/report/runtime.py and the runtime sections of the audit report."""

from pathlib import Path

from classify.records.runtime import (BootEntry, BootRecord, RuntimeRecord, SemRuntime,
                                      VariantRecord)
from classify.report.runtime import boots_line, summary_line


def test_summary_line():
    rec = SemRuntime("exercised-clean", [BootEntry("b1", "semaphore", "clean", ops=5),
                                         BootEntry("b2", "mutex", "clean", ops=7)],
                     boot="b1", evidence="(console_sem).lock: OPS 5",
                     finding="classed counting, but ...")
    line = summary_line(rec)
    assert line.startswith("exercised, clean: (console_sem).lock: OPS 5 (b1)")
    assert "b2 (as mutex): clean, OPS 7" in line and "FINDING: classed counting" in line
    assert summary_line(SemRuntime("not-exercised")) == "not-exercised"
    assert summary_line(SemRuntime("not-built", files=["a.c", "b.c", "c.c", "d.c"])) == \
        "not-built: a.c, b.c, c.c"


def test_boots_line():
    boots = {"a": BootRecord("a", "trust", "completed"), "b": BootRecord("b", "trust", "hang"),
             "c": BootRecord("c", "unmark:x", "not_built"),
             "d": BootRecord("d", "unmark:y", "not_made")}
    assert boots_line(boots) == ("2 boots of 1 kernels; 1 kernel(s) did not build, not "
                                 "booted: unmark:x; 1 variant(s) not made: unmark:y")


def test_report_shows_the_runtime_record_of_every_semaphore(shared_cache):
    from classify.audit import run_audit
    from classify.report import to_html, to_json, to_markdown
    fixtures = Path(__file__).resolve().parent / "fixtures"
    a = run_audit(fixtures / "loop.c", shared_cache, nice=0, version="file-x")
    ids = [r.decl.id for r in a.results]
    runtime = RuntimeRecord(
        "file-x", "base+mode-full+runtime", [], {"b1": BootRecord("b1", "trust", "completed")},
        {}, {ids[0]: SemRuntime("violated", [], boot="b1", kind="bad_unlock_balance",
                                title="<T> & co")}, {"trust": VariantRecord(marked=[])})
    data = to_json(a, None, runtime)
    assert data["semaphores"][0]["runtime"]["status"] == "violated"
    assert all(s["runtime"]["status"] == "not-run" for s in data["semaphores"][1:])
    md = to_markdown(a, None, runtime)
    assert "## Runtime evidence" in md and "violated: bad_unlock_balance: <T> & co (b1)" in md
    assert md.count("| not-run |") == len(ids) - 1
    page = to_html(a, None, runtime)
    assert "&lt;T&gt; &amp; co" in page and 'class="rt-violated"' in page
    # without runtime.json the report is what it was
    assert "Runtime evidence" not in to_markdown(a) and "runtime" not in to_json(a)[
        "semaphores"][0]
