// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-ppnegot: IEEE 1284 negotiations on a parallel port through ppdev
 * (drivers/parport, ieee1284_info.irq).  parport_negotiate() waits for the peripheral's
 * answer in parport_wait_peripheral(): after a fast poll, parport_wait_event() sleeps on
 * the port's ieee1284.irq semaphore until the port's interrupt or a 10 ms timer gives it
 * back.  QEMU's parallel port has nothing attached: each negotiation to nibble mode
 * times out there (the peripheral is "not IEEE 1284 compliant") and the port goes back
 * to compatibility mode.  Prints KTAP diagnostic lines; exits 0 when the port was
 * claimed and negotiated with, whatever the peripheral answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/parport.h>
#include <linux/ppdev.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define TRIES 3

int main(int argc, char **argv)
{
	int fd, i, mode, refused = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: s2m-ppnegot DEVICE\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0 || ioctl(fd, PPCLAIM) < 0) {
		fprintf(stderr, "# s2m-ppnegot: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (i = 0; i < TRIES; i++) {
		mode = IEEE1284_MODE_NIBBLE;
		if (ioctl(fd, PPNEGOT, &mode) < 0)
			refused++;	/* EIO: no IEEE 1284 peripheral, as expected */
		mode = IEEE1284_MODE_COMPAT;
		ioctl(fd, PPNEGOT, &mode);
	}
	ioctl(fd, PPRELEASE);
	close(fd);
	printf("# s2m-ppnegot: %s: %d negotiations to nibble mode, %d refused by the peripheral\n",
	       argv[1], TRIES, refused);
	return 0;
}
