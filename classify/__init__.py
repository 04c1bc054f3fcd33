"""sem2mutex: sort a kernel tree's struct semaphore users into mutex, counting and
completion pools (tree -> census -> facts -> classes -> patches -> checks -> report)."""
