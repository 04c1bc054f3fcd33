"""Typed records between the stages, defined once: the bottom layer of the project.

Every record one stage hands another is a dataclass of this package, and a JSON file is
only its serialisation: `to_json()` writes it, `from_json()` reads it back and checks it,
and a file that is not the record asked for is refused in one line (`RecordError`).
audit.json and patches.json are the exception: their shapes are TypedDicts (audit.py
says why), checked by classify.inputs.

    base.py     Record (to_json / from_json, the schema version), RecordError
    audit.py    audit.json's shape (AuditData, AuditSem, AllocatedFamily and their
                parts), as TypedDicts: its readers take it as JSON objects
    patches.py  patches.json's shape (PatchesData, PatchRecord), as TypedDicts
    boot.py     a boot's evidence, as qemu.parse reads it from the console: Lock,
                Report, LockClass (a "# lockdep-class:" line) and Boot
    runtime.py  the runtime record (runtime.json): RuntimeRecord, its BootRecord per
                boot, SemRuntime per semaphore with a BootEntry per boot, VariantRecord
    selftest.py the kernel's own locking tests of a boot (SelftestRecord) and the
                pristine control kernel (ControlRecord)

This package imports nothing else of the project (tests/test_structure.py): both the
classifier and the boot side read these types.
"""
