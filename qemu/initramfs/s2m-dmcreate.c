// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-dmcreate NAME: create and remove an (empty) device-mapper device through
 * /dev/mapper/control (DM_DEV_CREATE, DM_DEV_REMOVE), the way dmsetup create does.
 * Creating it allocates the mapped_device (drivers/md/dm.c alloc_dev()), which
 * initialises mapped_device.swap_bios_semaphore with the swap_bios module parameter
 * (64).  Prints KTAP diagnostic lines; exits 0 when both ioctls succeeded.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int dm(int fd, unsigned long cmd, const char *name)
{
	struct dm_ioctl io;

	memset(&io, 0, sizeof(io));
	io.version[0] = DM_VERSION_MAJOR;
	io.version[1] = 0;
	io.version[2] = 0;
	io.data_size = sizeof(io);
	io.data_start = sizeof(io);
	strncpy(io.name, name, sizeof(io.name) - 1);
	if (ioctl(fd, cmd, &io)) {
		printf("# s2m-dmcreate: ioctl %s %s: %s\n",
		       cmd == DM_DEV_CREATE ? "DM_DEV_CREATE" : "DM_DEV_REMOVE", name,
		       strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "s2m";
	int fd = open("/dev/mapper/control", O_RDWR);

	if (fd < 0) {
		printf("# s2m-dmcreate: /dev/mapper/control: %s\n", strerror(errno));
		return 1;
	}
	if (dm(fd, DM_DEV_CREATE, name) || dm(fd, DM_DEV_REMOVE, name))
		return 1;
	printf("# s2m-dmcreate: device-mapper device %s created and removed\n", name);
	return 0;
}
