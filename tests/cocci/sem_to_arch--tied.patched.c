// spatch: -D sem=mlx5_cmd.vars.sem
// untouched: pages_sem
/* drivers/net/ethernet/mellanox/mlx5/core/cmd.c: one up() releases either
 * vars.sem (counting) or vars.pages_sem, chosen by a conditional: marking
 * only one of them would give the expression two types, so the file is left
 * as it is and the reason is given. */
#include <linux/semaphore.h>

struct mlx5_cmd {
	struct {
		struct semaphore sem;
		struct semaphore pages_sem;
	} vars;
};

static void free_ent(struct mlx5_cmd *cmd, int page_queue)
{
	up(page_queue ? &cmd->vars.pages_sem : &cmd->vars.sem);
}

static void take(struct mlx5_cmd *cmd)
{
	down(&cmd->vars.sem);
}
