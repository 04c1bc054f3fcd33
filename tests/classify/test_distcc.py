"""Kbuild makes through distcc (classify/distcc.py, kbuild.make): a real distccd
on 127.0.0.1, on a port of its own, logging to a file of its own, compiles the
job, and the object is the one a local compile makes; a host list where no
host answers stops the build with one line."""

import os
import shutil
import time
from pathlib import Path

import pytest

from classify import distcc, kbuild

needs_distcc = pytest.mark.skipif(not shutil.which("distccd") or not shutil.which("ccache"),
                                  reason="distcc and ccache are installed by make setup")

# A "kernel tree" whose Makefile compiles like kbuild: $(CC) into $(O).
MAKEFILE = """\
.PHONY: foo.o
foo.o:
\t$(CC) -O2 -c $(CURDIR)/foo.c -o $(O)/foo.o
"""
SOURCE = "int triple(int x) { return 3 * x; }\nint sum(int *a) { return a[0] + a[1]; }\n"


@pytest.fixture
def daemon(tmp_path):
    """distccd on 127.0.0.1:<port>, its log in tmp_path/distccd.log."""
    logfile = tmp_path / "distccd.log"
    with distcc.local_daemon(logfile) as entry:
        yield int(entry.split(":")[1].split("/")[0]), logfile


@pytest.fixture
def small_tree(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "Makefile").write_text(MAKEFILE)
    (tree / "foo.c").write_text(SOURCE)
    # a ccache of its own: a hit would not go to distcc at all
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    monkeypatch.delenv("DISTCC_HOSTS", raising=False)
    return tree


def build(tree: Path, out: Path) -> bytes:
    out.mkdir()
    res = kbuild.make(tree, out, "foo.o")
    assert res.returncode == 0, res.stdout
    return (out / "foo.o").read_bytes()


def test_the_host_list_gives_the_jobs_and_the_addresses():
    env = {"DISTCC_HOSTS": "--randomize build1:3700/8 build2/4 localhost user@b3/2"}
    assert distcc.host_list(env) == ["build1:3700/8", "build2/4", "localhost", "user@b3/2"]
    assert distcc.tcp_address("build1:3700/8") == ("build1", 3700)
    assert distcc.tcp_address("build2/4") == ("build2", distcc.DEFAULT_PORT)
    assert distcc.tcp_address("localhost") is None          # runs here, no daemon
    assert distcc.tcp_address("user@b3/2") is None          # ssh
    assert distcc.build_env(env) == {"CCACHE_PREFIX": "distcc"}
    # the look-alike: without DISTCC_HOSTS (or blank) nothing changes
    assert distcc.build_env({}) == {} and distcc.build_env({"DISTCC_HOSTS": " "}) == {}


@needs_distcc
def test_a_make_goes_through_distccd_and_gives_the_same_object(daemon, small_tree, tmp_path,
                                                               monkeypatch):
    port, logfile = daemon
    local = build(small_tree, tmp_path / "local")
    assert "COMPILE_OK" not in logfile.read_text()          # nothing went there yet
    monkeypatch.setenv("DISTCC_HOSTS", f"127.0.0.1:{port}/2")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache-distcc"))
    assert kbuild.default_jobs() == 2                       # -j from the host list
    remote = build(small_tree, tmp_path / "remote")
    time.sleep(0.2)
    log = logfile.read_text()
    assert distcc.jobs_done(logfile) == 1 and "foo.c" in log, log
    assert remote == local


@needs_distcc
def test_a_wrong_host_stops_the_build_with_one_line(small_tree, tmp_path, monkeypatch):
    port = distcc.free_port()                                      # nobody listens there
    monkeypatch.setenv("DISTCC_HOSTS", f"127.0.0.1:{port}/2")
    with pytest.raises(kbuild.KbuildError) as err:
        kbuild.make(small_tree, tmp_path, "foo.o")
    msg = str(err.value)
    assert "\n" not in msg and f"127.0.0.1:{port}/2" in msg
    assert msg.startswith("distcc: no host of DISTCC_HOSTS answers")
    assert not (tmp_path / "foo.o").exists()


@needs_distcc
def test_one_wrong_host_among_good_ones_falls_back(daemon, small_tree, tmp_path,
                                                   monkeypatch, caplog):
    port, _ = daemon
    hosts = f"127.0.0.1:{distcc.free_port()}/1 127.0.0.1:{port}/1"
    monkeypatch.setenv("DISTCC_HOSTS", hosts)
    distcc.check_hosts(dict(os.environ))
    assert "1 of 2 host(s) do not answer" in caplog.text
    local = build(small_tree, tmp_path / "ok")
    monkeypatch.delenv("DISTCC_HOSTS")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache-local"))
    assert build(small_tree, tmp_path / "plain") == local
