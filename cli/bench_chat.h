/* bench_chat.h: `elmchat bench --chat`: replays an N-turn conversation
 * through the chat controller (as the TUI runs it) and prints, per turn, the tokens computed and
 * reused and the time to first token, with the KV cache kept across turns
 * and without (a fresh cache each turn: the whole sequence prefilled). */
#ifndef ELMCHAT_SRC_BENCH_CHAT_H
#define ELMCHAT_SRC_BENCH_CHAT_H

/* argv as given to `elmchat bench` (argv[0] is "bench"); exit status. */
int bench_chat_main(int argc, char **argv);

#endif
