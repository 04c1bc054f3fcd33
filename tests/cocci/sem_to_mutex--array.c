// spatch: -D sem=tbl.slots
/* An array of semaphores is refused by name. */
#include <linux/semaphore.h>

struct tbl {
	struct semaphore slots[4];
};

static void f(struct tbl *t, int i)
{
	sema_init(&t->slots[i], 1);
	down(&t->slots[i]);
	up(&t->slots[i]);
}
