#!/bin/busybox sh
# drivers/usb/misc/usblcd.c: usb_lcd.limit_sem (count USB_LCD_CONCURRENT_WRITES, 5).
# lcd_write() takes it for each write and the bulk URB's completion gives it back.
# The device is a gadget on dummy_hcd (the software USB host and device controller
# pair) made through configfs: a SourceSink function, which sinks what the host sends
# on its bulk OUT endpoint, with the vendor and product ids usblcd binds to.
mount -t configfs none /sys/kernel/config 2>/dev/null
g=/sys/kernel/config/usb_gadget/s2m
mkdir $g || exit 1
echo 0x10d2 > $g/idVendor
echo 0x0001 > $g/idProduct
mkdir $g/configs/c.1 $g/functions/SourceSink.0 || exit 1
ln -s $g/functions/SourceSink.0 $g/configs/c.1/ || exit 1
ls /sys/class/udc > $g/UDC || exit 1
# the node from the device's major:minor in sysfs (the usbmisc class), whatever
# devtmpfs calls it
i=0
while ! ls /sys/class/usbmisc 2>/dev/null | grep -q lcd && [ $i -lt 20 ]; do
	sleep 1
	i=$((i + 1))
done
lcd=$(ls /sys/class/usbmisc 2>/dev/null | grep lcd | head -1)
[ -n "$lcd" ] || { echo "# workload usblcd: no lcd device after ${i} s"; exit 1; }
mknod /dev/s2m-lcd c $(sed 's/:/ /' /sys/class/usbmisc/$lcd/dev) || exit 1
i=0
while [ $i -lt 16 ]; do
	echo "s2m $i" > /dev/s2m-lcd || exit 1
	i=$((i + 1))
done
echo "" > $g/UDC
echo "# workload usblcd: 16 writes to $lcd (a configfs gadget on dummy_hcd)"
