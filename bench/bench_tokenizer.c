/* bench_tokenizer: tapegrad's side of bench/tokenizers.py.
 *
 *   bench_tokenizer train  --data F --vocab-size N [--out tok.safetensors] [--threads T]
 *   bench_tokenizer encode --tokenizer F --data F [--threads T] [--repeats R] [--ids OUT]
 *   bench_tokenizer hf-json --tokenizer F --out tokenizer.json
 *
 * train: one training run, timed from the text in memory to the tokenizer
 * (reading the file is not timed; SentencePiece's figure includes its own
 * reading, a small share). encode: R encodes of the whole text (the first
 * one warms the file cache; the best and the median are reported);
 * --ids writes the ids, one per line, for comparisons. hf-json: the same
 * vocabulary as a Hugging Face tokenizer.json, so `tokenizers` can encode
 * with it: a BPE model over GPT-2's byte-to-character map (every byte a
 * printable character), the merges in order, and a pre-tokenizer that cuts
 * words as tapegrad does (a regex split, then ByteLevel without its own
 * regex); tapegrad's specials become added tokens.
 *
 * Output: one JSON object on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tapegrad.h"

#include "bench_common.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc(n > 0 ? (size_t)n : 1);
    *len = s && n > 0 ? fread(s, 1, (size_t)n, f) : 0;
    fclose(f);
    return s;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves,
 * the other 68 to U+0100 upwards, in byte order. UTF-8 of byte b's char. */
static void byte_char(int b, char out[3])
{
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    int cp = b;
    if (!printable) {
        int k = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) k++;
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 63));
        out[2] = 0;
    }
}

static char *mapped(const tg_tokenizer *t, int32_t id, char map[256][3])
{
    size_t len;
    const unsigned char *p = tg_tok_piece(t, id, &len);
    char *s = malloc(2 * len + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        size_t k = strlen(map[p[i]]);
        memcpy(s + o, map[p[i]], k);
        o += k;
    }
    s[o] = 0;
    return s;
}

