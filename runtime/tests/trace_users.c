/* Several function-graph users at once, each with its own filter and callbacks;
   one declines some calls; unregistering one leaves the other running.  Two plain ops on
   the same function, registered before and after the graph users, see the real caller
   as parent ip (not the graph tracer's return hook, which replaces it on the stack). */
#include <stdio.h>
#include <string.h>

#include <ftrace.h>

volatile int sink;

__attribute__((noinline)) void gamma_(int i) { sink += i; }
__attribute__((noinline)) void alpha(int i) { gamma_(i); }
__attribute__((noinline)) void beta(int i) { sink -= i; }
/* one call site of alpha: its parent ip is always the same */
__attribute__((noinline, optimize("no-optimize-sibling-calls"))) void call_alpha(int i)
{
	alpha(i);
}

static unsigned long parent0;
static int parent_bad;

static ftrace_notrace void watch(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
				  struct ftrace_regs *fregs)
{
	(void)ip; (void)op; (void)fregs;
	if (!parent0)
		parent0 = parent_ip;
	else if (parent_ip != parent0)
		parent_bad++;
}

static struct ftrace_ops w1 = { .func = watch }, w2 = { .func = watch };

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

	/* the parent ip alone on the site */
	ftrace_set_filter(&w1, (unsigned char *)"alpha", 5, 1);
	ftrace_set_filter(&w2, (unsigned char *)"alpha", 5, 1);
	if (register_ftrace_function(&w1))
		return 1;
	call_alpha(0);
	unregister_ftrace_function(&w1);
	ftrace_set_filter(&ga.ops, (unsigned char *)"alpha", 5, 1);
	ftrace_set_filter(&gb.ops, (unsigned char *)"beta", 4, 1);
	err = register_ftrace_function(&w1);
	if (!err)
		err = register_ftrace_graph(&ga);
	if (!err)
		err = register_ftrace_graph(&gb);
	if (!err)
		err = register_ftrace_graph(&gc);
	if (!err)
		err = register_ftrace_function(&w2);
	if (err) {
		printf("register: %d\n", err);
		return 1;
	}
	for (int i = 0; i < 3; i++)
		call_alpha(i);
	unregister_ftrace_function(&w1);
	unregister_ftrace_function(&w2);
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
	printf("parent ip changed: %d\n", parent_bad);
	return 0;
}
