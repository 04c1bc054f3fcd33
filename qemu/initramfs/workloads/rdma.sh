#!/bin/busybox sh
# drivers/infiniband: soft-RoCE (rdma_rxe) on the virtio NIC, made as iproute2's
# `rdma link add` does (s2m-rdmalink, netlink):
# - its port's issm device: opening it takes ib_umad_port.sm_sem (the port becomes
#   "SM capable"), closing gives it back; a second, non-blocking open while the first
#   is held must fail (down_trylock);
# - an iSER portal of an iSCSI target on its address: the portal's login thread waits
#   for connections in isert_accept_np(), on isert_np.sem.
ip link set eth0 up || exit 1
ip addr add 10.0.2.15/24 dev eth0 || exit 1
s2m-rdmalink rxe0 rxe eth0 || exit 1
i=0
while [ ! -e /sys/class/infiniband_mad/issm0/dev ] && [ $i -lt 20 ]; do
	sleep 1
	i=$((i + 1))
done
[ -e /sys/class/infiniband_mad/issm0/dev ] || { echo "# workload rdma: no issm0 after ${i} s"; exit 1; }
mknod /dev/s2m-issm0 c $(sed 's/:/ /' /sys/class/infiniband_mad/issm0/dev) || exit 1
n=0
while [ $n -lt 3 ]; do
	exec 3</dev/s2m-issm0 || exit 1
	exec 3<&-
	n=$((n + 1))
done
mount -t configfs none /sys/kernel/config 2>/dev/null
t=/sys/kernel/config/target
g=$t/iscsi/iqn.2026-12.org.example.s2m:iser/tpgt_1
mkdir -p $g/np/10.0.2.15:3260 || exit 1
echo 1 > $g/np/10.0.2.15:3260/iser || exit 1
echo 1 > $g/enable || exit 1
sleep 2
echo "# workload rdma: rxe0 on eth0, its issm device opened $n times, an iSER portal on 10.0.2.15:3260"
