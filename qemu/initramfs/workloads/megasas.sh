#!/bin/busybox sh
# drivers/scsi/megaraid: megasas_instance.ioctl_sem: megasas_mgmt_ioctl_fw() takes a
# slot of it for each firmware command a management tool sends through the driver's
# ioctl node (MEGASAS_IOC_FIRMWARE).  The adapter is QEMU's megasas (an LSI MegaRAID
# SAS 1078); s2m-megasas sends it MR_DCMD_CTRL_GET_INFO three times.
i=0
while ! grep -q megaraid_sas_ioctl /proc/devices && [ $i -lt 20 ]; do
	sleep 1
	i=$((i + 1))
done
s2m-megasas -n 3 || exit 1
echo "# workload megasas: 3 firmware commands through the management ioctl"
