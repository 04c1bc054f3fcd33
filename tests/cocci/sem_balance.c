// sem_balance: downs that are not released on every path are reported,
// downs released on every path are not.
struct dev { struct semaphore sem; int x; };

static int balanced(struct dev *d)
{
	down(&d->sem);
	d->x++;
	up(&d->sem);
	return 0;
}

static int balanced_interruptible(struct dev *d)
{
	if (down_interruptible(&d->sem))
		return -EINTR;
	if (d->x) {
		up(&d->sem);
		return -EBUSY;
	}
	up(&d->sem);
	return 0;
}

static int balanced_ret(struct dev *d)
{
	int ret = down_killable(&d->sem);

	if (ret)
		return ret;
	up(&d->sem);
	return 0;
}

static int leaks_on_error(struct dev *d)
{
	down(&d->sem);
	if (d->x)
		return -EINVAL;
	up(&d->sem);
	return 0;
}

static void lock_helper(struct dev *d)
{
	down(&d->sem);
}
