#!/bin/busybox sh
# drivers/md/bcache: the semaphores of a cache set and a cached device.  The host
# formatted /dev/vda as a cache and /dev/vdb as a backing device in writeback mode
# (make-bcache -C -B --writeback), so registering both attaches them:
# cache_set.sb_write_mutex (bcache_write_super()), cache_set.uuid_write_mutex
# (bch_uuid_write()), cached_dev.sb_write_mutex (bch_write_bdev_super(): the backing
# device's state goes dirty); writes to /dev/bcache0 are cached, btree nodes are
# written (btree.io_mutex), and writeback copies the dirty data to the backing device
# (cached_dev.in_flight); a garbage collection may move data (moving_in_flight).
for d in /dev/vda /dev/vdb; do
	echo $d > /sys/fs/bcache/register || exit 1
done
i=0
while [ ! -b /dev/bcache0 ] && [ $i -lt 20 ]; do sleep 1; i=$((i + 1)); done
[ -b /dev/bcache0 ] || { echo "# workload bcache: no /dev/bcache0 after ${i} s"; exit 1; }
b=/sys/block/bcache0/bcache
echo "# workload bcache: cache mode $(cat $b/cache_mode), state $(cat $b/state)"
# twice over the same 16 MiB: the second pass leaves the first's buckets to collect
for pass in 1 2; do
	dd if=/dev/zero of=/dev/bcache0 bs=64k count=256 conv=fsync 2>/dev/null || exit 1
done
echo 0 > $b/writeback_percent
i=0
while [ "$(cat $b/dirty_data)" != "0.0k" ] && [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done
echo "# workload bcache: dirty data $(cat $b/dirty_data) after ${i} s of writeback"
for set in /sys/fs/bcache/*-*; do
	echo 1 > $set/internal/trigger_gc
done
sleep 2
echo 1 > $b/stop
for set in /sys/fs/bcache/*-*; do
	echo 1 > $set/stop
done
sleep 1
echo "# workload bcache: 2 x 16 MiB written through /dev/bcache0, written back, collected, stopped"
