// spatch: -D sem=dev.wake
// untouched: got_rsp done6
/* The seed's completion patterns on dev.wake; dev.got_rsp in the same struct and
 * the 6.4-style done6 stay semaphores. */
#include <linux/semaphore.h>
struct dev {
	struct completion wake;
	struct semaphore got_rsp;
};
static DEFINE_SEMAPHORE(done6, 0);
static int thread(struct dev *d)
{
	int ret;

	ret = wait_for_completion_interruptible(&d->wake) ? -EINTR : 0;
	if (ret)
		return ret;
	if (wait_for_completion_interruptible(&d->wake))
		return -EINTR;
	if (!wait_for_completion_killable(&d->wake))
		ret = 1;
	if (!wait_for_completion_timeout(&d->wake, HZ))
		return -ETIMEDOUT;
	if (wait_for_completion_timeout(&d->wake, HZ))
		ret = 2;
	wait_for_completion(&d->wake);
	if (!try_wait_for_completion(&d->wake))
		ret = 3;
	ret = down_timeout(&d->got_rsp, HZ);
	down(&done6);
	return wait_for_completion_interruptible(&d->wake) ? -EINTR : 0;
}
static void sender(struct dev *d)
{
	complete(&d->wake);
	up(&d->got_rsp);
	up(&done6);
}
static void probe(struct dev *d)
{
	init_completion(&d->wake);
	sema_init(&d->got_rsp, 0);
}
