/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waits.h - for test programs that need a thread to be waiting in a system call before
 * they go on: has thread tid gone off the CPU in one (/proc/self/task/TID/syscall shows a
 * call number, not "running" nor -1)?
 */
#ifndef FTKIT_TEST_WAITS_H
#define FTKIT_TEST_WAITS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((unused, no_instrument_function)) int waits_in_syscall(int tid)
{
	char path[64], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strncmp(buf, "running", 7) && atol(buf) >= 0;
}

#endif
