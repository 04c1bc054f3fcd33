// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-rxrpc: one AF_RXRPC call on loopback (net/rxrpc, rxrpc_call_limiter).
 * A server socket listens on 127.0.0.1:7101 for service 1234 and charges its accept
 * pool; a client socket makes one call to it (rxrpc_new_client_call() takes a slot of
 * rxrpc_call_limiter, the release of the call gives it back), the server answers.
 * Needs `lo` up.  Prints KTAP diagnostic lines; exits 0 when the reply arrived.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/rxrpc.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SERVICE 1234
#define PORT 7101	/* not 7001: kAFS's cache manager listens there */

static void addr(struct sockaddr_rxrpc *srx, int port)
{
	memset(srx, 0, sizeof(*srx));
	srx->srx_family = AF_RXRPC;
	srx->srx_service = SERVICE;
	srx->transport_type = SOCK_DGRAM;
	srx->transport_len = sizeof(srx->transport.sin);
	srx->transport.sin.sin_family = AF_INET;
	srx->transport.sin.sin_port = htons(port);
	srx->transport.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/* sendmsg with one RXRPC_USER_CALL_ID (and optionally one more control message) */
static ssize_t send_call(int fd, struct sockaddr_rxrpc *to, unsigned long id, int extra,
			 const char *data)
{
	char control[2 * CMSG_SPACE(sizeof(unsigned long))];
	struct iovec iov = { (void *)data, data ? strlen(data) : 0 };
	struct msghdr msg = { 0 };
	struct cmsghdr *cmsg;

	memset(control, 0, sizeof(control));
	msg.msg_name = to;
	msg.msg_namelen = to ? sizeof(*to) : 0;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = CMSG_SPACE(sizeof(id)) + (extra ? CMSG_SPACE(0) : 0);
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_RXRPC;
	cmsg->cmsg_type = RXRPC_USER_CALL_ID;
	cmsg->cmsg_len = CMSG_LEN(sizeof(id));
	memcpy(CMSG_DATA(cmsg), &id, sizeof(id));
	if (extra) {
		cmsg = CMSG_NXTHDR(&msg, cmsg);
		cmsg->cmsg_level = SOL_RXRPC;
		cmsg->cmsg_type = extra;
		cmsg->cmsg_len = CMSG_LEN(0);
	}
	return sendmsg(fd, &msg, 0);
}

static ssize_t receive(int fd, const char *who)
{
	char buf[256], control[256];
	struct iovec iov = { buf, sizeof(buf) - 1 };
	struct msghdr msg = { 0 };
	struct pollfd p = { fd, POLLIN, 0 };
	ssize_t n;

	if (poll(&p, 1, 5000) <= 0) {
		printf("# s2m-rxrpc: %s: nothing received in 5 s\n", who);
		return -1;
	}
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	n = recvmsg(fd, &msg, 0);
	if (n < 0)
		printf("# s2m-rxrpc: %s: recvmsg: %s\n", who, strerror(errno));
	else
		printf("# s2m-rxrpc: %s: received %zd bytes\n", who, n);
	return n;
}

int main(void)
{
	struct sockaddr_rxrpc srx;
	int server, client, ok = 0;

	server = socket(AF_RXRPC, SOCK_DGRAM, PF_INET);
	client = socket(AF_RXRPC, SOCK_DGRAM, PF_INET);
	if (server < 0 || client < 0) {
		printf("# s2m-rxrpc: socket(AF_RXRPC): %s\n", strerror(errno));
		return 1;
	}
	addr(&srx, PORT);
	if (bind(server, (struct sockaddr *)&srx, sizeof(srx)) || listen(server, 10)) {
		printf("# s2m-rxrpc: bind/listen: %s\n", strerror(errno));
		return 1;
	}
	if (send_call(server, NULL, 100, RXRPC_CHARGE_ACCEPT, NULL) < 0)
		printf("# s2m-rxrpc: charge accept: %s\n", strerror(errno));
	if (send_call(client, &srx, 1, 0, "s2m") < 0) {
		printf("# s2m-rxrpc: client call: %s\n", strerror(errno));
		return 1;
	}
	if (receive(server, "server") >= 0 && send_call(server, NULL, 100, 0, "ok") >= 0)
		ok = receive(client, "client") >= 0;
	close(client);
	close(server);
	printf("# s2m-rxrpc: call %s\n", ok ? "answered" : "not answered");
	return ok ? 0 : 1;
}
