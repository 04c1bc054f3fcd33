// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-usbtmc: generic writes to a USBTMC instrument (drivers/usb/class/usbtmc.c,
 * usbtmc_file_data.limit_write_sem).  USBTMC_IOCTL_WRITE sends its buffer in bulk
 * URBs; usbtmc_generic_write() takes a slot of limit_write_sem (MAX_URBS_IN_FLIGHT)
 * for each, down_timeout() when synchronous, down_trylock() when asynchronous, and
 * the URB's completion gives it back.  The instrument is s2m-rawusb's raw gadget,
 * which sinks what it is sent.  Prints KTAP diagnostic lines; exits 0 when every write
 * was sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/usb/tmc.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define WRITES 8

int main(int argc, char **argv)
{
	static char data[4096];
	struct usbtmc_message msg;
	unsigned int timeout = 2000, sent = 0;
	int fd, i;

	if (argc != 2) {
		fprintf(stderr, "usage: s2m-usbtmc DEVICE\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0 || ioctl(fd, USBTMC_IOCTL_SET_TIMEOUT, &timeout) < 0) {
		fprintf(stderr, "# s2m-usbtmc: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	memset(data, 'S', sizeof(data));
	for (i = 0; i < WRITES; i++) {
		memset(&msg, 0, sizeof(msg));
		msg.transfer_size = sizeof(data);
		msg.flags = i % 2 ? USBTMC_FLAG_ASYNC : 0;
		msg.message = data;
		if (ioctl(fd, USBTMC_IOCTL_WRITE, &msg) < 0) {
			fprintf(stderr, "# s2m-usbtmc: write %d: %s\n", i, strerror(errno));
			break;
		}
		sent += msg.transferred;
	}
	close(fd);
	printf("# s2m-usbtmc: %s: %d of %d writes (every other asynchronous), %u bytes\n",
	       argv[1], i, WRITES, sent);
	return i == WRITES ? 0 : 1;
}
