// sem_init: the initial counts, in all their forms.
static DEFINE_SEMAPHORE(old_gen);
static DEFINE_SEMAPHORE(new_gen, 4);
static struct semaphore st = __SEMAPHORE_INITIALIZER(st, 1);
struct dev { struct semaphore sem; struct mutex lock; };

static void init(struct dev *d)
{
	sema_init(&d->sem, 0);
	mutex_init(&d->lock);	/* not a semaphore */
}
