/* human_size.h: byte counts for people ("540.2 MB", "6.07 GB"), in the
 * decimal units the Hub and download tools show.  Any thread. */
#ifndef ELMCHAT_SRC_HUMAN_SIZE_H
#define ELMCHAT_SRC_HUMAN_SIZE_H

#include <stddef.h>

/* Writes into buf and returns it. */
const char *human_size(long long bytes, char *buf, size_t size);

#endif
