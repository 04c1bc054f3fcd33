"""Who signs the patches off: a person's identity, never a placeholder, and the
environment that makes them the author and committer of each commit.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from classify.convert.select import PatchError
from classify.paths import PROJECT_DIR
from classify.tree import GIT_ENV


PLACEHOLDER_DOMAINS = re.compile(
    r"@(localhost|example|invalid|test)$|@.*\.(example|invalid|test|localhost)$|"
    r"@(.*\.)?example\.(com|org|net)$", re.I)


class IdentityError(PatchError):
    """No identity to sign the patches off with."""


def is_placeholder(name: str, email: str) -> bool:
    """sem2mutex's own identity, or an address at a reserved domain."""
    return name == GIT_ENV["GIT_AUTHOR_NAME"] or bool(PLACEHOLDER_DOMAINS.search(email))


def identity(repo: Path = PROJECT_DIR, env: dict[str, str] | None = None
             ) -> tuple[str, str]:
    """(name, email) to sign off with: GIT_AUTHOR_NAME/EMAIL from the environment,
    else git config user.name/email of this repository.  None, or a placeholder
    (sem2mutex's own identity, an address at a reserved domain such as
    example.org, .example, .invalid, localhost), is an IdentityError: a
    Signed-off-by certifies the Developer's Certificate of Origin and must be a
    person's."""
    env = os.environ if env is None else env
    def cfg(key: str) -> str:
        res = subprocess.run(["git", "-C", str(repo), "config", key],
                             capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else ""
    name = env.get("GIT_AUTHOR_NAME") or cfg("user.name")
    email = env.get("GIT_AUTHOR_EMAIL") or cfg("user.email")
    if not (name and email):
        raise IdentityError("no identity to sign off with: set git config user.name "
                            "and user.email (or GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL), or "
                            "SIGNOFF=0 (--no-signoff) for patches without Signed-off-by")
    if is_placeholder(name, email):
        raise IdentityError(f"{name} <{email}> is a placeholder, not an identity to "
                            "sign off with: set git config user.name/user.email (or "
                            "GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL), or SIGNOFF=0 "
                            "(--no-signoff)")
    return name, email


def commit_env(name: str, email: str) -> dict[str, str]:
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
    if os.environ.get("SOURCE_DATE_EPOCH"):
        date = f"@{os.environ['SOURCE_DATE_EPOCH']} +0000"
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env
