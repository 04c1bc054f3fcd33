// sem_ops: every semaphore API call is listed; other functions are not.
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
