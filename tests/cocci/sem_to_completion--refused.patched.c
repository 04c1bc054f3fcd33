// spatch: -D sem=ipmb.got_rsp
/* Refused, by name, and the file left unchanged: down_timeout() in a
 * comparison (its sense is inverted for wait_for_completion_timeout()), a count
 * of 1, and down_interruptible() in a comparison. */
#include <linux/semaphore.h>

struct ipmb {
	struct semaphore got_rsp;
};

static int wait_rsp(struct ipmb *d)
{
	if (down_timeout(&d->got_rsp, HZ) == -ETIME)
		return -ETIME;
	if (down_interruptible(&d->got_rsp) < 0)
		return -EINTR;
	return 0;
}

static void init(struct ipmb *d)
{
	sema_init(&d->got_rsp, 1);
	up(&d->got_rsp);
}
