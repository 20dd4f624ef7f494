// SPDX-License-Identifier: Apache-2.0
/*
 * Threads whose pthread key destructors call traced functions, one key re-arming itself
 * for two more rounds (as libxml2's and glib's per-thread state do): every call is
 * recorded, none lost for want of a buffer (TestTracerKeyDestructors).
 */
#include <pthread.h>
#include <stdio.h>
static pthread_key_t k1, k2;
__attribute__((noinline)) void in_destructor(void *p) { __asm__ volatile("" :: "r"(p)); }
__attribute__((noinline)) void dtor(void *p) { in_destructor(p); }
__attribute__((noinline)) void rearm(void *p) { long n = (long)p; in_destructor(p); if (n < 3) pthread_setspecific(k2, (void *)(n + 1)); }
static void *run(void *a) { pthread_setspecific(k1, a); pthread_setspecific(k2, (void *)1); return NULL; }
int main(void) {
  pthread_t t[3];
  pthread_key_create(&k1, dtor); pthread_key_create(&k2, rearm);
  for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, run, (void *)(i + 1));
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  puts("ok"); return 0;
}
