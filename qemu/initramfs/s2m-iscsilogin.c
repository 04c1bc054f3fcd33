// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-iscsilogin: the first iSCSI login request of a session, on loopback
 * (drivers/target/iscsi, iscsi_portal_group.np_login_sem).  When a login names a
 * target, iscsi_target_locate_portal() takes the portal group's np_login_sem
 * (iscsit_access_np()) for the time of the login, and the end of the login gives it
 * back.  This sends one Login Request (security stage, AuthMethod=None, asking to go
 * on to the operational stage), reads the Login Response and closes the connection.
 * Prints KTAP diagnostic lines; exits 0 when the target answered with success.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BHS 48			/* basic header segment */
#define OP_LOGIN_REQ 0x03
#define OP_LOGIN_RSP 0x23
#define IMMEDIATE 0x40
#define TRANSIT 0x80		/* T: go on to the next stage, NSG */
#define NSG_OPERATIONAL 0x01

static int read_all(int fd, unsigned char *buf, size_t len)
{
	while (len) {
		ssize_t n = read(fd, buf, len);

		if (n <= 0)
			return -1;
		buf += n;
		len -= n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char pdu[BHS + 512] = { 0 }, rsp[BHS];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd, len;

	if (argc != 4) {
		fprintf(stderr, "usage: s2m-iscsilogin ADDRESS PORT TARGET-IQN\n");
		return 2;
	}
	sin.sin_port = htons(atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1) {
		fprintf(stderr, "# s2m-iscsilogin: not an IPv4 address: %s\n", argv[1]);
		return 2;
	}
	/* key=value pairs, each ended by a NUL, padded to 4 bytes */
	len = 1 + snprintf((char *)pdu + BHS, 400,
			   "InitiatorName=iqn.2026-12.org.example.s2m:initiator%c"
			   "TargetName=%s%cSessionType=Normal%cAuthMethod=None",
			   0, argv[3], 0, 0);
	pdu[0] = IMMEDIATE | OP_LOGIN_REQ;
	pdu[1] = TRANSIT | NSG_OPERATIONAL;	/* CSG 0: security negotiation */
	pdu[5] = len >> 16;
	pdu[6] = len >> 8;
	pdu[7] = len;
	pdu[8] = 0x80;				/* ISID: random format, */
	pdu[13] = 0x01;				/* qualifier 1 */
	pdu[19] = 0x01;				/* initiator task tag */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		perror("# s2m-iscsilogin: connect");
		return 1;
	}
	if (write(fd, pdu, BHS + ((len + 3) & ~3)) < 0 || read_all(fd, rsp, BHS) < 0) {
		perror("# s2m-iscsilogin: login");
		return 1;
	}
	close(fd);
	printf("# s2m-iscsilogin: %s:%s %s: opcode 0x%02x, status class %d detail %d\n",
	       argv[1], argv[2], argv[3], rsp[0] & 0x3f, rsp[36], rsp[37]);
	return (rsp[0] & 0x3f) == OP_LOGIN_RSP && rsp[36] == 0 ? 0 : 1;
}
