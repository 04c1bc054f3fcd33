// sem_atomic: calls in interrupt handlers, timer callbacks (and functions they
// call), and under spinlocks are reported; the same calls elsewhere are not.
struct dev { struct semaphore sem; spinlock_t lock; struct timer_list t; int irq; };

static irqreturn_t dev_irq(int irq, void *data)
{
	struct dev *d = data;

	up(&d->sem);
	return IRQ_HANDLED;
}

static void helper(struct dev *d)
{
	up(&d->sem);
}

static void dev_timer(struct timer_list *t)
{
	struct dev *d = from_timer(d, t, t);

	helper(d);
}

static void locked(struct dev *d)
{
	unsigned long flags;

	spin_lock_irqsave(&d->lock, flags);
	if (down_trylock(&d->sem))
		d->irq = 0;
	spin_unlock_irqrestore(&d->lock, flags);
	up(&d->sem);		/* after the unlock: not atomic */
}

static int process_context(struct dev *d)
{
	down(&d->sem);
	up(&d->sem);
	return 0;
}

static int probe(struct dev *d)
{
	timer_setup(&d->t, dev_timer, 0);
	return request_irq(d->irq, dev_irq, 0, "dev", d);
}
