// spatch: -D sem=cfg_sem
/* Linux 6.4's DEFINE_SEMAPHORE(x, 1), the only semaphore of the file: its
 * include becomes <linux/mutex.h>. */
#include <linux/kernel.h>
#include <linux/semaphore.h>

DEFINE_MUTEX(cfg_sem);

int cfg_update(int v)
{
	int ret = mutex_lock_killable(&cfg_sem);

	if (ret)
		return ret;
	mutex_unlock(&cfg_sem);
	return v;
}
