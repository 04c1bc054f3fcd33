// spatch: -D sem=done
/* Linux 6.4's DEFINE_SEMAPHORE(x, 0), the only semaphore of the file: it becomes
 * DECLARE_COMPLETION(x) and the include <linux/completion.h>. */
#include <linux/semaphore.h>

static DECLARE_COMPLETION(done);

static int wait_done(void)
{
	if (wait_for_completion_killable(&done))
		return -EINTR;
	return 0;
}

static void signal_done(void)
{
	complete(&done);
}
