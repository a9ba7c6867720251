// Counts the heap allocations of the process it is preloaded into, for bench/run.sh's
// COUNT_ALLOCATIONS=1 (allocations per request). glibc only: each call is counted, then passed
// to glibc's own allocator. A thread writes the count to $MALLOC_COUNT_FILE every 20 ms.
//
//   cc -O2 -shared -fPIC -o malloc-count.so bench/malloc-count.c -lpthread
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_ulong allocations;

void *malloc(size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_realloc(pointer, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return 12;  // ENOMEM
    *out = pointer;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_memalign(alignment, size);
}

static void *reporter(void *path) {
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.tmp", (const char *)path);
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (;;) {
        FILE *file = fopen(temporary, "w");
        if (file) {
            fprintf(file, "%lu\n", atomic_load_explicit(&allocations, memory_order_relaxed));
            fclose(file);
            rename(temporary, (const char *)path);
        }
        nanosleep(&pause, NULL);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    const char *path = getenv("MALLOC_COUNT_FILE");
    if (!path) return;
    pthread_t thread;
    pthread_create(&thread, NULL, reporter, (void *)path);
    pthread_detach(thread);
}
