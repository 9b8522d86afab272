/* json_print.h: the JSON the benchmarks print (--json lines). */
#ifndef ELMCHAT_CLI_JSON_PRINT_H
#define ELMCHAT_CLI_JSON_PRINT_H

/* s as a JSON string, quoted and escaped by json-c, on stdout. */
void json_print_string(const char *s);

#endif
