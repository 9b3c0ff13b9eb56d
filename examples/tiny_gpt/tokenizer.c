/* tiny_gpt tokenizer: train a byte-level BPE tokenizer, and encode or
 * decode with one (text/text.h).
 *
 *   tiny_gpt tokenizer train  --data F --vocab-size N --out tok.safetensors
 *   tiny_gpt tokenizer encode --tokenizer F  < text     > ids
 *   tiny_gpt tokenizer decode --tokenizer F  < ids      > text
 *   tiny_gpt tokenizer info   --tokenizer F [--data F]
 *   tiny_gpt tokenizer export --tokenizer F --out tokenizer.bin
 *
 * The encode/decode contract other tools and tests use: encode reads all
 * of stdin as bytes and prints the ids on one line, separated by single
 * spaces, ending with a newline; decode reads ids separated by any
 * whitespace and writes their bytes, streamed (an incomplete UTF-8
 * character waits for the next id, and is written as it is at the end;
 * a tokenizer that adds the dummy prefix loses its space at the start and
 * after BOS, as tg_tok_decode drops it).
 * F is a tokenizer file, a checkpoint that holds one, a .tiktoken
 * rank file (such as GPT-2's) or llama2.c's tokenizer.bin. export writes llama2.c's tokenizer.bin, whose
 * encoder in run.c then gives the same ids (export.c). */
#include "tiny_gpt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"

/* All of stdin; NULL when out of memory or on a read error. */
static char *read_stdin(size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (n < cap) break;
        char *b = realloc(buf, cap *= 2);
        if (!b) free(buf);
        buf = b;
    }
    if (buf && ferror(stdin)) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = 0; /* n < cap: strtol stops here */
    *len = n;
    return buf;
}

/* --words: "classes" or "spaces" (tg_bpe_words); -1 for anything else */
static int bpe_words_parse(const char *name, tg_bpe_words *words)
{
    if (!strcmp(name, "classes")) *words = TG_BPE_WORDS_CLASSES;
    else if (!strcmp(name, "spaces")) *words = TG_BPE_WORDS_SPACES;
    else return -1;
    return 0;
}

static int train(const char *data, int corpus_chars, int vocab_size, int64_t min_count, const char *words_name,
                 const char *out)
{
    tg_bpe_words words;
    if (bpe_words_parse(words_name, &words)) {
        fprintf(stderr, "tiny_gpt tokenizer train: --words %s: expected classes or spaces\n", words_name);
        return 2;
    }
    tg_error err = {0};
    tg_run_config c; /* the text as a run reads it: the file, or the built-in corpus */
    tg_run_config_init(&c);
    c.data = data;
    c.corpus_chars = corpus_chars;
    tg_run_text text;
    if (tg_run_text_load(&text, &c, NULL, false, &(tg_run_options){.flag_names = true}, &err)) {
        fprintf(stderr, "tiny_gpt tokenizer train: %s\n", err.msg);
        return 1;
    }
    double t0 = now_seconds();
    const tg_bpe_options bo = {.vocab_size = vocab_size, .min_count = min_count, .words = words};
    tg_tokenizer *t = tg_bpe_train(text.text, text.len, &bo, &err);
    double t1 = now_seconds();
    int rc = 1;
    if (!t || tg_tok_save(t, out, &err)) {
        fprintf(stderr, "tiny_gpt tokenizer train: %s\n", err.msg);
        goto done;
    }
    printf("trained on %zu bytes in %.3f s: %d ids (%d merges)%s\n", text.len, t1 - t0, (int)tg_tok_vocab_size(t),
           (int)tg_tok_n_merges(t),
           tg_tok_vocab_size(t) < vocab_size ? ", fewer than asked: no other pair occurs often enough" : "");
    printf("%.4f bytes per token on this text; wrote %s\n", tg_tok_bytes_per_token(t, text.text, text.len), out);
    rc = 0;
done:
    tg_tok_free(t);
    tg_run_text_release(&text);
    return rc;
}

