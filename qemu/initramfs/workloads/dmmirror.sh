#!/bin/busybox sh
# drivers/md/dm-region-hash.c: dm_region_hash.recovery_count.  A mirror table going
# live copies its regions from the first leg to the second: the kmirrord work takes
# the semaphore with down_trylock() in dm_rh_recovery_prepare() for each region it
# recovers, and the kcopyd completion of that region gives it back.  Two RAM disks
# (brd) are the legs; the in-memory "core" log, 1024-sector regions: 8 to copy.
for d in /dev/ram0 /dev/ram1; do
	[ -b $d ] || { echo "# workload dmmirror: no $d (CONFIG_BLK_DEV_RAM)"; exit 1; }
done
s2m-dmcreate s2m-mirror 8192 mirror "core 1 1024 2 /dev/ram0 0 /dev/ram1 0" 3 || exit 1
echo "# workload dmmirror: a two-leg mirror went live, recovered its regions, was removed"
