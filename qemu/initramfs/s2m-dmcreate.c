// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-dmcreate NAME [SECTORS TARGET PARAMS [SECONDS]]: create and remove a
 * device-mapper device through /dev/mapper/control, the way dmsetup does.
 *
 * Without a table: DM_DEV_CREATE, DM_DEV_REMOVE.  Creating it allocates the
 * mapped_device (drivers/md/dm.c alloc_dev()), which initialises
 * mapped_device.swap_bios_semaphore with the swap_bios module parameter.
 *
 * With a table (one target of SECTORS sectors from 0, e.g. "mirror" and
 * "core 1 1024 2 /dev/ram0 0 /dev/ram1 0"): DM_TABLE_LOAD, DM_DEV_SUSPEND without
 * DM_SUSPEND_FLAG (a resume: the table goes live), SECONDS of sleep (default 2:
 * a mirror copies its regions meanwhile), then DM_DEV_REMOVE.
 *
 * Prints KTAP diagnostic lines; exits 0 when every ioctl succeeded.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const char *cmd_name(unsigned long cmd)
{
	switch (cmd) {
	case DM_DEV_CREATE: return "DM_DEV_CREATE";
	case DM_DEV_REMOVE: return "DM_DEV_REMOVE";
	case DM_TABLE_LOAD: return "DM_TABLE_LOAD";
	case DM_DEV_SUSPEND: return "DM_DEV_SUSPEND";
	}
	return "?";
}

/* One ioctl; for DM_TABLE_LOAD one target spec and its parameters follow. */
static int dm(int fd, unsigned long cmd, const char *name, unsigned long long sectors,
	      const char *target, const char *params)
{
	char buf[16384] __attribute__((aligned(8)));
	struct dm_ioctl *io = (struct dm_ioctl *)buf;
	struct dm_target_spec *spec = (struct dm_target_spec *)(io + 1);

	memset(buf, 0, sizeof(buf));
	io->version[0] = DM_VERSION_MAJOR;
	io->data_size = sizeof(buf);
	io->data_start = sizeof(*io);
	strncpy(io->name, name, sizeof(io->name) - 1);
	if (cmd == DM_TABLE_LOAD) {
		size_t len = strlen(params) + 1;

		if (sizeof(*io) + sizeof(*spec) + len > sizeof(buf)) {
			printf("# s2m-dmcreate: table parameters too long\n");
			return -1;
		}
		io->target_count = 1;
		spec->sector_start = 0;
		spec->length = sectors;
		strncpy(spec->target_type, target, sizeof(spec->target_type) - 1);
		memcpy(spec + 1, params, len);
		/* the next spec would start here, 8-byte aligned */
		spec->next = (sizeof(*spec) + len + 7) & ~7UL;
	}
	if (ioctl(fd, cmd, io)) {
		printf("# s2m-dmcreate: ioctl %s %s: %s\n", cmd_name(cmd), name,
		       strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "s2m";
	int fd = open("/dev/mapper/control", O_RDWR);
	int err;

	if (fd < 0) {
		printf("# s2m-dmcreate: /dev/mapper/control: %s\n", strerror(errno));
		return 1;
	}
	if (argc != 2 && argc != 5 && argc != 6) {
		printf("# s2m-dmcreate: usage: s2m-dmcreate NAME [SECTORS TARGET PARAMS [SECONDS]]\n");
		return 1;
	}
	if (dm(fd, DM_DEV_CREATE, name, 0, NULL, NULL))
		return 1;
	if (argc == 2) {
		if (dm(fd, DM_DEV_REMOVE, name, 0, NULL, NULL))
			return 1;
		printf("# s2m-dmcreate: device-mapper device %s created and removed\n", name);
		return 0;
	}
	err = dm(fd, DM_TABLE_LOAD, name, strtoull(argv[2], NULL, 0), argv[3], argv[4]) ||
	      dm(fd, DM_DEV_SUSPEND, name, 0, NULL, NULL);
	if (!err)
		sleep(argc == 6 ? atoi(argv[5]) : 2);
	/* removed even when the table failed: nothing is left behind */
	if (dm(fd, DM_DEV_REMOVE, name, 0, NULL, NULL) || err)
		return 1;
	printf("# s2m-dmcreate: device-mapper device %s with a %s table created, resumed "
	       "and removed\n", name, argv[3]);
	return 0;
}
