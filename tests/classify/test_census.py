"""The census: declarations, identities and the resolution of calls."""

from pathlib import Path

import pytest

from classify.census import (candidate_files, clean_source, scan_file,
                             subsystem, take_census)

SRC = """
#include "local.h"
struct foo {
	int x;
	struct semaphore sem;			/* a member */
	struct semaphore sems[4], *psem;
	struct {
		struct semaphore inner;
	} nested;
};
static DEFINE_SEMAPHORE(old_gen);
DEFINE_SEMAPHORE(new_gen, 3);
static struct semaphore st = __SEMAPHORE_INITIALIZER(st, 1);
extern struct semaphore elsewhere;
struct semaphore *get_sem(void);

static int f(struct foo *p, struct semaphore *arg)
{
	struct semaphore local;
	char *s = "down(&p->sem)";

	sema_init(&local, 0);
	down(&p->sem);
	up(&p->sems[1]);
	up(&p->nested.inner);
	down(arg);
	up(&old_gen);
	p->ops->up(p); // up(&st)
	return 0;
}
"""


def census_of(tmp_path: Path, text: str = SRC, name: str = "drivers/x/a.c"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return take_census(tmp_path, [name])


def test_declarations_and_identities(tmp_path):
    c = census_of(tmp_path)
    assert sorted(c.sems) == [
        "drivers/x/a.c:foo.nested.inner", "drivers/x/a.c:foo.sem",
        "drivers/x/a.c:foo.sems", "drivers/x/a.c:local", "drivers/x/a.c:new_gen",
        "drivers/x/a.c:old_gen",
        "drivers/x/a.c:st"]
    assert c.sems["drivers/x/a.c:foo.sems"].array
    assert c.sems["drivers/x/a.c:old_gen"].init == "1"
    assert c.sems["drivers/x/a.c:new_gen"].init == "3"
    assert c.sems["drivers/x/a.c:st"].init == "1"
    assert c.sems["drivers/x/a.c:st"].kind == "static"
    assert c.sems["drivers/x/a.c:new_gen"].kind == "global"
    assert sorted(c.pointers) == ["drivers/x/a.c:arg", "drivers/x/a.c:foo.psem"]


def test_calls_resolved_to_identities(tmp_path):
    c = census_of(tmp_path)
    got = {(o.line, o.op): (o.target, o.via) for o in c.ops}
    assert got[(22, "sema_init")] == ("drivers/x/a.c:local", "direct")
    assert got[(23, "down")] == ("drivers/x/a.c:foo.sem", "direct")
    assert got[(24, "up")] == ("drivers/x/a.c:foo.sems", "direct")
    assert got[(25, "up")] == ("drivers/x/a.c:foo.nested.inner", "direct")
    assert got[(26, "down")] == ("drivers/x/a.c:arg", "pointer")
    assert got[(27, "up")] == ("drivers/x/a.c:old_gen", "direct")
    # comments, strings and member function pointers are not calls
    assert len(c.ops) == 6


def test_member_of_a_header_is_one_semaphore(tmp_path):
    (tmp_path / "include/linux").mkdir(parents=True)
    (tmp_path / "include/linux/dev.h").write_text(
        "struct dev {\n\tstruct semaphore lock;\n};\n")
    for name in ("a", "b"):
        (tmp_path / f"drivers/{name}.c").parent.mkdir(exist_ok=True)
        (tmp_path / f"drivers/{name}.c").write_text(
            "#include <linux/dev.h>\nvoid g(struct dev *d)\n{\n\tdown(&d->lock);\n"
            "\tup(&d->lock);\n}\n")
    c = take_census(tmp_path, ["drivers/a.c", "drivers/b.c", "include/linux/dev.h"])
    assert list(c.sems) == ["include/linux/dev.h:dev.lock"]
    assert {o.target for o in c.ops} == {"include/linux/dev.h:dev.lock"}


def test_ambiguous_member_is_not_guessed(tmp_path):
    for name in ("p", "q"):
        (tmp_path / f"include/{name}.h").parent.mkdir(exist_ok=True)
        (tmp_path / f"include/{name}.h").write_text(
            f"struct {name} {{\n\tstruct semaphore lock;\n}};\n")
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers/u.c").write_text("void g(void *x)\n{\n\tup(&((struct p *)x)->lock);\n}\n")
    c = take_census(tmp_path, ["drivers/u.c", "include/p.h", "include/q.h"])
    assert c.ops[0].via == "ambiguous"
    assert c.ops[0].candidates == ("include/p.h:p.lock", "include/q.h:q.lock")


def test_clean_source_keeps_offsets():
    text = 'a = "x{"; /* { */ b = \'{\'; // {\n#define X {\nc;\n'
    out = clean_source(text)
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    assert "{" not in out


def test_scan_file_is_json_data():
    import json
    data = scan_file("a.c", SRC)
    assert json.loads(json.dumps(data)) == data


def test_prefilter_on_a_plain_directory(tmp_path):
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers/a.c").write_text("void f(void) { up(&s); }\n")
    (tmp_path / "drivers/b.c").write_text("void f(void) { setup(&s); }\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools/c.c").write_text("void f(void) { up(&s); }\n")
    assert candidate_files(tmp_path) == ["drivers/a.c"]


def test_prefilter_finds_the_same_files_with_and_without_git(tmp_path):
    """A copy of a tree (no .git) must give the census the files git grep gives."""
    import subprocess
    d = tmp_path / "drivers"
    d.mkdir()
    (d / "a.c").write_text("static struct semaphore s;\n")
    (d / "wrapped.c").write_text("/* while the interface is up\n\t(see below) */\n")
    (d / "blob.c").write_bytes(b"\0\1 struct semaphore in a binary file\n")
    (d / "link.h").symlink_to("a.c")
    (d / ".tmp").mkdir()                 # a build's dot directory: not a source
    (d / ".tmp/c.c").write_text("static struct semaphore s;\n")
    (d / "shipped.c").write_text("static struct semaphore t;\n")
    (tmp_path / ".gitignore").write_text("shipped.c\n")
    walked = candidate_files(tmp_path)
    (d / ".tmp/c.c").unlink()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-f", "-A"], check=True)
    assert candidate_files(tmp_path) == walked == ["drivers/a.c", "drivers/shipped.c"]


def test_prefilter_answer_is_kept_for_a_clean_commit_only(tmp_path):
    """A warm audit skips the grep on a clean git tree; a tree with changes is
    grepped every time (a file staged since would otherwise be missed)."""
    import subprocess
    from classify.facts import Cache
    tree, cache = tmp_path / "linux", Cache(tmp_path / "cache")
    (tree / "drivers").mkdir(parents=True)
    (tree / "drivers/a.c").write_text("static struct semaphore s;\n")
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "-m", "a"], check=True)
    assert candidate_files(tree, cache) == ["drivers/a.c"] and cache.hits == 0
    assert candidate_files(tree, cache) == ["drivers/a.c"] and cache.hits == 1
    (tree / "drivers/b.c").write_text("void f(void) { up(&s); }\n")
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    assert candidate_files(tree, cache) == ["drivers/a.c", "drivers/b.c"]
    assert cache.hits == 1


