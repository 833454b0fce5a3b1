/*
 * Thread names. Every thread kconsume starts names itself first thing, so that top -H, perf and
 * gdb tell them apart (README "Threads" lists them; perf/run's profile splits CPU by them).
 * Owner: the calling thread (it names only itself).
 */
#ifndef KC_BASE_THREAD_H
#define KC_BASE_THREAD_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

/* Names the calling thread printf-style. The kernel keeps 15 characters and cuts a longer name
 * there; a failure is ignored, since a name is only a label. */
static inline void kc_thread_name(const char *fmt, ...)
{
    char name[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    (void)pthread_setname_np(pthread_self(), name);
}

#endif
