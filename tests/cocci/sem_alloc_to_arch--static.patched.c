// spatch: -D sem=sem_alloc_to_arch--static.c:slots,slots_init
// untouched: other_sem
/* A file-scope pointer to semaphores allocated at probe: its declaration is
 * chosen by name, with the function that allocates them; other_sem, declared
 * beside it, is left alone. */
#include <linux/semaphore.h>
#include <linux/slab.h>

static struct arch_semaphore *slots;
static struct semaphore other_sem;

int slots_init(int n)
{
	slots = kcalloc(n, sizeof(struct arch_semaphore), GFP_KERNEL);
	if (!slots)
		return -ENOMEM;
	sema_init(slots, n);
	sema_init(&other_sem, 1);
	return 0;
}
