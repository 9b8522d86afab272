/* pages.c: the one place the engine asks the system for anonymous pages
 * (pages.h); calloc where there is no mmap. */
#include "config.h"

#include "engine/base/pages.h"

#include <stdint.h>
#include <stdlib.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#endif

void elm_pages_prefault(const void *p, size_t bytes, bool write)
{
#if defined(MADV_POPULATE_READ) && defined(MADV_POPULATE_WRITE)
    /* Linux 5.14+; an older kernel answers EINVAL and the pages fault in
     * as they are touched, as without the hint */
    if (!p || bytes == 0)
        return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
    size_t n = bytes + ((uintptr_t)p - a);
    (void)madvise((void *)a, n, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#else
    (void)p;
    (void)bytes;
    (void)write;
#endif
}

void elm_pages_touch(const void *p, size_t bytes)
{
    const volatile unsigned char *c = p;
    if (!c || bytes == 0)
        return;
    size_t page = 4096; /* the smallest page anywhere: never one skipped */
    for (size_t off = 0; off < bytes; off += page)
        (void)c[off];
    (void)c[bytes - 1];
}

#if defined(MAP_ANONYMOUS) || defined(MAP_ANON)
#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

/* The huge page of x86-64 and of arm64 with 4 KiB pages. */
#define HUGE_PAGE ((size_t)2 << 20)

void *elm_pages_zalloc(size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    /* fresh anonymous pages read as zeros and are only made when written */
#ifdef MADV_HUGEPAGE
    if (bytes >= HUGE_PAGE) {
        /* Aligned to a huge page and asking for them (Linux's transparent
         * huge pages: "madvise" is the usual setting): a first write costs
         * one fault for 2 MiB instead of 512, and in a VM that shadows
         * page tables each 4 KiB page's first touch costs ~15 us more
         * (27 MB of snapshot rows: ~120 ms CPU, ~10 ms as huge pages). */
        long page = sysconf(_SC_PAGESIZE);
        size_t len = page > 0 ? (bytes + (size_t)page - 1) / (size_t)page * (size_t)page : bytes;
        size_t span = len + HUGE_PAGE;
        unsigned char *raw =
            mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED)
            return NULL;
        uintptr_t a = ((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        size_t head = a - (uintptr_t)raw;
        if (head)
            munmap(raw, head);
        if (span - head > len)
            munmap((void *)(a + len), span - head - len);
        (void)madvise((void *)a, len, MADV_HUGEPAGE); /* a hint: "never" refuses it */
        return (void *)a;
    }
#endif
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void elm_pages_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes ? bytes : 1);
}

#else

void *elm_pages_zalloc(size_t bytes)
{
    return calloc(1, bytes ? bytes : 1);
}

void elm_pages_free(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}

#endif
