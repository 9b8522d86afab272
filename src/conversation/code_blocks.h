/* code_blocks.h: the code blocks of a reply's markdown (md4c), in order:
 * what /copy N copies, numbered as the chat view shows them.  Any thread. */
#ifndef ELMCHAT_SRC_CODE_BLOCKS_H
#define ELMCHAT_SRC_CODE_BLOCKS_H

#include <stddef.h>

struct code_block {
    char *lang; /* "" when none; owned */
    char *text; /* as written, lines ending in '\n'; owned */
};

/* The blocks of md (n bytes): *out owned (code_blocks_free); returns the count. */
size_t code_blocks_find(const char *md, size_t n, struct code_block **out);
void code_blocks_free(struct code_block *v, size_t n);

#endif
