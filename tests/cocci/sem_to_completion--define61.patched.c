// spatch: -D sem=ev
/* Linux 6.1's DEFINE_SEMAPHORE(x) starts at 1: not a completion, refused. */
#include <linux/semaphore.h>

static DEFINE_SEMAPHORE(ev);

static void wait_ev(void)
{
	down(&ev);
}

static void fire_ev(void)
{
	up(&ev);
}
