// spatch: -D sem=sem_to_arch--define.c:console_sem
// untouched: other_sem
/* Linux 6.1's DEFINE_SEMAPHORE(x), chosen by an id with a path; a 6.4-style
 * DEFINE_SEMAPHORE(x, 1) next to it is left alone. */
#include <linux/semaphore.h>

static DEFINE_SEMAPHORE(console_sem);
static DEFINE_SEMAPHORE(other_sem, 1);

int console_trylock(void)
{
	if (down_trylock(&console_sem))
		return 0;
	down(&other_sem);
	up(&other_sem);
	return 1;
}
