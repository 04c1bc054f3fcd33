"""Conversions written by hand (classify.convert.handmade): read from
kernel-patches/<version>/conversions/, chosen instead of a refusal, applied once
for every semaphore they convert, verified once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from classify.convert import handmade, select, series
from classify.convert import verify as V

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from test_patches import COUNTED, sem, small_audit, small_tree  # noqa: E402

ENV = {**os.environ, "GIT_AUTHOR_NAME": "A Maintainer", "GIT_AUTHOR_EMAIL": "m@example.org",
       "GIT_COMMITTER_NAME": "A Maintainer", "GIT_COMMITTER_EMAIL": "m@example.org",
       "GIT_AUTHOR_DATE": "1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 +0000"}

NOTES = """Converts: drivers/foo/pool.c:pool.slots
Converts: drivers/foo/foo.c:dev.lock

Notes for the reviewer:
- the pool's users were read by hand.
"""


def write_hand_patch(tmp_path: Path, notes: str = NOTES) -> Path:
    """A maintainer's conversion of pool.c, made as one is made: a commit in a
    repository of the files, `git format-patch`, notes put below ---."""
    repo = tmp_path / "hand-repo"
    (repo / "drivers/foo").mkdir(parents=True)
    (repo / "drivers/foo/pool.c").write_text(COUNTED)
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, env=ENV,
                                    capture_output=True, text=True).stdout
    run("init", "-q")
    run("add", ".")
    run("commit", "-q", "-m", "initial")
    (repo / "drivers/foo/pool.c").write_text(COUNTED.replace("slots, 2", "slots, 1"))
    run("commit", "-q", "-a", "-m", "foo: pool - Take one slot at a time\n\nBy hand.")
    out = tmp_path / "conversions"
    [name] = run("format-patch", "-1", "--zero-commit", "-o", str(out)).split()
    patch = Path(name)
    head, sep, rest = patch.read_text().partition("\n---\n")
    patch.write_text(head + sep + notes + "\n" + rest)
    return patch


def test_a_hand_written_conversion_is_read_with_its_ids_and_notes(tmp_path):
    patch = write_hand_patch(tmp_path)
    [hand] = set(handmade.read_conversions(patch.parent).values())
    assert hand.ids == ("drivers/foo/pool.c:pool.slots", "drivers/foo/foo.c:dev.lock")
    assert hand.subject == "foo: pool - Take one slot at a time"
    assert hand.prefix == "foo: pool - "
    assert hand.files == ("drivers/foo/pool.c",)
    # its own notes: no Converts: line, no diffstat
    assert hand.notes == "Notes for the reviewer:\n- the pool's users were read by hand.\n"


def test_a_conversion_that_names_nothing_or_is_no_patch_is_an_error(tmp_path):
    patch = write_hand_patch(tmp_path, notes="")
    with pytest.raises(select.PatchError, match=f"{patch.name}: names no semaphore"):
        handmade.read_conversions(patch.parent)
    patch.write_text("just a note\n")
    with pytest.raises(select.PatchError, match="not a patch of `git format-patch`"):
        handmade.read_conversions(patch.parent)


def test_a_person_s_conversion_carries_their_own_sign_off(tmp_path, monkeypatch):
    person = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@kernel.org"}
    monkeypatch.setitem(ENV, "GIT_AUTHOR_NAME", person["GIT_AUTHOR_NAME"])
    monkeypatch.setitem(ENV, "GIT_AUTHOR_EMAIL", person["GIT_AUTHOR_EMAIL"])
    unsigned = write_hand_patch(tmp_path / "a")
    with pytest.raises(select.PatchError, match="no Signed-off-by of its author"):
        handmade.parse(unsigned)
    signed = write_hand_patch(tmp_path / "b")
    text = signed.read_text().replace("By hand.\n", "By hand.\n\n"
                                      "Signed-off-by: Ada Lovelace <ada@kernel.org>\n", 1)
    signed.write_text(text)
    assert handmade.parse(signed).ids


def test_an_id_two_conversions_name_is_an_error(tmp_path):
    patch = write_hand_patch(tmp_path)
    (patch.parent / "0002-again.patch").write_text(patch.read_text())
    with pytest.raises(select.PatchError, match="converted by two hand-written patches"):
        handmade.read_conversions(patch.parent)
    assert handmade.read_conversions(tmp_path / "nowhere") == {}


def test_the_committed_conversions_name_semaphores_of_their_trees_audit():
    """Each kernel-patches/<version>/conversions/ patch converts semaphores the
    committed audit of that version classes as a mutex or a completion."""
    found = 0
    for conv in sorted((REPO / "kernel-patches").glob("*/conversions")):
        version = conv.parent.name
        [audit] = [json.loads(p.read_text()) for p in (REPO / "reports").glob(
            f"linux-{version}.*/audit.json")]
        classes = {s["id"]: s["class"] for s in audit["semaphores"]}
        for sid, hand in handmade.read_conversions(conv).items():
            assert classes.get(sid) in ("mutex", "completion"), (hand.path, sid)
            found += 1
    assert found


def test_select_takes_a_shared_pointer_semaphore_a_hand_patch_converts(tmp_path):
    held = sem("drivers/foo/a.c:tsem", "completion", kind="local")
    held["followed"] = [{"at": "drivers/foo/a.c:9", "pointer": "include/foo.h:.act.sem",
                         "kind": "member", "calls": 3, "also": ["drivers/foo/b.c:osem"]}]
    counting = sem("drivers/foo/b.c:osem", "counting")
    # without the hand-written patch: refused (the negative control)
    chosen, skipped = select.select([held, counting], None, [])
    assert not chosen and skipped[0].status == "refused"
    hand = handmade.Handmade(tmp_path / "0001-x.patch", ("drivers/foo/a.c:tsem",
                             "drivers/foo/b.c:osem", "drivers/foo/c.c:gone"), "x", "",
                             ("drivers/foo/a.c", "drivers/foo/c.c"))
    by_id = {i: hand for i in hand.ids}
    chosen, skipped = select.select([held, counting], None, [], by_id)
    assert [s["id"] for s in chosen] == ["drivers/foo/a.c:tsem"]
    why = {o.id: o.why[0] for o in skipped}
    # the audit has the last word: a counting verdict is not converted, and an id
    # the audit does not have is said, not dropped
    assert "the audit classes it counting" in why["drivers/foo/b.c:osem"]
    assert "the audit has no semaphore with this id" in why["drivers/foo/c.c:gone"]
    # an audit that did not read the patch's files says nothing of it
    elsewhere = sem("drivers/bar/d.c:dev.lock")
    assert select.select([elsewhere], None, [], by_id)[1] == []


@pytest.mark.skipif(subprocess.run(["which", "spatch"], capture_output=True).returncode,
                    reason="spatch missing")
def test_generate_applies_a_hand_patch_once_for_its_semaphores(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    kernel = small_tree(tmp_path / "linux")
    patch = write_hand_patch(tmp_path)
    hand = handmade.read_conversions(patch.parent)
    ids = ["drivers/foo/foo.c:dev.lock", "drivers/foo/foo.c:dev.other",
           "drivers/foo/pool.c:pool.slots"]
    res = series.generate(kernel, small_audit(), tmp_path / "out", tmp_path / "wt", ids=ids,
                          signoff=("A U Thor", "author@example.org"), hand=hand)
    [s] = res.series
    outcomes = {o.id: o for o in s.outcomes}
    assert {o.status for o in outcomes.values()} == {"converted"}
    # pool.slots, which the script refuses (count 2), and dev.lock: one patch
    hand_patch = outcomes["drivers/foo/pool.c:pool.slots"].patch
    assert outcomes["drivers/foo/foo.c:dev.lock"].patch == hand_patch
    assert outcomes["drivers/foo/foo.c:dev.other"].patch != hand_patch
    assert len(s.patches) == 3                  # cover letter and two patches
    text = (s.dir / hand_patch).read_text()
    # the first of the ids in order (dev.lock) brings it in: patch 1
    assert "Subject: [PATCH 1/2] foo: pool - Take one slot at a time" in text
    # written under a placeholder identity: mailed as the signer's, who signs off
    assert "From: A U Thor <author@example.org>" in text and "A Maintainer" not in text
    assert "Signed-off-by: A U Thor <author@example.org>" in text
    assert "- the pool's users were read by hand." in text
    assert "Written by hand" not in text and "Converts:" not in text
    assert "(foo) was written by hand: take one slot at a time." in \
        " ".join(s.patches[0].read_text().split())
    index = json.loads((s.dir / "series.json").read_text())
    assert sorted(e["id"] for e in index["patches"] if e.get("hand")) == \
        ["drivers/foo/foo.c:dev.lock", "drivers/foo/pool.c:pool.slots"]
    # verified once, the record shared by both
    calls = []
    monkeypatch.setattr(V, "verify_patch", lambda tree, b, p, logs: calls.append(p.name)
                        or {"patch": p.name})
    records = V.verify_series(tmp_path / "wt", None, s.dir, tmp_path / "logs")
    assert sorted(calls) == sorted(p.name for p in s.patches[1:])
    assert records["drivers/foo/foo.c:dev.lock"] is records["drivers/foo/pool.c:pool.slots"]
