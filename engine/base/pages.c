/* pages.c: the one place the engine asks the system for anonymous pages
 * (pages.h); calloc where there is no mmap. */
#include "config.h"

#include "engine/base/pages.h"

#include <stdlib.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#endif

#if defined(MAP_ANONYMOUS) || defined(MAP_ANON)
#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

void *elm_pages_zalloc(size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    /* fresh anonymous pages read as zeros and are only made when written */
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
