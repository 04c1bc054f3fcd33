#!/bin/busybox sh
# include/linux/hid.h:hid_device.driver_input_lock: the QEMU usb-kbd is probed
# (hid_device_probe() takes it, hid_device_io_start() releases it); the harness
# presses keys through QMP when it reads the line below, and every input report is
# delivered by hid_input_report() under down_trylock() from the URB completion.
# the keyboard's USB enumeration may still run when this starts (a slow TCG
# boot): wait for its event device rather than fail the step
n=0
while [ $n -lt 30 ] && ! ls /dev/input/event* > /dev/null 2>&1; do
	sleep 1
	n=$((n + 1))
done
ls /sys/bus/hid/devices/ 2>/dev/null | sed 's/^/# hid device: /'
ls /dev/input/ 2>/dev/null | sed 's/^/# input: /'
pids=""
for e in /dev/input/event*; do
	[ -e "$e" ] || continue
	cat "$e" > /dev/null 2>&1 &
	pids="$pids $!"
done
sleep 1
echo "s2m-init: keys"
sleep 8
kill $pids 2>/dev/null
[ -n "$pids" ] || exit 1
echo "# workload hid: keys pressed while the event devices were open"
