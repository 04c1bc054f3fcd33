// spatch: -D sem=pvcalls_fedata.socket_lock
// untouched: frontends_lock ot
/* Two semaphores in two structs, and a third struct with a semaphore member of
 * the same name: only struct pvcalls_fedata's socket_lock becomes a mutex. */
#include <linux/module.h>
#include <linux/semaphore.h>

static struct pvcalls_back_global {
	struct list_head frontends;
	struct semaphore frontends_lock;
} pvcalls_back_global;

struct pvcalls_fedata {
	struct list_head socket_mappings;
	struct mutex socket_lock;
};

struct other {
	struct semaphore socket_lock;
};

static int lock_all(struct pvcalls_fedata *fedata, struct other *ot)
{
	int ret;

	mutex_lock(&fedata->socket_lock);
	down(&ot->socket_lock);
	up(&ot->socket_lock);
	mutex_unlock(&fedata->socket_lock);

	if (mutex_lock_interruptible(&fedata->socket_lock))
		return -EINTR;
	mutex_unlock(&fedata->socket_lock);

	ret = mutex_lock_killable(&fedata->socket_lock);
	if (ret)
		return ret;
	mutex_unlock(&fedata->socket_lock);

	if (!mutex_trylock(&fedata->socket_lock))
		return -EBUSY;
	mutex_unlock(&fedata->socket_lock);

	if (mutex_trylock(&fedata->socket_lock))
		mutex_unlock(&fedata->socket_lock);

	ret = !mutex_trylock(&fedata->socket_lock);
	if (!ret)
		mutex_unlock(&fedata->socket_lock);

	if (down_trylock(&ot->socket_lock))
		return -EBUSY;
	up(&ot->socket_lock);

	return !mutex_trylock(&fedata->socket_lock);
}

static void connect(struct pvcalls_fedata *fedata)
{
	struct pvcalls_fedata local;

	mutex_init(&fedata->socket_lock);
	mutex_init(&local.socket_lock);
	down(&pvcalls_back_global.frontends_lock);
	up(&pvcalls_back_global.frontends_lock);
}

static void other_init(struct other *ot)
{
	sema_init(&ot->socket_lock, 1);
}
