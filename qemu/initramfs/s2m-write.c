// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-write PATH VALUE: write VALUE to PATH with one write(2), as a selector file in
 * /proc or /sys expects it (echo may split or append a newline the file refuses).
 * Prints one KTAP diagnostic line and exits 0 on success, 1 with errno otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	ssize_t n;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: s2m-write PATH VALUE\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY);
	if (fd < 0) {
		printf("# s2m-write: open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	n = write(fd, argv[2], strlen(argv[2]));
	if (n < 0) {
		printf("# s2m-write: write %s: %s\n", argv[1], strerror(errno));
		close(fd);
		return 1;
	}
	printf("# s2m-write: wrote %zd bytes to %s\n", n, argv[1]);
	return close(fd) ? 1 : 0;
}
