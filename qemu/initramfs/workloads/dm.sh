#!/bin/busybox sh
# drivers/md/dm-core.h:mapped_device.swap_bios_semaphore: creating a device-mapper
# device allocates its mapped_device, whose sema_init() takes the count from the
# swap_bios parameter (64 by default).  (Its down()/up() are only reached by swap I/O
# through a target with limit_swap_bios, dm-crypt: not run here.)
s2m-dmcreate s2m
