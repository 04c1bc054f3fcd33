"""Lock name -> semaphore id: the series names a mutex_debug's lockdep class
`#sem "@" __FILE__ ":" __LINE__` (include/linux/semaphore.h, sema_init)."""

import pytest

from qemu.parse import _lock, sem_id


@pytest.mark.parametrize("name,expected", [
    ("&lo->lo_ctl_mutex@drivers/block/loop.c:1234", "drivers/block/loop.c:lo_ctl_mutex"),
    ("&dev->sem@drivers/base/core.c:12", "drivers/base/core.c:sem"),
    ("sem@lib/test_mutex_rules.c:40", "lib/test_mutex_rules.c:sem"),
    ("&(&s->inner)->sem@fs/x.h:7", "fs/x.h:sem"),
    ("&priv->lock", None),                      # an ordinary mutex: no file in the name
    ("semaphore->lock", None),
    ("(console_sem).lock", None),
])
def test_sem_id(name, expected):
    assert sem_id(name) == expected


def test_version_and_subclass_suffixes_are_stripped():
    lk = _lock("&lo->sem@drivers/block/loop.c:9#2/1", "held", "+.+.", "")
    assert lk.lock_class == "&lo->sem@drivers/block/loop.c:9"
    assert lk.sem_id == "drivers/block/loop.c:sem"
