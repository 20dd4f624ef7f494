/* Several function-graph users at once, each with its own filter and callbacks;
   one declines some calls; unregistering one leaves the other running. */
#include <stdio.h>
#include <string.h>

#include <ftrace.h>

volatile int sink;

__attribute__((noinline)) void gamma_(int i) { sink += i; }
__attribute__((noinline)) void alpha(int i) { gamma_(i); }
__attribute__((noinline)) void beta(int i) { sink -= i; }

struct counts {
	int ent, ret, unbalanced;
	int depth_sum;
};

static int ent(struct ftrace_graph_ent *e, struct fgraph_ops *g)
{
	struct counts *c = g->private;

	(void)e;
	c->ent++;
	return 1;
}

static void ret(struct ftrace_graph_ret *r, struct fgraph_ops *g)
{
	struct counts *c = g->private;

	c->ret++;
	if (r->rettime < r->calltime)
		c->unbalanced++;
}

/* declines every other call */
static int ent_decline(struct ftrace_graph_ent *e, struct fgraph_ops *g)
{
	struct counts *c = g->private;
	static int n;

	c->depth_sum += e->depth;
	if (n++ % 2)
		return 0;
	c->ent++;
	return 1;
}

static struct counts ca, cb, cc;
static struct fgraph_ops ga = { .entryfunc = ent, .retfunc = ret, .private = &ca, .idx = -1 };
static struct fgraph_ops gb = { .entryfunc = ent_decline, .retfunc = ret, .private = &cb, .idx = -1 };
/* no filter: shares its frames with the others */
static struct fgraph_ops gc = { .entryfunc = ent, .retfunc = ret, .private = &cc, .idx = -1 };

int main(void)
{
	int err;

	ftrace_set_filter(&ga.ops, (unsigned char *)"alpha", 5, 1);
	ftrace_set_filter(&gb.ops, (unsigned char *)"beta", 4, 1);
	err = register_ftrace_graph(&ga);
	if (!err)
		err = register_ftrace_graph(&gb);
	if (!err)
		err = register_ftrace_graph(&gc);
	if (err) {
		printf("register: %d\n", err);
		return 1;
	}
	for (int i = 0; i < 3; i++)
		alpha(i);
	for (int i = 0; i < 6; i++)
		beta(i);
	unregister_ftrace_graph(&ga);
	for (int i = 0; i < 4; i++) {
		alpha(i);
		beta(i);
	}
	unregister_ftrace_graph(&gb);
	beta(1);
	unregister_ftrace_graph(&gc);
	beta(1);
	printf("a: ent=%d ret=%d bad=%d\n", ca.ent, ca.ret, ca.unbalanced);
	printf("b: ent=%d ret=%d bad=%d depth=%d\n", cb.ent, cb.ret, cb.unbalanced, cb.depth_sum);
	printf("c: ent=%d ret=%d bad=%d\n", cc.ent, cc.ret, cc.unbalanced);
	return 0;
}