static int hf_json(const tg_tokenizer *t, const char *out)
{
    char map[256][3];
    for (int b = 0; b < 256; b++) byte_char(b, map[b]);
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens");
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    for (int32_t id = 0; id < tg_tok_vocab_size(t); id++) {
        if (!tg_tok_is_special(t, id)) continue;
        size_t len;
        const unsigned char *p = tg_tok_piece(t, id, &len);
        char text[64];
        snprintf(text, sizeof text, "%.*s", (int)len, (const char *)p);
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", id);
        cJSON_AddStringToObject(a, "content", text);
        cJSON_AddBoolToObject(a, "single_word", 0);
        cJSON_AddBoolToObject(a, "lstrip", 0);
        cJSON_AddBoolToObject(a, "rstrip", 0);
        cJSON_AddBoolToObject(a, "normalized", 0);
        cJSON_AddBoolToObject(a, "special", 1);
        cJSON_AddItemToArray(added, a);
    }
    cJSON_AddNullToObject(root, "normalizer");
    cJSON *pre = cJSON_AddObjectToObject(root, "pre_tokenizer"), *seq = cJSON_AddArrayToObject(pre, "pretokenizers");
    cJSON_AddStringToObject(pre, "type", "Sequence");
    cJSON *split = cJSON_CreateObject(), *pat = cJSON_AddObjectToObject(split, "pattern");
    cJSON_AddStringToObject(split, "type", "Split");
    cJSON_AddStringToObject(pat, "Regex", tg_tok_kind_of(t) == TG_TOK_BPE ? "\n+| ?[^ \n]+| " : TG_GPT2_PATTERN);
    cJSON_AddStringToObject(split, "behavior", "Isolated");
    cJSON_AddBoolToObject(split, "invert", 0);
    cJSON_AddItemToArray(seq, split);
    cJSON *bl = cJSON_CreateObject();
    cJSON_AddStringToObject(bl, "type", "ByteLevel");
    cJSON_AddBoolToObject(bl, "add_prefix_space", 0);
    cJSON_AddBoolToObject(bl, "trim_offsets", 0);
    cJSON_AddBoolToObject(bl, "use_regex", 0);
    cJSON_AddItemToArray(seq, bl);
    cJSON_AddNullToObject(root, "post_processor");
    cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
    cJSON_AddStringToObject(dec, "type", "ByteLevel");
    cJSON_AddBoolToObject(dec, "add_prefix_space", 0);
    cJSON_AddBoolToObject(dec, "trim_offsets", 0);
    cJSON_AddBoolToObject(dec, "use_regex", 0);
    cJSON *model = cJSON_AddObjectToObject(root, "model"), *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddBoolToObject(model, "fuse_unk", 0);
    cJSON_AddBoolToObject(model, "byte_fallback", 0);
    cJSON_AddBoolToObject(model, "ignore_merges", 0);
    for (int32_t id = 0; id < tg_tok_vocab_size(t); id++) {
        if (tg_tok_is_special(t, id) != 0) continue;
        char *s = mapped(t, id, map);
        cJSON_AddNumberToObject(vocab, s, id);
        free(s);
    }
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    for (int32_t k = 0; k < tg_tok_n_merges(t); k++) {
        int32_t l, r;
        tg_tok_merge(t, k, &l, &r);
        char *a = mapped(t, l, map), *b = mapped(t, r, map);
        cJSON *m = cJSON_CreateArray();
        cJSON_AddItemToArray(m, cJSON_CreateString(a));
        cJSON_AddItemToArray(m, cJSON_CreateString(b));
        cJSON_AddItemToArray(merges, m);
        free(a);
        free(b);
    }
    char *text = cJSON_PrintUnformatted(root);
    FILE *f = fopen(out, "w");
    int rc = !f || fputs(text, f) < 0;
    if (f) rc |= fclose(f) != 0;
    cJSON_free(text);
    cJSON_Delete(root);
    if (rc) {
        fprintf(stderr, "bench_tokenizer: cannot write %s\n", out);
        return 1;
    }
    printf("{\"what\": \"hf-json\", \"out\": \"%s\", \"merges\": %d}\n", out, (int)tg_tok_n_merges(t));
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "", *data = NULL, *tok_path = NULL, *out = NULL, *ids_out = NULL;
    int vocab = 4096, threads = 1, repeats = 3;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--data")) data = argv[i + 1];
        else if (!strcmp(argv[i], "--vocab-size")) vocab = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tokenizer")) tok_path = argv[i + 1];
        else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ids")) ids_out = argv[i + 1];
        else {
            fprintf(stderr, "bench_tokenizer: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    tg_set_num_threads(threads);
    tg_error err = {0};
    if (!strcmp(cmd, "hf-json")) {
        tg_tokenizer *t = tok_path && out ? tg_tok_load(tok_path, &err) : NULL;
        if (!t) {
            fprintf(stderr, "bench_tokenizer hf-json: %s\n",
                    tok_path && out ? err.msg : "--tokenizer and --out are needed");
            return 1;
        }
        int rc = hf_json(t, out);
        tg_tok_free(t);
        return rc;
    }
    size_t len = 0;
    char *text = data ? slurp(data, &len) : NULL;
    if (!text || !len) {
        fprintf(stderr, "bench_tokenizer: cannot read --data %s\n", data ? data : "(none)");
        return 1;
    }
    int rc = 1;
    if (!strcmp(cmd, "train")) {
        double t0 = now_ms();
        tg_tokenizer *t = tg_bpe_train(text, len, &(tg_bpe_options){.vocab_size = vocab}, &err);
        double ms = now_ms() - t0;
        if (!t || (out && tg_tok_save(t, out, &err))) {
            fprintf(stderr, "bench_tokenizer train: %s\n", err.msg);
        } else {
            printf("{\"what\": \"train\", \"impl\": \"tapegrad\", \"bytes\": %zu, \"vocab_asked\": %d, \"vocab\": %d, "
                   "\"threads\": %d, \"seconds\": %.4f}\n",
                   len, vocab, (int)tg_tok_vocab_size(t), threads, ms / 1e3);
            rc = 0;
        }
        tg_tok_free(t);
    } else if (!strcmp(cmd, "encode")) {
        tg_tokenizer *t = tok_path ? tg_tok_load(tok_path, &err) : NULL;
        if (!t) {
            fprintf(stderr, "bench_tokenizer encode: %s\n", tok_path ? err.msg : "--tokenizer is needed");
            free(text);
            return 1;
        }
        double *ms = malloc((size_t)(repeats > 0 ? repeats : 1) * sizeof *ms);
        int64_t n = 0;
        int32_t *ids = NULL;
        for (int r = 0; r < repeats || r == 0; r++) {
            tg_free(ids);
            double t0 = now_ms();
            n = tg_tok_encode(t, text, len, &ids, &err);
            ms[r] = now_ms() - t0;
            if (n < 0) break;
        }
        if (n < 0) {
            fprintf(stderr, "bench_tokenizer encode: %s\n", err.msg);
        } else {
            int k = repeats > 0 ? repeats : 1;
            qsort(ms, (size_t)k, sizeof *ms, cmp_double);
            printf("{\"what\": \"encode\", \"impl\": \"tapegrad\", \"bytes\": %zu, \"tokens\": %lld, \"vocab\": %d, "
                   "\"threads\": %d, \"best_seconds\": %.4f, \"median_seconds\": %.4f, \"mb_per_s\": %.2f, "
                   "\"bytes_per_token\": %.4f}\n",
                   len, (long long)n, (int)tg_tok_vocab_size(t), threads, ms[0] / 1e3, ms[k / 2] / 1e3,
                   (double)len / 1e3 / ms[0], (double)len / (double)n);
            rc = 0;
            if (ids_out) {
                FILE *f = fopen(ids_out, "w");
                for (int64_t i = 0; f && i < n; i++) fprintf(f, "%d\n", (int)ids[i]);
                if (!f || fclose(f)) rc = 1;
            }
        }
        tg_free(ids);
        free(ms);
        tg_tok_free(t);
    } else {
        fprintf(stderr, "usage: bench_tokenizer train|encode|hf-json [flags] (see the comment at the top)\n");
        rc = 2;
    }
    free(text);
    return rc;
}
