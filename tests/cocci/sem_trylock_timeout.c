// sem_trylock_timeout: down_trylock() and down_timeout() are reported,
// down() and mutex_trylock() are not.
struct dev { struct semaphore sem; struct mutex lock; };

static int f(struct dev *d)
{
	if (down_trylock(&d->sem))
		return -EBUSY;
	up(&d->sem);
	if (down_timeout(&d->sem, 100))
		return -ETIMEDOUT;
	up(&d->sem);
	down(&d->sem);
	up(&d->sem);
	return mutex_trylock(&d->lock);
}
