// sem_balance: downs that are not released on every path are reported,
// downs released on every path are not.  Each acquisition form on its own,
// all forms in one function, then look-alikes that must be reported.
struct dev { struct semaphore sem, a, b, c, d, e; int x, y; int *p; };

/* ---- each acquisition form on its own: balanced, not reported ---- */

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

/* a test on an identifier between down() and up(): the pvrdma_cmd_post() case */
static int balanced_if_ident(struct dev *d, int *req)
{
	int err;

	down(&d->sem);
	err = g(d);
	if (err == 0) {
		if (req != NULL)
			err = h(d);
	} else {
		err = -EFAULT;
	}
	if (err)
		d->x = 0;
	up(&d->sem);
	return err;
}

/* ret = down_xxx(); if (ret) goto: the hinic send_mbox_to_func() case */
static int balanced_assign_goto(struct dev *d)
{
	int err;

	err = down_interruptible(&d->sem);
	if (err)
		goto out;
	err = g(d);
	if (err) {
		up(&d->sem);
		return err;
	}
	err = h(d);
	if (err < 0)
		d->x = 0;
	up(&d->sem);
out:
	return err;
}

static int balanced_assign_lt(struct dev *d)
{
	int ret;

	ret = down_killable(&d->sem);
	if (ret < 0)
		return ret;
	d->x++;
	up(&d->sem);
	return 0;
}

static int balanced_decl_later_test(struct dev *d)
{
	int ret = down_interruptible(&d->sem);

	d->y = 1;
	if (ret)
		return -ERESTARTSYS;
	if (d->p)
		d->x = 2;
	up(&d->sem);
	return 0;
}

static int balanced_trylock_busy(struct dev *d)
{
	if (down_trylock(&d->sem))
		return -EBUSY;
	d->x++;
	up(&d->sem);
	return 0;
}

static void balanced_trylock_not(struct dev *d)
{
	if (!down_trylock(&d->sem)) {
		d->x++;
		if (d->p)
			d->y = 0;
		up(&d->sem);
	}
}

static void balanced_trylock_eq0(struct dev *d)
{
	if (down_trylock(&d->sem) == 0) {
		d->x++;
		up(&d->sem);
		d->y++;
	}
}

static int balanced_killable_goto(struct dev *d)
{
	int ret = 0;

	if (down_killable(&d->sem)) {
		ret = -EINTR;
		goto out;
	}
	if (d->x) {
		ret = -EINVAL;
		goto out_up;
	}
	d->y = 1;
out_up:
	up(&d->sem);
out:
	return ret;
}

/* goto unwind: up() at a label every success path reaches */
static int balanced_unwind(struct dev *d)
{
	int ret;

	down(&d->sem);
	ret = g(d);
	if (ret)
		goto unlock;
	ret = h(d);
	if (ret)
		goto unlock;
	d->x = 1;
unlock:
	up(&d->sem);
	return ret;
}

/* ---- all forms together in one function: each one balanced ---- */

static int balanced_all_forms(struct dev *d)
{
	int ret = down_killable(&d->a);

	if (ret)
		return ret;
	up(&d->a);

	down(&d->b);
	if (d->x)
		d->y = 0;
	up(&d->b);

	if (down_interruptible(&d->c))
		return -EINTR;
	up(&d->c);

	ret = down_killable(&d->d);
	if (ret)
		goto out;
	up(&d->d);

	if (down_trylock(&d->e))
		return -EBUSY;
	up(&d->e);

	if (!down_trylock(&d->sem)) {
		d->x = 0;
		up(&d->sem);
	}
	if (down_trylock(&d->sem) == 0) {
		d->x = 1;
		up(&d->sem);
	}
out:
	return ret;
}

/* ---- look-alikes: not released on every path, reported ---- */

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

static int lock_helper_interruptible(struct dev *d)
{
	if (down_interruptible(&d->sem))
		return -EINTR;
	d->x++;
	return 0;
}

static int lock_helper_ret(struct dev *d)
{
	int ret = down_killable(&d->sem);

	if (ret)
		return ret;
	d->x++;
	return 0;
}

static int lock_helper_assign(struct dev *d)
{
	int ret;

	ret = down_interruptible(&d->sem);
	if (ret)
		return ret;
	if (d->x)
		return 1;
	up(&d->sem);
	return 0;
}

static int trylock_helper(struct dev *d)
{
	if (down_trylock(&d->sem))
		return 0;
	return 1;
}

static void up_on_one_branch(struct dev *d)
{
	down(&d->sem);
	if (d->x)
		up(&d->sem);
}

static void up_other_expr(struct dev *d)
{
	down(&d->a);
	d->x++;
	up(&d->b);
}

static int trylock_not_leaks(struct dev *d)
{
	if (!down_trylock(&d->sem)) {
		if (d->x)
			return -EINVAL;
		up(&d->sem);
	}
	return 0;
}

static int trylock_not_other_expr(struct dev *d)
{
	if (down_trylock(&d->a) == 0) {
		d->x++;
		up(&d->b);
	}
	return 0;
}

static int unchecked_ret(struct dev *d)
{
	int ret;

	ret = down_interruptible(&d->sem);
	d->x++;
	up(&d->sem);
	return ret;
}

static int ret_overwritten(struct dev *d)
{
	int ret = down_killable(&d->sem);

	ret = g(d);
	if (ret)
		return ret;
	up(&d->sem);
	return 0;
}

static int unwind_misses_a_path(struct dev *d)
{
	int ret;

	down(&d->sem);
	ret = g(d);
	if (ret)
		goto unlock;
	if (d->x)
		return -EBUSY;
unlock:
	up(&d->sem);
	return ret;
}

static int balanced_decl_reused(struct dev *d)
{
	int ret = down_killable(&d->sem);

	if (ret)
		return ret;
	ret = g(d);
	if (ret) {
		up(&d->sem);
		return ret;
	}
	up(&d->sem);
	return 0;
}

/* Balanced: the success path is the else branch (bnx2x_prev_mark_path). */
static int bal_assign_else(struct dev *d)
{
	int rc;

	rc = down_interruptible(&d->sem);
	if (rc) {
		d->y = rc;
	} else {
		d->x++;
		up(&d->sem);
	}
	return rc;
}

/* Balanced: if (down_xxx(E)) S else { ... up(E); } */
static int bal_if_else(struct dev *d)
{
	if (down_killable(&d->sem))
		return -EINTR;
	else {
		d->x++;
		up(&d->sem);
	}
	return 0;
}

/* Not balanced: the else branch returns on one path while holding it. */
static int unbal_assign_else_leak(struct dev *d)
{
	int rc;

	rc = down_interruptible(&d->sem);
	if (rc) {
		d->y = rc;
	} else {
		if (d->x)
			return -EBUSY;
		up(&d->sem);
	}
	return rc;
}
