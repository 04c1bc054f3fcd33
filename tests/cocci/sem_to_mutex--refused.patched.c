// spatch: -D sem=dev.lock
/* Every use of dev.lock that has no mutex form is refused, by name, and the
 * file is left unchanged: down_timeout(), its address stored in a pointer and
 * handed to a helper, a count other than 1, and an access through a macro
 * whose type spatch cannot infer. */
#include <linux/semaphore.h>

#define to_dev(d) container_of(d, struct dev, kobj)

struct dev {
	struct kobject kobj;
	struct semaphore lock;
};

static int helper(struct semaphore *s)
{
	return down_interruptible(s);
}

static int f(struct dev *dev, struct kobject *k)
{
	struct semaphore *sp = &dev->lock;

	sema_init(&dev->lock, 2);
	down(&dev->lock);
	up(&dev->lock);
	if (down_timeout(&dev->lock, 10))
		return -ETIME;
	up(&dev->lock);
	helper(&dev->lock);
	down(&to_dev(k)->lock);
	up(sp);
	return 0;
}
