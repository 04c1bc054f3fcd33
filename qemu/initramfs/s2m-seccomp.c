// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-seccomp N: seccomp user notification (kernel/seccomp.c, notification.request).
 * Installs a filter that sends getppid() to a listener (SECCOMP_RET_USER_NOTIF,
 * SECCOMP_FILTER_FLAG_NEW_LISTENER), forks a child that calls getppid() N times, and
 * answers each notification from the parent with the value 4242.  The semaphore
 * notification.request counts the pending notifications: the child up()s it, the
 * listener down()s it.  Prints KTAP diagnostic lines; exits 0 when every call got
 * its answer.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(insns) / sizeof(insns[0]), insns };
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	int listener, status, i, answered = 0;
	pid_t child;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		printf("# s2m-seccomp: no_new_privs: %s\n", strerror(errno));
		return 1;
	}
	listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			   SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (listener < 0) {
		printf("# s2m-seccomp: seccomp: %s\n", strerror(errno));
		return 1;
	}
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		int ok = 0;

		close(listener);
		for (i = 0; i < n; i++)
			ok += syscall(SYS_getppid) == 4242;
		_exit(ok == n ? 0 : 1);
	}
	for (i = 0; i < n; i++) {
		memset(&req, 0, sizeof(req));
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
			printf("# s2m-seccomp: NOTIF_RECV: %s\n", strerror(errno));
			break;
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.val = 4242;
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp)) {
			printf("# s2m-seccomp: NOTIF_SEND: %s\n", strerror(errno));
			break;
		}
		answered++;
	}
	waitpid(child, &status, 0);
	printf("# s2m-seccomp: %d of %d notifications answered, child %s\n", answered, n,
	       WIFEXITED(status) && !WEXITSTATUS(status) ? "got every answer" : "failed");
	return answered == n && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 1;
}