def test_subsystem():
    assert subsystem("drivers/block/loop.c") == "drivers/block"
    assert subsystem("kernel/printk/printk.c") == "kernel/printk"
    assert subsystem("a.c") == "."


def test_same_local_name_in_two_functions(tmp_path):
    c = census_of(tmp_path, "void f(void)\n{\n\tstruct semaphore s;\n\tsema_init(&s, 0);\n}\n"
                            "void g(void)\n{\n\tstruct semaphore s;\n\tsema_init(&s, 1);\n}\n",
                  "a.c")
    assert sorted(c.sems) == ["a.c:s@f", "a.c:s@g"]
    assert [o.target for o in c.ops] == ["a.c:s@f", "a.c:s@g"]


def test_calls_inside_macro_bodies_are_found(tmp_path):
    c = census_of(tmp_path, "static DEFINE_SEMAPHORE(s);\n"
                            "#define LOCKED(x) do {\t\\\n\tdown(&s);\t\\\n\tx;\t\\\n"
                            "\tup(&s);\t\\\n} while (0)\n", "m.c")
    assert [(o.line, o.op, o.func, o.target) for o in c.ops] == [
        (3, "down", "macro LOCKED", "m.c:s"), (5, "up", "macro LOCKED", "m.c:s")]


@pytest.mark.parametrize("body,looped", [
    ("for (i = 0; i < n; i++) up(&d->s);", True),          # a for head with ;
    ("while (x) {\n if (y)\n  up(&d->s);\n}", True),      # nested in a loop body
    ("do { up(&d->s); } while (k--);", True),
    ("do { up(&d->s); } while (0);", False),                 # the macro idiom runs once
    ("if (x) {\n up(&d->s);\n}", False),
    ("up(&d->s);", False),
])
def test_a_call_in_a_loop_is_marked(body, looped):
    from classify.census.cscan import in_loop, scan_scopes
    text = clean_source("void f(struct d *d)\n{\n" + body + "\n}\n")
    assert in_loop(text, scan_scopes(text), text.index("up(&d->s)")) is looped


def test_a_parameter_of_enum_type_does_not_hide_the_function():
    """hclgevf_reset_prepare_general(..., enum hnae3_reset_type rst_type): its calls
    belong to it; the look-alike, an enum declaration, is no function."""
    from classify.census.cscan import scan_scopes
    text = clean_source("enum kind {\n A,\n};\nstatic void prep(struct d *d,\n"
                        "\t\t enum kind k)\n{\n#define N 5\n\tdown(&d->s);\n}\n")
    fs = scan_scopes(text)
    assert fs.function_at(text.index("down("))[0] == "prep"
    assert [s.kind for s in fs.scopes][0] == "other"
