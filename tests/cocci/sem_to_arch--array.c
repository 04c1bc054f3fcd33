// spatch: -D sem=umad_pool.slots
// untouched: sm_sem
/* An array of semaphores: the whole array is marked, each element stays a
 * counting semaphore. */
#include <linux/semaphore.h>

struct umad_pool {
	struct semaphore slots[4];
	struct semaphore sm_sem;
};

static void pool_init(struct umad_pool *pool)
{
	int i;

	for (i = 0; i < 4; i++)
		sema_init(&pool->slots[i], 2);
	sema_init(&pool->sm_sem, 1);
}
