// sem_escape: a semaphore whose address is passed on or stored is reported;
// the semaphore API itself, and other objects, are not.
struct dev { struct semaphore sem; struct semaphore *cur; struct mutex lock; };

extern void keep(struct semaphore *s);

static void f(struct dev *d)
{
	keep(&d->sem);
	d->cur = &d->sem;
	sema_init(&d->sem, 1);
	down(&d->sem);
	up(&d->sem);
	mutex_lock(&d->lock);
}
