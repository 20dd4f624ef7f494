/*
 * demo: a small bakery with three threads, traced by `make` to show what ftkit does.
 *
 * The main thread opens the shop and starts a baker and a cashier; the baker bakes
 * loaves (knead, proof, bake), the cashier sells them. Every function is an ordinary
 * C function built with -pg -mfentry; ftkit turns their entry sites into nops and the
 * function_graph tracer records each call with its duration.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define LOAVES 3

static pthread_mutex_t shelf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t shelf_cond = PTHREAD_COND_INITIALIZER;
static int shelf;
static volatile unsigned long work_sink;

__attribute__((noinline)) static void work(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		work_sink += i;
}

__attribute__((noinline)) static void add_flour(void) { work(2000); }
__attribute__((noinline)) static void add_water(void) { work(1000); }

__attribute__((noinline)) static void knead_dough(void)
{
	add_flour();
	add_water();
	work(3000);
}

__attribute__((noinline)) static void proof_dough(void) { work(5000); }
__attribute__((noinline)) static void bake_in_oven(void) { work(8000); }

__attribute__((noinline)) static void put_on_shelf(void)
{
	pthread_mutex_lock(&shelf_lock);
	shelf++;
	pthread_cond_signal(&shelf_cond);
	pthread_mutex_unlock(&shelf_lock);
}

__attribute__((noinline)) static void bake_loaf(void)
{
	knead_dough();
	proof_dough();
	bake_in_oven();
	put_on_shelf();
}

static void *baker(void *arg)
{
	(void)arg;
	/* named by itself too: a thread may end before open_shop names it */
	pthread_setname_np(pthread_self(), "baker");
	for (int i = 0; i < LOAVES; i++)
		bake_loaf();
	return NULL;
}

__attribute__((noinline)) static int count_coins(int loaf)
{
	work(500);
	return 250 + loaf;
}

__attribute__((noinline)) static int sell_loaf(int loaf)
{
	pthread_mutex_lock(&shelf_lock);
	while (shelf == 0)
		pthread_cond_wait(&shelf_cond, &shelf_lock);
	shelf--;
	pthread_mutex_unlock(&shelf_lock);
	return count_coins(loaf);
}

static void *cashier(void *arg)
{
	int *takings = arg;

	pthread_setname_np(pthread_self(), "cashier");

	for (int i = 0; i < LOAVES; i++)
		*takings += sell_loaf(i);
	return NULL;
}

__attribute__((noinline)) static void open_shop(pthread_t *b, pthread_t *c, int *takings)
{
	if (pthread_create(b, NULL, baker, NULL) || pthread_create(c, NULL, cashier, takings)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_setname_np(*b, "baker");
	pthread_setname_np(*c, "cashier");
}

__attribute__((noinline)) static void close_shop(pthread_t b, pthread_t c)
{
	pthread_join(b, NULL);
	pthread_join(c, NULL);
}

int main(void)
{
	pthread_t b, c;
	int takings = 0;

	open_shop(&b, &c, &takings);
	close_shop(b, c);
	printf("demo: sold %d loaves for %d coins\n", LOAVES, takings);
	return 0;
}
