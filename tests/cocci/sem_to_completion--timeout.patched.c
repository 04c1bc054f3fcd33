// spatch: -D sem=ipmb_dev.got_rsp
/* ipmi_ipmb's got_rsp: down_timeout()'s value stored, then tested, and
 * returned: it becomes "wait_for_completion_timeout() ? 0 : -ETIME", the same
 * value, so the tests after it keep their sense. */
#include <linux/semaphore.h>

struct ipmb_dev {
	struct completion got_rsp;
};

static int ipmi_ipmb_thread(struct ipmb_dev *iidev, bool msg)
{
	int ret;

	ret = wait_for_completion_timeout(&iidev->got_rsp,
					  msecs_to_jiffies(100)) ? 0 : -ETIME;
	if (!msg && ret)
		wait_for_completion(&iidev->got_rsp);
	return wait_for_completion_timeout(&iidev->got_rsp, HZ) ? 0 : -ETIME;
}

static void check_msg_done(struct ipmb_dev *iidev)
{
	complete(&iidev->got_rsp);
}

static void ipmi_ipmb_probe(struct ipmb_dev *iidev)
{
	init_completion(&iidev->got_rsp);
}
