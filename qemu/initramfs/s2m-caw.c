// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-caw: SCSI COMPARE AND WRITE through SG_IO (drivers/target, se_device.caw_sem).
 * The target core's sbc_compare_and_write() takes the device's caw_sem for the read,
 * compare and write of one block, and compare_and_write_callback() gives it back, also
 * on a miscompare.  On DEVICE (a disk of tcm_loop, the target's loopback fabric, fresh:
 * zeros) this writes a pattern over the zeros of LBA 0, then sends a compare with data
 * the block cannot hold (0xff), which must fail with MISCOMPARE.  Prints KTAP
 * diagnostic lines; exits 0 when both answers are as expected.
 */
#include <fcntl.h>
#include <scsi/sg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define BLOCK 512
#define MISCOMPARE 0x0e		/* sense key */

/* one COMPARE AND WRITE of block 0: 0 good, the sense key of a check condition, -1 */
static int caw(int fd, unsigned char *cmp_then_write)
{
	unsigned char cdb[16] = { 0x89 }, sense[32] = { 0 };
	struct sg_io_hdr io = { 0 };

	cdb[13] = 1;		/* number of logical blocks */
	io.interface_id = 'S';
	io.dxfer_direction = SG_DXFER_TO_DEV;
	io.cmd_len = sizeof(cdb);
	io.cmdp = cdb;
	io.dxferp = cmp_then_write;
	io.dxfer_len = 2 * BLOCK;
	io.sbp = sense;
	io.mx_sb_len = sizeof(sense);
	io.timeout = 10000;
	if (ioctl(fd, SG_IO, &io) < 0) {
		perror("# s2m-caw: SG_IO");
		return -1;
	}
	if (io.status == 0 && io.host_status == 0 && io.driver_status == 0)
		return 0;
	/* fixed format sense: key in byte 2, descriptor format: byte 1 */
	return (sense[0] & 0x7f) >= 0x72 ? sense[1] & 0x0f : sense[2] & 0x0f;
}

int main(int argc, char **argv)
{
	unsigned char buf[2 * BLOCK];
	int fd, good, bad;

	if (argc != 2) {
		fprintf(stderr, "usage: s2m-caw DEVICE\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror("# s2m-caw: open");
		return 1;
	}
	memset(buf, 0, BLOCK);			/* compare: the fresh disk's zeros */
	memset(buf + BLOCK, 0x5a, BLOCK);	/* write: a pattern */
	good = caw(fd, buf);
	memset(buf, 0xff, BLOCK);		/* compare: neither zeros nor the pattern */
	bad = caw(fd, buf);
	close(fd);
	printf("# s2m-caw: %s: over zeros %d (0 expected), miscompare %d (sense key %d expected)\n",
	       argv[1], good, bad, MISCOMPARE);
	return good == 0 && bad == MISCOMPARE ? 0 : 1;
}
