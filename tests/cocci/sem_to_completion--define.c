// spatch: -D sem=done
/* Linux 6.4's DEFINE_SEMAPHORE(x, 0), the only semaphore of the file: it becomes
 * DECLARE_COMPLETION(x) and the include <linux/completion.h>. */
#include <linux/semaphore.h>

static DEFINE_SEMAPHORE(done, 0);

static int wait_done(void)
{
	if (down_killable(&done))
		return -EINTR;
	return 0;
}

static void signal_done(void)
{
	up(&done);
}
