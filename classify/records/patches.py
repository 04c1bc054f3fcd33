"""patches.json's shape: the status of each semaphore's conversion patch and its
verification, as `make patches` leaves it (classify.convert.cli.stable_record) and the
audit report shows it (its "patch", classify.records.audit).

A TypedDict, as audit.json's records are: the file is copied into the audit byte for
byte, and classify.inputs.check_patches checks a file a user gives against it.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

PATCHES_SCHEMA = "sem2mutex-patches-1"
PATCH_STATUSES = ("converted", "refused", "skipped")


class Checkpatch(TypedDict, total=False):
    errors: int
    warnings: int
    checks: int


class PatchRecord(TypedDict):
    """One semaphore's patch; the keys after "hand" only once the series was verified."""
    status: str                       # one of PATCH_STATUSES
    why: list[str]                    # refused or skipped: why
    series: str                       # the series directory and the patch's file
    patch: str
    hand: NotRequired[str]            # a conversion written by hand: its file
    verify: NotRequired[str]          # classify.convert.verify.status_of
    apply: NotRequired[str]
    build: NotRequired[dict[str, str]]          # .c file -> its build's status
    checkpatch: NotRequired[Checkpatch]
    new_sparse: NotRequired[list[str]]
    problems: NotRequired[list[str]]
    not_built: NotRequired[list[str]]
    testing: NotRequired[str]         # the testing paragraph (classify.convert.testing)


class PatchesData(TypedDict):
    schema: str
    kernel_version: str
    config: str
    semaphores: dict[str, PatchRecord]
