// spatch: -D sem=done@wait_for_reset
/* A local, chosen by its function: the local of the same name in another
 * function is left alone. */
#include <linux/semaphore.h>

int wait_for_reset(void)
{
	struct semaphore done;

	sema_init(&done, 0);
	down(&done);
	return 0;
}

int wait_for_other(void)
{
	struct semaphore done;

	sema_init(&done, 0);
	down(&done);
	return 0;
}
