/* human_size.c: byte counts for people (human_size.h). */
#include "config.h"

#include "src/base/human_size.h"

#include <stdio.h>

const char *human_size(long long b, char *buf, size_t size)
{
    if (b >= 1000LL * 1000 * 1000)
        snprintf(buf, size, "%.2f GB", (double)b / 1e9);
    else if (b >= 1000 * 1000)
        snprintf(buf, size, "%.1f MB", (double)b / 1e6);
    else if (b >= 1000)
        snprintf(buf, size, "%.1f kB", (double)b / 1e3);
    else
        snprintf(buf, size, "%lld bytes", b);
    return buf;
}
