#!/bin/busybox sh
# fs/btrfs: btrfs_fs_info.uuid_tree_rescan_sem: mount -o rescan_uuid_tree makes the
# mounting task down() it and the btrfs-uuid kthread up() it when the rescan is done.
mkdir -p /mnt
mount -t btrfs -o rescan_uuid_tree /dev/vda /mnt || exit 1
sleep 2
echo s2m > /mnt/f
sync
umount /mnt || exit 1
echo "# workload btrfs: mounted with rescan_uuid_tree, written, unmounted"
