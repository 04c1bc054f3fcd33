#!/bin/busybox sh
# drivers/md/bcache/bcache.h: cache_set.moving_in_flight (count 64): moving garbage
# collection copies what is left in half-used buckets, one slot per key in flight
# (read_moving()).  As runtime-bcache, a cache and a backing device made by make-bcache
# on the host; every write cached (sequential_cutoff 0), 16 MiB, then every other
# 32 KiB of it again: the first pass's buckets are left half used.  Then a collection
# with copy_gc_enabled.  Nothing is stopped: the boot's reboot stops the cache set
# (bcache_reboot()), see the scenario for what lockdep says then.
for d in /dev/vda /dev/vdb; do
	echo $d > /sys/fs/bcache/register || exit 1
done
i=0
while [ ! -b /dev/bcache0 ] && [ $i -lt 20 ]; do sleep 1; i=$((i + 1)); done
[ -b /dev/bcache0 ] || { echo "# workload bcachegc: no /dev/bcache0 after ${i} s"; exit 1; }
b=/sys/block/bcache0/bcache
echo 0 > $b/sequential_cutoff || exit 1
dd if=/dev/zero of=/dev/bcache0 bs=64k count=256 conv=fsync 2>/dev/null || exit 1
i=0
while [ $i -lt 512 ]; do
	dd if=/dev/zero of=/dev/bcache0 bs=32k seek=$i count=1 2>/dev/null || exit 1
	i=$((i + 2))
done
sync
for set in /sys/fs/bcache/*-*; do
	echo 1 > $set/internal/copy_gc_enabled || exit 1
	echo 1 > $set/internal/trigger_gc || exit 1
done
sleep 3
echo "# workload bcachegc: 16 MiB and every other 32 KiB of it again written through /dev/bcache0, collected with copy_gc_enabled"
