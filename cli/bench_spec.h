/* bench_spec.h: `elmchat bench --spec FILE`: chat prompts answered plainly
 * and with drafts (a draft model, prompt lookup): the speed-up, whether the
 * replies are the same, and the drafts' acceptance by depth. */
#ifndef ELMCHAT_CLI_BENCH_SPEC_H
#define ELMCHAT_CLI_BENCH_SPEC_H

/* argv as given to `elmchat bench` (argv[0] is "bench"); exit status. */
int bench_spec_main(int argc, char **argv);

#endif
