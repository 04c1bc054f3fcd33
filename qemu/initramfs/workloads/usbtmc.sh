#!/bin/busybox sh
# drivers/usb/class/usbtmc.c: usbtmc_file_data.limit_write_sem (count
# MAX_URBS_IN_FLIGHT, 16): generic writes (USBTMC_IOCTL_WRITE, s2m-usbtmc) take a slot
# per bulk URB, the URB's completion gives it back.  The instrument is a raw gadget on
# dummy_hcd (s2m-rawusb, whose event loop waits on raw_event_queue.sema): an interface
# of the USBTMC class (fe:03:01), which usbtmc binds to whatever the ids.
s2m-rawusb -c fe:03:01 -t 20 0957:1755 &
gadget=$!
i=0
while ! ls /sys/class/usbmisc 2>/dev/null | grep -q usbtmc && [ $i -lt 20 ]; do
	sleep 1
	i=$((i + 1))
done
tmc=$(ls /sys/class/usbmisc 2>/dev/null | grep usbtmc | head -1)
[ -n "$tmc" ] || { echo "# workload usbtmc: no usbtmc device after ${i} s"; exit 1; }
mknod /dev/s2m-tmc c $(sed 's/:/ /' /sys/class/usbmisc/$tmc/dev) || exit 1
s2m-usbtmc /dev/s2m-tmc || exit 1
wait $gadget || exit 1
echo "# workload usbtmc: generic writes to $tmc (a raw gadget on dummy_hcd)"
