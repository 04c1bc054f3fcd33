// SPDX-License-Identifier: GPL-2.0
/*
 * s2m-rtspin SECONDS: spin as a SCHED_FIFO task for SECONDS.  On one CPU the RT
 * bandwidth limit (sched_rt_runtime_us, 0.95 s per second) throttles it, and the
 * scheduler says so with printk_deferred(): the console is then taken by
 * console_trylock() from the printk irq_work, in hard interrupt context
 * (kernel/printk/printk.c, wake_up_klogd_work_func()), which is what makes
 * console_sem a counting semaphore rather than a mutex.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct sched_param sp = { .sched_priority = 50 };
	volatile unsigned long spins = 0;
	double end;

	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		printf("# s2m-rtspin: sched_setscheduler: %s\n", strerror(errno));
		return 1;
	}
	end = now() + seconds;
	while (now() < end)
		spins++;
	printf("# s2m-rtspin: spun %.1f s as SCHED_FIFO\n", seconds);
	return 0;
}
