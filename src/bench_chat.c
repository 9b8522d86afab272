/* bench_chat.c: `elmchat bench --chat` (bench_chat.h). */
#include "config.h"

#include "src/bench_chat.h"

#include <stdio.h>

int bench_chat_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "elmchat bench --chat: not built yet\n");
    return 2;
}
