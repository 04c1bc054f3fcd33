#!/bin/busybox sh
# kernel/printk/printk.c:console_sem: printk() takes it in task context all the time;
# an RT-throttled spinner makes the scheduler printk_deferred(), whose output is
# written by console_trylock()/console_unlock() from the printk irq_work (hard irq).
echo "# workload console: SCHED_FIFO spinner, 2 s"
s2m-rtspin 2 || exit 1
sleep 1
echo "# workload console: a line through /dev/kmsg" > /dev/kmsg
