#!/bin/busybox sh
# drivers/video/fbdev/smscufx.c: urb_list.limit_sem: the probe allocates the driver's
# URBs and initialises the semaphore to their number, before it talks to the chip; a
# probe that fails takes every slot back (ufx_free_urb_list()).
# The device is a raw gadget on dummy_hcd (s2m-rawusb, whose event loop waits on
# raw_event_queue.sema) with the UFX6000's ids: it answers the register reads with
# zeros, which the driver may refuse; either way the URBs were counted in and out.
s2m-rawusb -t 15 0424:9d00 || exit 1
echo "# workload smscufx: a raw gadget with the UFX6000's ids connected for 15 s"
