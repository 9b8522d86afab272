/* tui.c: entry point of the interactive chat. */
#include "config.h"

#include "ui/tui.h"

#include <stdio.h>

int tui_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "elmchat: the interactive chat is not implemented yet\n");
    return 2;
}
