// spatch: -D sem=limit_sem
// untouched: ioctl_sem
/* Linux 6.4 and later: DEFINE_SEMAPHORE(x, n) keeps its count. */
#include <linux/semaphore.h>

static DEFINE_ARCH_SEMAPHORE(limit_sem, 8);
static DEFINE_SEMAPHORE(ioctl_sem, 1);

void submit(void)
{
	down(&limit_sem);
	down(&ioctl_sem);
	up(&ioctl_sem);
}
