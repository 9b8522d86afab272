/* cmd_tokenize.c: `elmchat tokenize` (stdin text -> ids or pieces) and
 * `elmchat detokenize` (stdin ids -> text): the tokenizer alone, without
 * loading any weights. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm_tokenizer.h"
#include "cli/commands.h"
#include "cli/option_loop.h"
#include "src/models/model_find.h"
#include "src/base/options.h"
#include "src/base/xalloc.h"

static const struct option long_opts[] = {
    {"model", 1, NULL, 'm'},
    {"tokenizer", 1, NULL, 'T'},
    {"bos", 0, NULL, 'b'},
    {"pieces", 0, NULL, 'p'},
    {"help", 0, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void help_tokenize(void)
{
    printf("Usage: elmchat tokenize [-m MODEL | --tokenizer FILE] [--bos] [--pieces]\n"
           "Read all of standard input as text and print its token ids on one line,\n"
           "separated by spaces (the text is taken as is: a final newline is a token).\n"
           "\n"
           "  -m, --model MODEL     use MODEL's tokenizer.model or tokenizer.json\n"
           "                        (default: guide-small-instruct)\n"
           "      --tokenizer FILE  use this tokenizer.model or tokenizer.json\n"
           "      --bos             start with the BOS id\n"
           "      --pieces          print the pieces instead of the ids\n"
           "  -h, --help            display this help and exit\n"
           "\n"
           "Text like <s> is never read as a special token.\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

static void help_detokenize(void)
{
    printf("Usage: elmchat detokenize [-m MODEL | --tokenizer FILE]\n"
           "Read token ids (separated by spaces, commas or newlines) from standard input\n"
           "and print the text they decode to, exactly (no newline is added).\n"
           "\n"
           "  -m, --model MODEL     use MODEL's tokenizer.model or tokenizer.json\n"
           "                        (default: guide-small-instruct)\n"
           "      --tokenizer FILE  use this tokenizer.model or tokenizer.json\n"
           "  -h, --help            display this help and exit\n"
           "\n"
           "Exit status: 0 ok, 1 runtime error, 2 usage error.\n");
}

static char *read_stdin(size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = x_malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = x_realloc(buf, cap + 1);
        }
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(stdin)) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* The tokenizer: --tokenizer as given, or the model's own (its folder's
 * tokenizer.model or tokenizer.json, a GGUF's vocabulary). */
static elm_tokenizer *open_tokenizer(const char *model, const char *file)
{
    char err[ELM_ERR_MAX];
    elm_tokenizer *tok = NULL;
    elm_status st;
    if (file) {
        st = elm_tokenizer_load(file, &tok, err, sizeof err);
    } else {
        char path[4096];
        if (!model_resolve_file(model, path, sizeof path, err, sizeof err)) {
            cli_error("%s", err);
            return NULL;
        }
        st = elm_tokenizer_load_for_model(path, &tok, err, sizeof err);
    }
    if (st != ELM_OK) {
        cli_error("%s", err);
        return NULL;
    }
    return tok;
}

/* Shared option parsing; returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, bool tokenize, const char **model, const char **file,
                      bool *bos, bool *pieces)
{
    int opt;
    option_loop_begin();
    while ((opt = getopt_long(argc, argv, ":m:h", long_opts, NULL)) != -1) {
        switch (opt) {
        case 'm': *model = optarg; break;
        case 'T': *file = optarg; break;
        case 'b':
        case 'p':
            if (!tokenize)
                return cli_usage_error(argv[0], "unrecognized option '%s'", argv[optind - 1]);
            if (opt == 'b')
                *bos = true;
            else
                *pieces = true;
            break;
        case 'h':
            if (tokenize)
                help_tokenize();
            else
                help_detokenize();
            return EXIT_OK;
        default:
            return option_loop_error(argv[0], opt, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    if (*model && *file)
        return cli_usage_error(argv[0], "give either --model or --tokenizer, not both");
    return -1;
}

static int finish_output(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("write error: %s", strerror(errno));
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *file = NULL;
    bool bos = false, pieces = false;
    int rc = parse_args(argc, argv, true, &model, &file, &bos, &pieces);
    if (rc >= 0)
        return rc;
    elm_tokenizer *tok = open_tokenizer(model, file);
    if (!tok)
        return EXIT_RUNTIME;
    size_t len;
    char *text = read_stdin(&len);
    if (!text) {
        cli_error("reading standard input: %s", strerror(errno));
        elm_tokenizer_free(tok);
        return EXIT_RUNTIME;
    }
    int32_t *ids;
    size_t n;
    elm_status st = elm_tokenize(tok, text, len, bos, &ids, &n);
    free(text);
    if (st != ELM_OK) {
        cli_error("cannot tokenize the input: %s", elm_status_str(st));
        elm_tokenizer_free(tok);
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            putchar(' ');
        if (pieces)
            fputs(elm_tokenizer_piece(tok, ids[i]), stdout);
        else
            printf("%d", (int)ids[i]);
    }
    putchar('\n');
    free(ids);
    elm_tokenizer_free(tok);
    return finish_output();
}

int cmd_detokenize(int argc, char **argv)
{
    const char *model = NULL, *file = NULL;
    bool unused_bos, unused_pieces;
    int rc = parse_args(argc, argv, false, &model, &file, &unused_bos, &unused_pieces);
    if (rc >= 0)
        return rc;
    size_t len;
    char *input = read_stdin(&len);
    if (!input) {
        cli_error("reading standard input: %s", strerror(errno));
        return EXIT_RUNTIME;
    }
    for (char *p = input; p < input + len; p++)
        if (*p == '\r')
            *p = ' ';
    int32_t *ids;
    size_t n;
    if (strlen(input) != len || !cli_parse_ids(input, &ids, &n)) {
        free(input);
        cli_error("standard input is not a list of token ids");
        return EXIT_RUNTIME;
    }
    free(input);
    elm_tokenizer *tok = open_tokenizer(model, file);
    if (!tok) {
        free(ids);
        return EXIT_RUNTIME;
    }
    int n_vocab = elm_tokenizer_n_vocab(tok);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= n_vocab) {
            cli_error("token id %d is out of range (the vocabulary has %d pieces)", (int)ids[i],
                      n_vocab);
            free(ids);
            elm_tokenizer_free(tok);
            return EXIT_RUNTIME;
        }
    }
    char *text;
    size_t text_len;
    elm_status st = elm_detokenize(tok, ids, n, &text, &text_len);
    free(ids);
    elm_tokenizer_free(tok);
    if (st != ELM_OK) {
        cli_error("cannot decode the ids: %s", elm_status_str(st));
        return EXIT_RUNTIME;
    }
    fwrite(text, 1, text_len, stdout);
    free(text);
    return finish_output();
}
