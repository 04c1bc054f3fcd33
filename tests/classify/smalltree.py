"""A small committed tree for the tests that run the census or the call graph
(they grep with git)."""

import subprocess
from pathlib import Path


def git_tree(root: Path, files: dict[str, str]) -> Path:
    """A small tree of files, committed (the census and the call graph grep with
    git)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "tree"], check=True)
    return root
