// spatch: -D sem=mlx5_cmd.vars.sem
// untouched: pages_sem
/* A member of an anonymous struct member (include/linux/mlx5/driver.h:
 * mlx5_cmd.vars.sem): only that one is marked, not its neighbours, nor the
 * member of the same name directly in the struct. */
#include <linux/semaphore.h>

struct mlx5_cmd {
	struct {
		int max_reg_cmds;
		struct arch_semaphore sem;
		struct semaphore pages_sem;
	} vars;
	struct semaphore sem;
};
