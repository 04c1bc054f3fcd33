// spatch: -D sem=call_limiter
// untouched: other_sem
/* net/rxrpc/call_object.c: a counting semaphore (1000 call slots) with a
 * static initializer, whose address is kept in local pointers, returned by
 * get_slot() and received by new_call(): all of them become struct
 * arch_semaphore.  other_sem, in the same file, is left alone. */
#include <linux/semaphore.h>

static struct semaphore call_limiter =
	__SEMAPHORE_INITIALIZER(call_limiter, 1000);
static struct semaphore kernel_call_limiter =
	__SEMAPHORE_INITIALIZER(kernel_call_limiter, 1000);
static struct semaphore other_sem;

static struct semaphore *get_slot(int kernel)
{
	struct semaphore *limiter = &call_limiter;

	if (kernel)
		limiter = &kernel_call_limiter;
	if (down_interruptible(limiter) < 0)
		return NULL;
	return limiter;
}

static void put_slot(int kernel)
{
	struct semaphore *limiter = &call_limiter;

	if (kernel)
		limiter = &kernel_call_limiter;
	up(limiter);
}

int new_call(int kernel)
{
	struct semaphore *limiter;
	struct semaphore *o = &other_sem;

	limiter = get_slot(kernel);
	if (!limiter)
		return -1;
	put_slot(kernel);
	down(o);
	up(o);
	return 0;
}
