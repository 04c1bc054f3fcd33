"""KTAP parser: nested subtests as KUnit prints them at boot, failures, crashes."""

from qemu.ktap import ktap_summary, parse_ktap
from qemu.parse import clean_lines

KUNIT = """\
[    1.000000] KTAP version 1
[    1.000001] 1..2
[    1.000002]     KTAP version 1
[    1.000003]     # Subtest: alpha
[    1.000004]     1..2
[    1.000005]     ok 1 alpha_first
[    1.000006] some unrelated kernel message
[    1.000007]     ok 2 alpha_second
[    1.000008] # alpha: pass:2 fail:0 skip:0 total:2
[    1.000009] ok 1 alpha
[    1.000010]     KTAP version 1
[    1.000011]     # Subtest: beta
[    1.000012]     1..3
[    1.000013]         KTAP version 1
[    1.000014]         # Subtest: beta_param
[    1.000015]         ok 1 one
[    1.000016]         not ok 2 two
[    1.000017]     not ok 1 beta_param
[    1.000018]     ok 2 beta_skipped # SKIP not on this arch
[    1.000019]     # beta_failing: EXPECTATION FAILED at lib/x.c:10
[    1.000020]     not ok 3 beta_failing
[    1.000021] not ok 2 beta
"""

INIT = """\
KTAP version 1
# s2m-init scenario: clean
1..2
ok 1 boot
not ok 2 write:/proc/x=1
"""


def test_nested_kunit_with_failures():
    docs = parse_ktap(clean_lines(KUNIT))
    assert [d.name for d in docs] == ["kunit"]
    kunit = docs[0]
    assert kunit.plan == 2
    alpha, beta = kunit.children
    assert (alpha.name, alpha.status, alpha.plan) == ("alpha", "ok", 2)
    assert [c.name for c in alpha.children] == ["alpha_first", "alpha_second"]
    assert beta.status == "not ok"
    param = beta.children[0]
    assert (param.name, param.status) == ("beta_param", "not ok")
    assert [(c.name, c.status) for c in param.children] == [("one", "ok"), ("two", "not ok")]
    assert beta.children[1].status == "skip"
    assert beta.children[2].diagnostics == [] and beta.diagnostics[-1].startswith("beta_failing")
    assert dict(kunit.leaves()) == {
        "kunit/alpha/alpha_first": "ok", "kunit/alpha/alpha_second": "ok",
        "kunit/beta/beta_param/one": "ok", "kunit/beta/beta_param/two": "not ok",
        "kunit/beta/beta_skipped": "skip", "kunit/beta/beta_failing": "not ok"}


def test_all_passing_suite():
    text = "\n".join(KUNIT.splitlines()[:10])
    docs = parse_ktap(clean_lines(text))
    assert ktap_summary(docs) == {"ok": 2, "not ok": 0, "skip": 0, "missing": 1}
    # the top-level plan said 2 suites, only one result was printed: a crash.
    assert docs[0].children[-1].status == "missing"


def test_two_documents_kunit_then_init():
    docs = parse_ktap(clean_lines(KUNIT + INIT))
    assert [d.name for d in docs] == ["kunit", "s2m-init"]
    assert dict(docs[1].leaves()) == {"s2m-init/boot": "ok", "s2m-init/write:/proc/x=1": "not ok"}


def test_interrupted_subtest_is_missing():
    text = "KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n    1..2\n    ok 1 a\n"
    docs = parse_ktap(text.splitlines())
    suite = docs[0].children[0]
    assert suite.name == "s" and suite.status == "missing"
    assert [c.status for c in suite.children] == ["ok", "missing"]


def test_no_ktap_at_all():
    assert parse_ktap(["Linux version 6.1", "ok this is not a result"]) == []
