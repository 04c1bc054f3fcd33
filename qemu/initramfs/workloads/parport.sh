#!/bin/busybox sh
# include/linux/parport.h: ieee1284_info.irq: an IEEE 1284 negotiation waits for the
# peripheral on it (parport_wait_event()); the port's interrupt or a timer gives it
# back.  QEMU's ISA parallel port (at 0x378, nothing attached), through ppdev.
i=0
while [ ! -e /sys/class/ppdev/parport0/dev ] && [ $i -lt 10 ]; do sleep 1; i=$((i + 1)); done
[ -e /sys/class/ppdev/parport0/dev ] || { echo "# workload parport: no parport0 after ${i} s"; exit 1; }
mknod /dev/s2m-parport0 c $(sed 's/:/ /' /sys/class/ppdev/parport0/dev) || exit 1
s2m-ppnegot /dev/s2m-parport0 || exit 1
echo "# workload parport: parport0 claimed, negotiated with and released"
