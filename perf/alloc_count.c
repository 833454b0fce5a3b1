/*
 * The benchmark's counting allocator (the target "heap allocations per record"), an LD_PRELOAD
 * shim: every malloc, calloc, realloc, memalign/posix_memalign/aligned_alloc of the process is
 * counted (libkconsume's and those of the codec libraries it calls, e.g. zlib's inflate state),
 * then handed to glibc's own allocator (__libc_*; no dlsym, which itself allocates).
 *
 *   LD_PRELOAD=build/release/perf/alloc_count.so perf consumer ...
 *
 * The application reads the count with kc_perf_alloc_count() (found with dlsym, so the consumer
 * also runs without the shim) at the start and the end of its steady state. With
 * KC_ALLOC_SITES=FILE, the calls made while the window is open (kc_perf_alloc_window(1) .. (0))
 * are also counted per call site (the caller's return address) and written to FILE at exit as
 * "count module+offset symbol" lines, biggest first; `addr2line -f -e MODULE OFFSET` names the
 * line (perf/README.md).
 *
 * Threads: any thread allocates; the counters are relaxed atomics (a count, no ordering), the
 * site table is claimed slot by slot with a CAS on the address.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
/* The shim's interface (dlsym'd by the consumer) and the one libc entry point stdlib.h may not
 * declare. */
uint64_t kc_perf_alloc_count(void);
void kc_perf_alloc_window(int on);
void *memalign(size_t al, size_t n);

#define SITES 4096 /* power of two */

static _Atomic uint64_t allocs;
static atomic_int window, window_used;
static struct {
    _Atomic uintptr_t addr;
    _Atomic uint64_t n;
} sites[SITES];

__attribute__((visibility("default"))) uint64_t kc_perf_alloc_count(void)
{
    return atomic_load_explicit(&allocs, memory_order_relaxed);
}

__attribute__((visibility("default"))) void kc_perf_alloc_window(int on)
{
    atomic_store_explicit(&window, on, memory_order_relaxed);
    atomic_store_explicit(&window_used, 1, memory_order_relaxed);
}

static inline void count(void *caller)
{
    atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
    if (!atomic_load_explicit(&window, memory_order_relaxed))
        return;
    uintptr_t a = (uintptr_t)caller;
    for (size_t i = (a >> 4) & (SITES - 1), probes = 0; probes < SITES;
         i = (i + 1) & (SITES - 1), probes++) {
        uintptr_t cur = atomic_load_explicit(&sites[i].addr, memory_order_relaxed);
        if (cur == 0 && atomic_compare_exchange_strong_explicit(
                            &sites[i].addr, &cur, a, memory_order_relaxed, memory_order_relaxed))
            cur = a;
        if (cur == a) {
            atomic_fetch_add_explicit(&sites[i].n, 1, memory_order_relaxed);
            return;
        }
    }
}

void *malloc(size_t n)
{
    count(__builtin_return_address(0));
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    count(__builtin_return_address(0));
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    count(__builtin_return_address(0));
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

void *memalign(size_t al, size_t n)
{
    count(__builtin_return_address(0));
    return __libc_memalign(al, n);
}

void *aligned_alloc(size_t al, size_t n)
{
    count(__builtin_return_address(0));
    return __libc_memalign(al, n);
}

int posix_memalign(void **out, size_t al, size_t n)
{
    count(__builtin_return_address(0));
    void *p = __libc_memalign(al, n);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

static int by_count(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a < b) - (a > b);
}

__attribute__((destructor)) static void dump_sites(void)
{
    const char *path = getenv("KC_ALLOC_SITES");
    if (!path || !*path || !atomic_load(&window_used))
        return; /* e.g. a process that merely inherited LD_PRELOAD */
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    static uint64_t rows[SITES][2];
    size_t n = 0;
    for (size_t i = 0; i < SITES; i++)
        if (atomic_load(&sites[i].n))
            rows[n][0] = atomic_load(&sites[i].n), rows[n++][1] = atomic_load(&sites[i].addr);
    qsort(rows, n, sizeof rows[0], by_count);
    fprintf(f, "# allocations in the window by call site (total counted: %llu)\n",
            (unsigned long long)kc_perf_alloc_count());
    for (size_t i = 0; i < n; i++) {
        Dl_info info = {0};
        void *a = (void *)(uintptr_t)rows[i][1];
        if (dladdr(a, &info) && info.dli_fname)
            fprintf(f, "%llu %s+0x%llx %s\n", (unsigned long long)rows[i][0], info.dli_fname,
                    (unsigned long long)((uintptr_t)a - (uintptr_t)info.dli_fbase),
                    info.dli_sname ? info.dli_sname : "?");
        else
            fprintf(f, "%llu %p ?\n", (unsigned long long)rows[i][0], a);
    }
    fclose(f);
}
