// spatch: -D sem=dev.wake
// untouched: got_rsp done6
/* The seed's completion patterns on dev.wake; dev.got_rsp in the same struct and
 * the 6.4-style done6 stay semaphores. */
#include <linux/semaphore.h>
struct dev {
	struct semaphore wake;
	struct semaphore got_rsp;
};
static DEFINE_SEMAPHORE(done6, 0);
static int thread(struct dev *d)
{
	int ret;

	ret = down_interruptible(&d->wake);
	if (ret)
		return ret;
	if (down_interruptible(&d->wake))
		return -EINTR;
	if (!down_killable(&d->wake))
		ret = 1;
	if (down_timeout(&d->wake, HZ))
		return -ETIMEDOUT;
	if (!down_timeout(&d->wake, HZ))
		ret = 2;
	down(&d->wake);
	if (down_trylock(&d->wake))
		ret = 3;
	ret = down_timeout(&d->got_rsp, HZ);
	down(&done6);
	return down_interruptible(&d->wake);
}
static void sender(struct dev *d)
{
	up(&d->wake);
	up(&d->got_rsp);
	up(&done6);
}
static void probe(struct dev *d)
{
	sema_init(&d->wake, 0);
	sema_init(&d->got_rsp, 0);
}
