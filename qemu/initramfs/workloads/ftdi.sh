#!/bin/busybox sh
# drivers/usb/misc/ftdi-elan.c: usb_ftdi.sw_lock: opening the JTAG interface's node
# takes it (down_interruptible), closing gives it back.  The device is a raw gadget on
# dummy_hcd (s2m-rawusb, whose event loop waits on raw_event_queue.sema) with
# ftdi-elan's ids and interface 0's endpoints where the driver looks for them (bulk IN
# 0x81, bulk OUT 0x02).
s2m-rawusb -e 81:02 -t 15 0403:d6ea &
gadget=$!
i=0
while ! ls /sys/class/usbmisc 2>/dev/null | grep -q ftdi && [ $i -lt 20 ]; do
	sleep 1
	i=$((i + 1))
done
jtag=$(ls /sys/class/usbmisc 2>/dev/null | grep ftdi | head -1)
[ -n "$jtag" ] || { echo "# workload ftdi: no ftdi-elan device after ${i} s"; exit 1; }
mknod /dev/s2m-jtag c $(sed 's/:/ /' /sys/class/usbmisc/$jtag/dev) || exit 1
n=0
while [ $n -lt 3 ]; do
	exec 3</dev/s2m-jtag || exit 1
	exec 3<&-
	n=$((n + 1))
done
wait $gadget || exit 1
echo "# workload ftdi: $jtag opened and closed $n times (a raw gadget on dummy_hcd)"
