"""Build errors are named with their lines (real gcc output, no kernel needed)."""

import subprocess

from qemu.build import build_dir_for, error_lines


def test_error_lines_from_real_gcc_output(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text("int f(void)\n{\n\treturn undeclared_thing;\n}\n")
    res = subprocess.run(["gcc", "-c", str(src), "-o", str(tmp_path / "b.o")],
                         capture_output=True, text=True)
    assert res.returncode != 0
    noise = "\n".join(f"  CC      kernel/file{i}.o" for i in range(200))
    picked = error_lines(noise + "\n" + res.stderr + "make[2]: *** [x] Error 1\n")
    assert any("undeclared_thing" in ln and "error:" in ln for ln in picked)
    assert any("Error 1" in ln for ln in picked)
    assert not any(ln.startswith("  CC ") for ln in picked)


def test_no_error_marker_gives_the_tail():
    assert error_lines("a\nb\nc", limit=2) == ["b", "c"]


def test_build_dir_named_by_fragment_set(tmp_path):
    assert build_dir_for(("base", "mode-full"), "", tmp_path).name == "base+mode-full"
    assert build_dir_for(("base",), "ab12cd34", tmp_path).name == "ab12cd34-base"
