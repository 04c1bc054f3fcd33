// spatch: -D sem=sem_alloc_to_arch.c:handle_create,handle_delete,handle_wait,handle_signal
// untouched: bus_sem
/* drivers/acpi/osl.c: semaphores allocated at run time and handed out as
 * untyped handles, which three functions cast back.  Every struct semaphore
 * of the four functions becomes struct arch_semaphore; bus_sem and its user,
 * in the same file, are left alone. */
#include <linux/semaphore.h>
#include <linux/slab.h>

static struct semaphore bus_sem;

int handle_create(unsigned int units, void **handle)
{
	struct arch_semaphore *sem = kzalloc(sizeof(struct arch_semaphore),
					     GFP_KERNEL);

	if (!sem)
		return -ENOMEM;
	sema_init(sem, units);
	*handle = sem;
	return 0;
}

void handle_delete(void *handle)
{
	struct arch_semaphore *sem = (struct arch_semaphore *)handle;

	BUG_ON(!list_empty(&sem->wait_list));
	kfree(sem);
}

int handle_wait(void *handle, long timeout)
{
	struct arch_semaphore *sem = (struct arch_semaphore *)handle;

	return down_timeout(sem, timeout);
}

void handle_signal(void *handle)
{
	up((struct arch_semaphore *)handle);
}

void bus_use(void)
{
	struct semaphore *bus = &bus_sem;

	down(bus);
	up(bus);
}