static int encode(const tg_tokenizer *t)
{
    tg_error err = {0};
    size_t len;
    char *text = read_stdin(&len);
    if (!text) {
        fprintf(stderr, "tiny_gpt tokenizer encode: cannot read stdin\n");
        return 1;
    }
    int32_t *ids;
    int64_t n = tg_tok_encode(t, text, len, &ids, &err);
    free(text);
    if (n < 0) {
        fprintf(stderr, "tiny_gpt tokenizer encode: %s\n", err.msg);
        return 1;
    }
    for (int64_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
    putchar('\n');
    tg_free(ids);
    return fflush(stdout) ? 1 : 0;
}

static int decode(const tg_tokenizer *t)
{
    size_t len;
    char *text = read_stdin(&len);
    if (!text) {
        fprintf(stderr, "tiny_gpt tokenizer decode: cannot read stdin\n");
        return 1;
    }
    size_t cap = tg_tok_max_piece_len(t) + 3;
    unsigned char *out = malloc(cap);
    tg_tok_stream s;
    tg_tok_stream_init(&s, t);
    int rc = 0;
    char *p = text, *end = text + len;
    int32_t prev = -1; /* the dummy prefix's space goes, at the start and after BOS (tg_tok_decode's rule) */
    for (int64_t k = 0; out; k++) {
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
        if (p == end) break;
        char *q;
        errno = 0;
        long id = strtol(p, &q, 10);
        int64_t got = -1;
        if (q != p && !errno && id >= 0 && id < tg_tok_vocab_size(t) && (q == end || strchr(" \n\t\r", *q)))
            got = tg_tok_stream_push(&s, (int32_t)id, out, cap);
        if (got < 0) {
            int w = 0;
            while (p + w < end && w < 20 && !strchr(" \n\t\r", p[w])) w++;
            fprintf(stderr,
                    "tiny_gpt tokenizer decode: the id at position %lld, \"%.*s\", is not a number in [0, %d)\n",
                    (long long)k, w, p, (int)tg_tok_vocab_size(t));
            rc = 1;
            break;
        }
        const int skip = got > 0 && tg_tok_adds_prefix(t) && (!k || prev == tg_tok_bos(t)) && out[0] == ' ';
        fwrite(out + skip, 1, (size_t)(got - skip), stdout);
        prev = (int32_t)id;
        p = q;
    }
    if (out && !rc) fwrite(out, 1, (size_t)tg_tok_stream_flush(&s, out, cap), stdout);
    if (!out) {
        fprintf(stderr, "tiny_gpt tokenizer decode: out of memory\n");
        rc = 1;
    }
    free(out);
    free(text);
    return fflush(stdout) ? 1 : rc;
}

static int export_llama2c(const tg_tokenizer *t, const char *out)
{
    tg_error err = {0};
    int rc = tg_llama2c_tokenizer_write(t, out, &err);
    if (rc) fprintf(stderr, "tiny_gpt tokenizer export: %s\n", err.msg);
    else printf("wrote %s (%d pieces, llama2.c's tokenizer.bin)\n", out, (int)tg_tok_vocab_size(t));
    return rc ? 1 : 0;
}

static int info(const tg_tokenizer *t, const char *data)
{
    /* the ranks may be any file's; the pattern is GPT-2's, the only one tg_tok_load takes */
    static const char *const KINDS[] = {"", "bpe (tapegrad's byte-level BPE)",
                                        "tiktoken (id = rank, words split by GPT-2's pattern)",
                                        "spm (pieces with scores, merged by score as llama2.c's run.c)"};
    printf("kind %s\nids %d (%d merges), longest piece %zu bytes\nbos %d, eos %d\n", KINDS[tg_tok_kind_of(t)],
           (int)tg_tok_vocab_size(t), (int)tg_tok_n_merges(t), tg_tok_max_piece_len(t), (int)tg_tok_bos(t),
           (int)tg_tok_eos(t));
    if (!data) return 0;
    tg_error err = {0};
    size_t len;
    char *text = tg_file_read(data, &len, &err);
    if (!text) {
        fprintf(stderr, "tiny_gpt tokenizer info: %s\n", err.msg);
        return 1;
    }
    double t0 = now_seconds(), bpt = tg_tok_bytes_per_token(t, text, len), t1 = now_seconds();
    printf("%s: %zu bytes, %.4f bytes per token, encoded at %.1f MB/s\n", data, len, bpt,
           (double)len / 1e6 / (t1 - t0));
    free(text);
    return 0;
}

int cmd_tokenizer(int argc, char **argv)
{
    const char *sub = argc > 0 ? argv[0] : "";
    if (strcmp(sub, "train") && strcmp(sub, "encode") && strcmp(sub, "decode") && strcmp(sub, "info") &&
        strcmp(sub, "export")) {
        fprintf(strcmp(sub, "--help") && strcmp(sub, "-h") ? stderr : stdout,
                "usage: tiny_gpt tokenizer train  --data F --vocab-size N --out tok.safetensors\n"
                "       tiny_gpt tokenizer encode --tokenizer F  < text  (ids on one line)\n"
                "       tiny_gpt tokenizer decode --tokenizer F  < ids   (the bytes)\n"
                "       tiny_gpt tokenizer info   --tokenizer F [--data F]\n"
                "       tiny_gpt tokenizer export --tokenizer F --out tokenizer.bin  (llama2.c's run.c)\n"
                "F: a tokenizer, a checkpoint holding one, or a .tiktoken rank file (such as GPT-2's)\n");
        return strcmp(sub, "--help") && strcmp(sub, "-h") ? 2 : 0;
    }
    const char *data = NULL, *out = "tok.safetensors", *tok_path = NULL, *bin_out = NULL, *dtype = "f32";
    const char *words = "classes";
    int vocab_size = 4096, corpus_chars = 1 << 20, threads = 1;
    int64_t min_count = 2;
    arg_spec train_specs[] = {
        {"data", ARG_STRING, &data, 0, 0, "text to learn from (default: the built-in corpus)", 0, ROLE_NONE},
        {"corpus-chars", ARG_INT, &corpus_chars, 1000, 1 << 30, "size of the built-in corpus", 0, ROLE_NONE},
        {"vocab-size", ARG_INT, &vocab_size, 259, 1 << 24, "ids in all: 3 specials, 256 bytes, the merges", 0,
         ROLE_NONE},
        {"min-count", ARG_I64, &min_count, 1, 9e15, "stop when the best pair occurs fewer times", 0, ROLE_NONE},
        {"words", ARG_STRING, &words, 0, 0,
         "classes: no piece joins letters, digits and punctuation (default); spaces: "
         "pieces may, as tapegrad 0.2 trained",
         0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "tokenizer file to write", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    arg_spec use_specs[] = {
        {"tokenizer", ARG_STRING, &tok_path, 0, 0, "tokenizer file, checkpoint holding one, or .tiktoken file", 0,
         ROLE_NONE},
        {"data", ARG_STRING, &data, 0, 0, "info: a text to measure bytes per token on", 0, ROLE_NONE},
        {"out", ARG_STRING, &bin_out, 0, 0, "export: the tokenizer.bin to write", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    bool is_train = !strcmp(sub, "train");
    arg_spec *specs = is_train ? train_specs : use_specs;
    int n_specs = is_train ? (int)(sizeof train_specs / sizeof *specs) : (int)(sizeof use_specs / sizeof *specs);
    char name[32], usage_s[64];
    snprintf(name, sizeof name, "tokenizer %s", sub);
    snprintf(usage_s, sizeof usage_s, is_train ? "--data F --vocab-size N --out F" : "--tokenizer F");
    tg_dtype dt;
    int setup = command_setup(name, usage_s, specs, n_specs, argc - 1, argv + 1, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    if (is_train) return train(data, corpus_chars, vocab_size, min_count, words, out);
    if (!tok_path || (!strcmp(sub, "export") && !bin_out)) {
        fprintf(stderr, "tiny_gpt %s: %s is required\n", name, tok_path ? "--out" : "--tokenizer");
        return 2;
    }
    tg_error err = {0};
    tg_tokenizer *t = tg_tok_load(tok_path, &err);
    if (!t) {
        fprintf(stderr, "tiny_gpt %s: %s\n", name, err.msg);
        return 1;
    }
    int rc = !strcmp(sub, "encode") ? encode(t)
        : !strcmp(sub, "decode")    ? decode(t)
        : !strcmp(sub, "export")    ? export_llama2c(t, bin_out)
                                    : info(t, data);
    tg_tok_free(t);
    return rc;
}
