"""Conversions written by hand: kernel-patches/<version>/conversions/*.patch.

Some semaphores the audit classes as a mutex or a completion need a change no
semantic patch of one semaphore can make: hp_sdc's tsem and s_sync are waited
for through a member pointer that also carries counting semaphores, so the
driver's transaction needs a completion beside it.  A maintainer writes that
patch once (`git format-patch`), names the audit ids it converts on
`Converts: <id>` lines below its `---` (a person's patch carries their own
Signed-off-by; one written under sem2mutex's placeholder identity is mailed as
the signer's), and `make patches` puts it in the
series of its MAINTAINERS entry instead of refusing those semaphores, then
verifies it like the generated ones (git am, checkpatch, compiles, sparse).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from classify.convert.select import PatchError
from classify.convert.identity import is_placeholder
from classify.paths import PROJECT_DIR, SERIES_ROOT
from classify.tree import TreeError

_CONVERTS = re.compile(r"^Converts: (\S+)\s*$", re.M)
_SUBJECT = re.compile(r"^Subject: (?:\[[^]]*\] )?(.*)$", re.M)
_DIFFSTAT = re.compile(r"^ (\S.*\||\d+ files? changed)")
_DIFF = re.compile(r"^diff --git a/(\S+) b/\S+$", re.M)
_FROM = re.compile(r"^From: (.*?) <([^>]+)>$", re.M)


@dataclass(frozen=True)
class Handmade:
    path: Path                  # the patch file
    ids: tuple[str, ...]        # the audit ids it converts
    subject: str                # without [PATCH]
    notes: str                  # its own notes below ---, the Converts: lines taken out
    files: tuple[str, ...]      # the files it changes

    @property
    def name(self) -> str:
        """The path a record shows: relative to the project when it is there."""
        try:
            return str(self.path.relative_to(PROJECT_DIR))
        except ValueError:
            return str(self.path)

    @property
    def prefix(self) -> str:
        """The subject's prefix ("Input: hp_sdc - "), as the cover letter wants it."""
        m = re.match(r"^(.*(?: - |: ))", self.subject)
        return m.group(1) if m else ""


def parse(path: Path) -> Handmade:
    """One hand-written conversion; a PatchError naming the file when it is not a
    format-patch file or names no semaphore."""
    try:
        text = path.read_text()
    except OSError as err:
        raise PatchError(f"{path}: cannot read: {err.strerror}") from None
    head, sep, rest = text.partition("\n---\n")
    subject = _SUBJECT.search(re.sub(r"\n[ \t]+", " ", head))  # unfolded
    if not sep or not subject or not _DIFF.search(rest):
        raise PatchError(f"{path}: not a patch of `git format-patch` (a Subject:, a --- "
                         "line, a diff)")
    notes_part = rest.split("\ndiff --git ", 1)[0]
    ids = tuple(_CONVERTS.findall(notes_part))
    author = _FROM.search(head)
    if author and not is_placeholder(author.group(1), author.group(2)) and \
            f"Signed-off-by: {author.group(1)} <{author.group(2)}>" not in head:
        raise PatchError(f"{path}: written by {author.group(1)} <{author.group(2)}> but has "
                         "no Signed-off-by of its author: add theirs (git commit -s)")
    if not ids:
        raise PatchError(f"{path}: names no semaphore: put a `Converts: <audit id>` line "
                         "below its --- for each one it converts")
    return Handmade(path, ids, subject.group(1).strip(), own_notes(notes_part),
                    tuple(sorted(set(_DIFF.findall(rest)))))


def own_notes(below: str) -> str:
    """The patch's notes for the reviewer: what is below --- before the diffstat,
    without the Converts: lines."""
    kept = []
    for line in below.splitlines():
        if _DIFFSTAT.match(line):
            break
        if not _CONVERTS.match(line):
            kept.append(line)
    text = "\n".join(kept).strip("\n")
    return text + "\n" if text else ""


def read_conversions(directory: Path) -> dict[str, Handmade]:
    """{audit id: its hand-written conversion} of the *.patch files of directory
    (none when it does not exist); an id two patches name is a PatchError."""
    by_id: dict[str, Handmade] = {}
    for path in sorted(Path(directory).glob("*.patch")):
        hand = parse(path)
        for sid in hand.ids:
            if sid in by_id:
                raise PatchError(f"{sid}: converted by two hand-written patches: "
                                 f"{by_id[sid].path.name} and {path.name}")
            by_id[sid] = hand
    return by_id


def conversions_for(kernel: Path, root: Path = SERIES_ROOT) -> dict[str, Handmade]:
    """The hand-written conversions of the kernel's version (none for a version
    without a series: its generated patches stand alone)."""
    from classify.versions import series_dir
    try:
        return read_conversions(series_dir(kernel, root) / "conversions")
    except TreeError:
        return {}
