"""A log in the form people hand it over reads as the plain log (qemu.logtext): every
committed runtime log coloured, with CRLF, journalctl-prefixed, with dmesg -T times or
printk caller ids, quoted in a reply at depth 1, 2 and 3, gives the same triage."""

import json
import textwrap
from pathlib import Path

import pytest

from qemu import logtext, parse, triage

REPO = Path(__file__).resolve().parents[2]
AUDIT_PATH = REPO / "reports" / "linux-6.1.192" / "audit.json"
AUDIT = json.loads(AUDIT_PATH.read_text())
RUNTIME = sorted((AUDIT_PATH.parent / "runtime").glob("*.log"))


def _each(prefix):
    return lambda text: "\n".join(prefix(n, ln) for n, ln in enumerate(text.splitlines()))


def _colour(n: int, line: str) -> str:
    """dmesg --color=always: the time green, a "subsystem:" prefix yellow, and (as for
    a warning's level) the rest bold."""
    head, sep, rest = line.partition(": ")
    if sep and head.isidentifier():
        line = f"\x1b[33m{head}:\x1b[0m {rest}"
    return f"\x1b[32m[{n / 1000:12.6f}] \x1b[0m\x1b[1m{line}\x1b[0m"


def _quote(mark: str):
    return _each(lambda n, ln: (mark + ln) if ln else mark.rstrip())


FORMS = {
    "coloured": _each(_colour),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "journalctl": _each(lambda n, ln: f"Dec 06 01:02:03 s2m kernel: {ln}"),
    "dmesg-T": _each(lambda n, ln: f"[Sun Dec  6 01:02:{n % 60:02d} 2026] {ln}"),
    "caller-id": _each(lambda n, ln: f"[{n / 1000:12.6f}][    T{n % 7 + 1}] {ln}"),
    "dmesg-T-caller": _each(lambda n, ln: f"[Sun Dec  6 01:02:03 2026] [C{n % 2}] {ln}"),
    "quoted-1": _quote("> "),
    "quoted-2": _quote(">> "),
    "quoted-3": _quote("> > > "),
    "quoted-journal": lambda text: _quote("> ")(FORMS["journalctl"](text)),
}


def read(text: str, name: str) -> tuple[str, dict]:
    """The text and the JSON triage gives (the log's path is the same for both)."""
    res = triage.triage(text, AUDIT, name, "series", frozenset(), [], None)
    log = Path(name + ".log")
    return triage.render(res, log, AUDIT_PATH), triage.as_json(res, log, AUDIT_PATH)


@pytest.mark.parametrize("path", RUNTIME, ids=[p.stem for p in RUNTIME])
def test_every_form_triages_as_the_plain_log(path):
    plain = path.read_text(errors="replace")
    want = read(plain, path.stem)
    assert parse.kernel_version(plain) == "6.1.192"
    for form, change in FORMS.items():
        text = change(plain)
        assert read(text, path.stem) == want, form
        assert parse.kernel_version(text) == "6.1.192", form
        assert parse.scenario_of(text) == parse.scenario_of(plain), form


def _wrap(text: str, mark: str, width: int = 72) -> str:
    """A mail client's reply: quoted, and every line longer than the width broken at
    its last blank before it (the kernel's leading blanks kept)."""
    out = []
    for line in text.splitlines():
        pieces = textwrap.wrap(line, width - len(mark), drop_whitespace=True,
                               break_long_words=False, break_on_hyphens=False) or [""]
        out += [mark + p for p in pieces]
    return "\n".join(out)


def _reports(text: str) -> list[tuple]:
    res = triage.triage(text, AUDIT, "b", "series", frozenset(), [], None)
    return [(r["kind"], r["title"], r["task"], [(lk["id"], lk.get("link")) for lk in
                                                r["locks"]]) for r in res["reports"]]


WRAPPED = [p for p in RUNTIME if parse.parse_log(p.read_text(errors="replace")).reports]


@pytest.mark.parametrize("path", WRAPPED, ids=[p.stem for p in WRAPPED])
def test_a_reply_wrapped_by_the_mail_client_reads_the_same_reports(path):
    plain = path.read_text(errors="replace")
    for mark in ("> ", ">> ", "> > > "):
        assert _reports(_wrap(plain, mark)) == _reports(plain), mark


WRAPPED_TRACE = """\
> [  240.100000] INFO: task kworker/0:0:3 blocked for more than 120
> seconds.
> [  240.100100]       Not tainted 6.1.192 #1
> [  240.100200] task:kworker/0:0     state:D stack:0     pid:3     ppid:2
> [  240.100300] Call Trace:
> [  240.100400]  <TASK>
> [  240.100500]  __schedule+0x2f1/0x8d0
> [  240.100600]  schedule+0x5d/0xd0
> [  240.100700]  __down_common+0x11e/0x1f0 drivers/a/really/long/path/file.c:1
> [  240.100800]  down+0x43/0x60
> [  240.100900]  dlfb_free_urb_list+0x4f/0x120 some/long/source/path/here.c:12
> [  240.101000]  dlfb_usb_disconnect+0x6a/0x90 [udlfb]
> [  240.101100]  usb_unbind_interface+0x8c/0x270
> [  240.101200]  </TASK>
"""


def test_wrapped_trace_lines_are_joined_and_keep_their_line_numbers():
    lines, origin = logtext.normalise(WRAPPED_TRACE)
    assert lines[0] == "INFO: task kworker/0:0:3 blocked for more than 120 seconds."
    assert origin[:2] == [0, 2]
    (rep,) = parse.parse_log(WRAPPED_TRACE).reports
    assert rep.kind == "hung_task" and rep.line == 1
    assert rep.frames[:3] == ["__down_common", "down", "dlfb_free_urb_list"]
    # a stamped log: the untimed line under a stamped one is its tail
    wrapped = WRAPPED_TRACE.replace(" [udlfb]", "\n> [udlfb]")
    assert parse.parse_log(wrapped).reports[0].frames == rep.frames


def test_quoting_does_not_join_what_is_not_wrapped():
    text = ">> short line\n>> another\n> other depth\n>\n> [x]"
    assert logtext.normalise(text) == (["short line", "another", "other depth", "", "[x]"],
                                       [0, 1, 2, 3, 4])
    # the kernel's own indentation stays under the quote
    assert logtext.normalise(">  func+0x1/0x2\n>>>  f+0x1/0x2")[0] == [" func+0x1/0x2",
                                                                      " f+0x1/0x2"]
