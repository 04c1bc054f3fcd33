// spatch: -D sem=ipmb_dev.got_rsp
/* ipmi_ipmb's got_rsp: down_timeout()'s value stored, then tested, and
 * returned: it becomes "wait_for_completion_timeout() ? 0 : -ETIME", the same
 * value, so the tests after it keep their sense. */
#include <linux/semaphore.h>

struct ipmb_dev {
	struct semaphore got_rsp;
};

static int ipmi_ipmb_thread(struct ipmb_dev *iidev, bool msg)
{
	int ret;

	ret = down_timeout(&iidev->got_rsp, msecs_to_jiffies(100));
	if (!msg && ret)
		down(&iidev->got_rsp);
	return down_timeout(&iidev->got_rsp, HZ);
}

static void check_msg_done(struct ipmb_dev *iidev)
{
	up(&iidev->got_rsp);
}

static void ipmi_ipmb_probe(struct ipmb_dev *iidev)
{
	sema_init(&iidev->got_rsp, 0);
}
