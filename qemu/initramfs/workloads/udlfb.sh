#!/bin/busybox sh
# include/video/udlfb.h: urb_list.limit_sem (count WRITES_IN_FLIGHT): udlfb gives it
# one slot per URB it allocates at probe, and each write to the device (a mode set, a
# framebuffer update) takes one (dlfb_get_urb()) until the URB completes.  The device
# is a raw gadget on dummy_hcd (s2m-rawusb, whose event loop waits on
# raw_event_queue.sema) with DisplayLink's vendor id and a vendor-specific interface
# with bulk OUT endpoint 1, what udlfb binds to; writes to /dev/fb0 make updates.
s2m-rawusb -t 20 17e9:019e &
gadget=$!
i=0
while [ ! -e /sys/class/graphics/fb0/dev ] && [ $i -lt 20 ]; do
	sleep 1
	i=$((i + 1))
done
[ -e /sys/class/graphics/fb0/dev ] || { echo "# workload udlfb: no fb0 after ${i} s"; exit 1; }
mknod /dev/s2m-fb0 c $(sed 's/:/ /' /sys/class/graphics/fb0/dev) || exit 1
dd if=/dev/zero of=/dev/s2m-fb0 bs=4k count=64 2>/dev/null
wait $gadget || exit 1
echo "# workload udlfb: fb0 probed, 256 KiB written to it (a raw gadget on dummy_hcd)"
