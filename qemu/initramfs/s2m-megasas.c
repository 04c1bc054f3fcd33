// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-megasas [-H HOST] [-n N]: N MFI firmware commands (a DCMD MR_DCMD_CTRL_GET_INFO)
 * through the megaraid_sas management ioctl MEGASAS_IOC_FIRMWARE (drivers/scsi/megaraid,
 * megasas_instance.ioctl_sem): megasas_mgmt_ioctl_fw() takes the adapter's ioctl_sem
 * around megasas_mgmt_fw_ioctl() and gives it back once the firmware (QEMU's
 * megasas, an LSI MegaRAID SAS 1078) has answered.  The node of the "megaraid_sas_ioctl" character device
 * (dynamic major, from /proc/devices) is made afresh.  HOST is the SCSI host number
 * the driver looks the adapter up by (default: the first host whose proc_name is
 * megaraid_sas, else 0).  Prints KTAP diagnostic lines; exits 0 when every command
 * came back with MFI_STAT_OK.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#define NODE "/dev/megaraid_sas_ioctl_node"
#define MFI_CMD_DCMD 0x05
#define MFI_FRAME_DIR_READ 0x0010
#define MR_DCMD_CTRL_GET_INFO 0x01010000
#define MAX_IOCTL_SGE 16
#define CTRL_INFO_SIZE 2384	/* sizeof(struct megasas_ctrl_info); QEMU wants >= 2048 */
#define PRODUCT_NAME_OFF 1344	/* offsetof(struct megasas_ctrl_info, product_name) */

/* struct megasas_dcmd_frame, drivers/scsi/megaraid/megaraid_sas.h (little endian) */
struct dcmd_frame {
	uint8_t cmd, reserved_0, cmd_status, reserved_1[4], sge_count;	/* 00h */
	uint32_t context, pad_0;					/* 08h */
	uint16_t flags, timeout;					/* 10h */
	uint32_t data_xfer_len, opcode;					/* 14h */
	uint8_t mbox[12];						/* 1Ch */
	uint8_t sgl[16];	/* 28h: union megasas_sgl, filled in by the driver */
} __attribute__((packed));

/* struct megasas_iocpacket, megaraid_sas.h (frame.hdr replaced by the DCMD frame) */
struct iocpacket {
	uint16_t host_no, pad1;
	uint32_t sgl_off, sge_count, sense_off, sense_len;
	union {
		uint8_t raw[128];	/* two 64-byte MFI frames */
		struct dcmd_frame dcmd;
	} frame;
	struct iovec sgl[MAX_IOCTL_SGE];
} __attribute__((packed));

_Static_assert(sizeof(struct dcmd_frame) == 0x38, "megasas_dcmd_frame");
_Static_assert(offsetof(struct iocpacket, sgl) == 148, "megasas_iocpacket");
_Static_assert(sizeof(struct iocpacket) == 148 + 16 * sizeof(struct iovec), "iocpacket");
#define MEGASAS_IOC_FIRMWARE _IOWR('M', 1, struct iocpacket)

/* a decimal number >= min, else -1 */
static int number(const char *s, int min)
{
	char *end;
	long n = strtol(s, &end, 10);

	return *s && !*end && n >= min && n < 65536 ? n : -1;
}

/* the lowest SCSI host number of a megaraid_sas adapter, else 0 */
static int find_host(void)
{
	char path[64], name[64] = "";
	int n;
	FILE *f;

	for (n = 0; n < 64; n++) {
		snprintf(path, sizeof(path), "/sys/class/scsi_host/host%d/proc_name", n);
		f = fopen(path, "r");
		if (f && fscanf(f, "%63s", name) == 1 && !strcmp(name, "megaraid_sas"))
			break;
		if (f)
			fclose(f);
	}
	if (n == 64)
		return 0;
	fclose(f);
	return n;
}

