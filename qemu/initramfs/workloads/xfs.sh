#!/bin/busybox sh
# fs/xfs: xlog_in_core.ic_sema (log writes: xlog_write_iclog() down()s it, the I/O
# completion work xlog_ioend_work() up()s it) and xfs_buf.b_sema (buffer locks).
mkdir -p /mnt
mount -t xfs /dev/vda /mnt || exit 1
i=0
while [ $i -lt 40 ]; do
	echo "s2m $i" > /mnt/f$i
	i=$((i + 1))
done
sync
rm /mnt/f*
sync
ls -la /mnt | head -3
umount /mnt || exit 1
echo "# workload xfs: mounted, 40 files written and removed, synced, unmounted"
