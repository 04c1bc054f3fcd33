#!/bin/busybox sh
# net/rxrpc/call_object.c:rxrpc_kernel_call_limiter: the calls the kernel itself makes
# through AF_RXRPC (rxrpc_kernel_begin_call()) take a slot of it.  kAFS makes them: a
# cell whose volume location server is 127.0.0.1, where nothing answers, and a mount
# of one of its volumes, which asks that server where the volume is (VL.GetEntryByName)
# and fails when the call does.
ip link set lo up || exit 1
echo "add s2m.example 127.0.0.1" > /proc/net/afs/cells || exit 1
mkdir -p /afs
if timeout 60 mount -t afs "%s2m.example:root.cell" /afs 2>/tmp/afs.err; then
	echo "# workload afs: mounted, unexpectedly: no server answers on 127.0.0.1"
	umount /afs
	exit 1
fi
grep -q "Connection refused" /tmp/afs.err || { cat /tmp/afs.err; exit 1; }
echo "# workload afs: the mount failed as expected: $(cat /tmp/afs.err)"
