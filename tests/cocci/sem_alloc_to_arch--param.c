// spatch: -D sem=sem_alloc_to_arch--param.c:pool_create,pool_wait
// untouched: sem
/* pool_create() returns the semaphore and pool_wait() takes it as a struct
 * semaphore *: their callers, in other files too, would have to change with
 * them, so the file is left as it is and the reason is given. */
#include <linux/semaphore.h>
#include <linux/slab.h>

struct semaphore *pool_create(int n)
{
	struct semaphore *sem = kmalloc(sizeof(*sem), GFP_KERNEL);

	if (sem)
		sema_init(sem, n);
	return sem;
}

int pool_wait(struct semaphore *sem)
{
	return down_interruptible(sem);
}
