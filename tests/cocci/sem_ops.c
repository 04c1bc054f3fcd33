// sem_ops: every semaphore API call is listed; other functions are not, nor the calls of a #define body spatch cannot parse.
struct dev { struct semaphore sem; int x; };

static int op(struct dev *d)
{
	sema_init(&d->sem, 1);
	down(&d->sem);
	d->x = down_interruptible(&d->sem);
	up(&d->sem);
	return 0;
}

static int not_an_op(struct dev *d)
{
	mutex_lock(&d->lock);	/* not a semaphore call */
	d->ops->up(d);		/* a member function pointer */
	return 0;
}

/*
 * The body of a #define: spatch lists its calls in something_else(), and none of
 * a body it cannot parse (a whole function ending in a declaration macro, as the
 * UFS sysfs macros are).  The audit names the macro (classify/audit.py) and
 * expands the uses of a function-defining one (classify/census/expand.py): the
 * function written out on one line, as the expansion puts it, is listed.
 */
#define dev_lock(d) do { down(&(d)->sem); } while (0)

#define DEV_SHOW(_name)							\
static int _name##_show(struct dev *d)					\
{									\
	down(&d->sem);							\
	up(&d->sem);							\
	return 0;							\
}									\
static DEVICE_ATTR_RO(_name)

static int mode_show(struct dev *d) { down(&d->sem); up(&d->sem); return 0; } static DEVICE_ATTR_RO(mode);
