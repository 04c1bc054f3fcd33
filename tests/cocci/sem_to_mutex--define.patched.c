// spatch: -D sem=sem_to_mutex--define.c:ioctl_sem
// untouched: other_sem
/* Linux 6.1's DEFINE_SEMAPHORE(x) is chosen (by an id with a path), a 6.4-style
 * DEFINE_SEMAPHORE(x, 1) next to it is not; a semaphore remains, so
 * <linux/semaphore.h> stays and <linux/mutex.h> is added. */
#include <linux/semaphore.h>

static DEFINE_MUTEX(ioctl_sem);
static DEFINE_SEMAPHORE(other_sem, 1);

static long do_ioctl(unsigned int cmd)
{
	long ret = 0;

	if (mutex_lock_interruptible(&ioctl_sem))
		return -ERESTARTSYS;
	down(&other_sem);
	ret = cmd;
	up(&other_sem);
	mutex_unlock(&ioctl_sem);
	return ret;
}
