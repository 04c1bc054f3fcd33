#!/bin/busybox sh
# include/linux/netpoll.h:netpoll_info.dev_lock: netconsole (netconsole= on the kernel
# command line) sets up netpoll on eth0; closing and opening the device takes and
# releases dev_lock (netpoll_poll_disable/enable), printk goes out through netpoll.
ip link set eth0 down || exit 1
ip link set eth0 up || exit 1
i=0
while [ $i -lt 20 ]; do
	echo "# workload netconsole: line $i" > /dev/kmsg
	i=$((i + 1))
done
sleep 1
echo "# workload netconsole: eth0 closed and opened, 20 lines through netconsole"
