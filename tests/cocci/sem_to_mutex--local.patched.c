// spatch: -D sem=lk@worker
// untouched: other
/* A function-scope semaphore chosen as name@func: the local of the same name in
 * other() is another semaphore. <linux/mutex.h> is already included. */
#include <linux/mutex.h>
#include <linux/semaphore.h>

static void worker(void)
{
	struct mutex lk;

	mutex_init(&lk);
	mutex_lock(&lk);
	mutex_unlock(&lk);
}

static void other(void)
{
	struct semaphore lk;

	sema_init(&lk, 1);
	down(&lk);
	up(&lk);
}
