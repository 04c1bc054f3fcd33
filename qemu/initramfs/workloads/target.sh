#!/bin/busybox sh
# drivers/target: the semaphores of the SCSI target core, with the target's own
# fabrics, no hardware: an 8 MiB ramdisk backstore (rd_mcp) exported by
# - tcm_loop, the loopback fabric, as a local SCSI disk: COMPARE AND WRITE on it
#   takes se_device.caw_sem (s2m-caw), also when the compare fails;
# - an iSCSI portal on 127.0.0.1:3260: a login names the target and takes its portal
#   group's np_login_sem for the time of the login (s2m-iscsilogin).
mount -t configfs none /sys/kernel/config 2>/dev/null
t=/sys/kernel/config/target
iqn=iqn.2026-12.org.example.s2m:target
mkdir -p $t/core/rd_mcp_0/ram0 || exit 1
echo rd_pages=2048 > $t/core/rd_mcp_0/ram0/control || exit 1
echo 1 > $t/core/rd_mcp_0/ram0/enable || exit 1
# the nexus (the initiator side) first: a LUN added to it is scanned at once
l=$t/loopback/naa.5001405000000001/tpgt_1
mkdir -p $l || exit 1
echo naa.5001405000000002 > $l/nexus || exit 1
mkdir -p $l/lun/lun_0 || exit 1
ln -s $t/core/rd_mcp_0/ram0 $l/lun/lun_0/s2m || exit 1
i=0
while ! ls /sys/class/scsi_disk 2>/dev/null | grep -q . && [ $i -lt 20 ]; do
	sleep 1
	i=$((i + 1))
done
disk=$(ls /sys/block | grep '^sd' | head -1)
[ -n "$disk" ] || { echo "# workload target: no tcm_loop disk after ${i} s"; exit 1; }
mknod /dev/s2m-$disk b $(sed 's/:/ /' /sys/block/$disk/dev) || exit 1
s2m-caw /dev/s2m-$disk || exit 1
ip link set lo up || exit 1
g=$t/iscsi/$iqn/tpgt_1
mkdir -p $g/np/127.0.0.1:3260 $g/lun/lun_0 || exit 1
ln -s $t/core/rd_mcp_0/ram0 $g/lun/lun_0/s2m || exit 1
echo 1 > $g/attrib/generate_node_acls || exit 1
echo 0 > $g/attrib/authentication || exit 1
echo 1 > $g/enable || exit 1
s2m-iscsilogin 127.0.0.1 3260 $iqn || exit 1
s2m-iscsilogin 127.0.0.1 3260 $iqn || exit 1
echo "# workload target: COMPARE AND WRITE on $disk (tcm_loop), 2 iSCSI logins to $iqn"