static int open_node(void)
{
	char line[128], name[64];
	unsigned int major = 0, m;
	int fd;
	FILE *f = fopen("/proc/devices", "r");

	while (f && fgets(line, sizeof(line), f) && strncmp(line, "Block", 5))
		if (sscanf(line, "%u %63s", &m, name) == 2 && !strcmp(name, "megaraid_sas_ioctl"))
			major = m;
	if (f)
		fclose(f);
	if (!major) {
		printf("# s2m-megasas: no megaraid_sas_ioctl in /proc/devices\n");
		return -1;
	}
	unlink(NODE);		/* made afresh: an old node may have another major */
	if (mknod(NODE, S_IFCHR | 0600, makedev(major, 0))) {
		printf("# s2m-megasas: mknod %s: %s\n", NODE, strerror(errno));
		return -1;
	}
	fd = open(NODE, O_RDWR);
	if (fd < 0)
		printf("# s2m-megasas: open %s: %s\n", NODE, strerror(errno));
	return fd;
}

int main(int argc, char **argv)
{
	static char info[CTRL_INFO_SIZE];
	int host = -1, count = 3, fd, i, c, ok = 0;
	struct iocpacket ioc;
	const char *name;

	while ((c = getopt(argc, argv, "H:n:")) != -1) {
		if (c == 'H')
			host = number(optarg, 0);
		else if (c == 'n')
			count = number(optarg, 1);
		if (c == '?' || (c == 'H' && host < 0) || count < 0)
			break;
	}
	if (c != -1 || optind != argc) {
		fprintf(stderr, "usage: s2m-megasas [-H HOST] [-n N]\n");
		return 2;
	}
	if (host < 0)
		host = find_host();
	fd = open_node();
	if (fd < 0)
		return 1;
	for (i = 1; i <= count; i++) {
		memset(&ioc, 0, sizeof(ioc));
		memset(info, 0, sizeof(info));
		ioc.host_no = host;		/* SCSI host of the adapter */
		ioc.sgl_off = offsetof(struct dcmd_frame, sgl); /* the driver writes its SGE there */
		ioc.sge_count = 1;		/* one user buffer, bounced by the driver */
		ioc.sgl[0].iov_base = info;
		ioc.sgl[0].iov_len = sizeof(info);
		ioc.frame.dcmd.cmd = MFI_CMD_DCMD;
		ioc.frame.dcmd.cmd_status = 0xff; /* MFI_STAT_INVALID_STATUS, as the driver */
		ioc.frame.dcmd.sge_count = 1;
		ioc.frame.dcmd.flags = htole16(MFI_FRAME_DIR_READ); /* SGL64 is the driver's */
		ioc.frame.dcmd.data_xfer_len = htole32(sizeof(info));
		ioc.frame.dcmd.opcode = htole32(MR_DCMD_CTRL_GET_INFO);
		ioc.frame.dcmd.mbox[0] = 1;	/* as megasas_get_ctrl_info() */
		if (ioctl(fd, MEGASAS_IOC_FIRMWARE, &ioc)) {
			printf("# s2m-megasas: host %d: MEGASAS_IOC_FIRMWARE: %s\n", host,
			       strerror(errno));
			break;
		}
		name = info + PRODUCT_NAME_OFF;	/* char product_name[80] */
		info[PRODUCT_NAME_OFF + 79] = 0;
		for (c = 0; name[c] >= ' ' && name[c] < 127; c++)
			;
		printf("# s2m-megasas: host %d: command %d: cmd_status 0x%02x, product \"%s\"\n",
		       host, i, ioc.frame.dcmd.cmd_status, c && !name[c] ? name : "?");
		if (ioc.frame.dcmd.cmd_status)	/* MFI_STAT_OK is 0 */
			break;
		ok++;
	}
	close(fd);
	printf("# s2m-megasas: %d of %d MR_DCMD_CTRL_GET_INFO commands succeeded\n", ok, count);
	return ok == count ? 0 : 1;
}
