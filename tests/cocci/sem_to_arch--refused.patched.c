// spatch: -D sem=bus_sem
// untouched: bus_sem
/* Its address goes to a function that is not the semaphore API: that
 * parameter would need struct arch_semaphore * too, so the file is left as it
 * is and the reason is given. */
#include <linux/semaphore.h>

static struct semaphore bus_sem;

void register_bus_lock(struct semaphore *sem);

void bus_init(void)
{
	sema_init(&bus_sem, 4);
	register_bus_lock(&bus_sem);
}
