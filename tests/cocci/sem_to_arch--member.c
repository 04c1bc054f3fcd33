// spatch: -D sem=umad_port.sm_sem
// untouched: file_mutex
/* A member (drivers/infiniband/core/user_mad.c: ib_umad_port.sm_sem), chosen
 * by its struct: the member of the same name in another struct and the other
 * semaphore of the same struct are left alone; an array member too. */
#include <linux/semaphore.h>

struct umad_port {
	struct semaphore sm_sem;
	struct semaphore file_mutex;
};

struct other_port {
	struct semaphore sm_sem;
} spare_port;

struct umad_pool {
	struct semaphore slots[4];
};

static int sm_open(struct umad_port *port, struct other_port *other)
{
	if (down_trylock(&port->sm_sem))
		return -EAGAIN;
	down(&other->sm_sem);
	up(&other->sm_sem);
	down(&port->file_mutex);
	up(&port->file_mutex);
	return 0;
}

static void sm_close(struct umad_port *port)
{
	up(&port->sm_sem);
}

static void init_port(struct umad_port *port)
{
	sema_init(&port->sm_sem, 1);
	sema_init(&port->file_mutex, 1);
}
