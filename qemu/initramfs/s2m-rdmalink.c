// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-rdmalink NAME TYPE NETDEV: what iproute2's `rdma link add NAME type TYPE netdev
 * NETDEV` does, one RDMA_NLDEV_CMD_NEWLINK request on a NETLINK_RDMA socket
 * (drivers/infiniband/core/nldev.c nldev_newlink(), which needs the three string
 * attributes and CAP_NET_ADMIN).  With TYPE rxe it makes a soft-RoCE (rdma_rxe)
 * device on NETDEV; its port gets an ib_umad issm device, whose open and release take
 * and give back ib_umad_port.sm_sem (drivers/infiniband/core/user_mad.c).
 * Prints KTAP diagnostic lines; exits 0 when the kernel acknowledged the link.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <poll.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* append one NUL-terminated string attribute (NLA_NUL_STRING in nldev_policy) */
static void put_str(struct nlmsghdr *nlh, unsigned short type, const char *s)
{
	struct nlattr *nla = (struct nlattr *)((char *)nlh + NLMSG_ALIGN(nlh->nlmsg_len));
	size_t len = strlen(s) + 1;

	nla->nla_type = type;
	nla->nla_len = NLA_HDRLEN + len;
	memcpy((char *)nla + NLA_HDRLEN, s, len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(nla->nla_len);
}

int main(int argc, char **argv)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct pollfd p;
	struct nlmsgerr *e;
	int fd, i;
	ssize_t n;

	if (argc != 4) {
		fprintf(stderr, "usage: s2m-rdmalink NAME TYPE NETDEV\n");
		return 2;
	}
	/* nldev copies at most IB_DEVICE_NAME_MAX (64) and IFNAMSIZ (16) bytes */
	for (i = 1; i < 4; i++) {
		if (!*argv[i] || strlen(argv[i]) >= (i == 1 ? 64 : 16)) {
			fprintf(stderr, "s2m-rdmalink: bad name \"%s\"\n", argv[i]);
			return 2;
		}
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0) {
		printf("# s2m-rdmalink: socket(NETLINK_RDMA): %s\n", strerror(errno));
		return 1;
	}
	memset(buf, 0, sizeof(buf));
	nlh->nlmsg_len = NLMSG_HDRLEN;
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_NEWLINK);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = 1;
	put_str(nlh, RDMA_NLDEV_ATTR_DEV_NAME, argv[1]);
	put_str(nlh, RDMA_NLDEV_ATTR_LINK_TYPE, argv[2]);
	put_str(nlh, RDMA_NLDEV_ATTR_NDEV_NAME, argv[3]);
	if (sendto(fd, buf, nlh->nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0) {
		printf("# s2m-rdmalink: send: %s\n", strerror(errno));
		return 1;
	}
	/* the ack: an NLMSG_ERROR for our sequence number, error 0 on success */
	for (;;) {
		p = (struct pollfd){ fd, POLLIN, 0 };
		if (poll(&p, 1, 10000) <= 0) {
			printf("# s2m-rdmalink: no ack in 10 s\n");
			return 1;
		}
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			printf("# s2m-rdmalink: recv: %s\n", strerror(errno));
			return 1;
		}
		for (nlh = (struct nlmsghdr *)buf; NLMSG_OK(nlh, n); nlh = NLMSG_NEXT(nlh, n)) {
			if (nlh->nlmsg_type != NLMSG_ERROR || nlh->nlmsg_seq != 1)
				continue;
			e = NLMSG_DATA(nlh);
			if (e->error) {
				printf("# s2m-rdmalink: rdma link add %s type %s netdev %s: error %d (%s)\n",
				       argv[1], argv[2], argv[3], -e->error, strerror(-e->error));
				return 1;
			}
			printf("# s2m-rdmalink: rdma link add %s type %s netdev %s: done\n",
			       argv[1], argv[2], argv[3]);
			return 0;
		}
	}
}
