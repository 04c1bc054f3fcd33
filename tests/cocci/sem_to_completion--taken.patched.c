// spatch: -D sem=iwpm_nlmsg_request.sem
/* iwpm's request: initialised to 1 and taken at once, so it starts at 0; the
 * pair becomes init_completion(), the timed wait and the signal convert. */
#include <linux/semaphore.h>

struct iwpm_nlmsg_request {
	struct completion sem;
	int err_code;
};

static void iwpm_get_nlmsg_request(struct iwpm_nlmsg_request *nlmsg_request)
{
	init_completion(&nlmsg_request->sem);
	nlmsg_request->err_code = 0;
}

static int iwpm_wait_complete_req(struct iwpm_nlmsg_request *nlmsg_request)
{
	int ret;

	ret = wait_for_completion_timeout(&nlmsg_request->sem, HZ) ? 0 : -ETIME;
	if (ret)
		return -EINVAL;
	return 0;
}

static void iwpm_add_mapping_cb(struct iwpm_nlmsg_request *nlmsg_request)
{
	complete(&nlmsg_request->sem);
}
