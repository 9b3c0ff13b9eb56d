/* llama2c_run: a reader of llama2.c's model.bin and tokenizer.bin written
 * for the test suite from the format and run.c's documented behaviour
 * (not from its code), so tiny_gpt's export can be checked without run.c:
 *
 *   llama2c_run MODEL TOKENIZER PROMPT STEPS        greedy text, as run.c -t 0 -n STEPS -i PROMPT
 *   llama2c_run MODEL TOKENIZER PROMPT STEPS BATCH  also writes the prompt's tokens as a batch
 *                                                    (idx, targets) and prints "loss L" for it
 *   llama2c_run --encode TOKENIZER < TEXT           the ids run.c's encoder gives TEXT (up to its
 *                                                    first NUL), BOS first, on one line
 *
 * What it reproduces of run.c: the encoder (BOS, the " " dummy prefix for
 * a non-empty prompt, each UTF-8 code point looked up as a piece, else
 * its bytes as id byte + 3, then the adjacent pair whose concatenation is
 * the highest-scoring piece merged again and again), the forward pass in
 * float (RMSNorm eps 1e-5, RoPE on interleaved pairs with 1/10000^(i/hs)
 * computed by powf, grouped kv heads h / (n_heads / n_kv_heads), SwiGLU),
 * and the printing (a space right after BOS dropped, "<0xXX>" pieces as
 * their byte, single non-printable bytes not printed, stop at BOS or after
 * STEPS positions). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad.h"

typedef struct {
    int dim, hidden, n_layers, n_heads, n_kv, vocab, seq;
} config;

typedef struct {
    config c;
    float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *wcls;
    float *kc, *vc; /* caches (n_layers, seq, kv_dim) */
    int32_t *file; /* the whole checkpoint; the weights point into it */
} model;

static char **pieces;
static float *scores;

static void *read_all(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc((size_t)*n);
    if (fread(b, 1, (size_t)*n, f) != (size_t)*n) {
        perror(path);
        exit(1);
    }
    fclose(f);
    return b;
}

static int *sorted; /* ids in strcmp order of their pieces, for lookup */
static int n_pieces;

static int by_piece(const void *a, const void *b) { return strcmp(pieces[*(const int *)a], pieces[*(const int *)b]); }

/* tokenizer.bin: int32 max length, then per id float32 score, int32
 * length, the bytes. V ids, or (V < 0) as many as the file holds; returns
 * the count. */
static int read_tokenizer(const char *path, int V)
{
    long n;
    char *t = read_all(path, &n), *q = t + 4, *end = t + n;
    int cap = V > 0 ? V : 1024, k = 0;
    pieces = malloc((size_t)cap * sizeof *pieces);
    scores = malloc((size_t)cap * sizeof *scores);
    for (; V > 0 ? k < V : q + 8 <= end; k++) {
        if (k == cap) {
            cap *= 2;
            pieces = realloc(pieces, (size_t)cap * sizeof *pieces);
            scores = realloc(scores, (size_t)cap * sizeof *scores);
        }
        int32_t len;
        memcpy(&scores[k], q, 4);
        memcpy(&len, q + 4, 4);
        if (len < 0 || q + 8 + len > end) {
            fprintf(stderr, "%s: piece %d runs past the end\n", path, k);
            exit(1);
        }
        pieces[k] = calloc((size_t)len + 1, 1);
        memcpy(pieces[k], q + 8, (size_t)len);
        q += 8 + len;
    }
    sorted = malloc((size_t)k * sizeof *sorted);
    for (int i = 0; i < k; i++) sorted[i] = i;
    qsort(sorted, (size_t)k, sizeof *sorted, by_piece);
    free(t);
    return n_pieces = k;
}

static void free_tokenizer(void)
{
    for (int i = 0; i < n_pieces; i++) free(pieces[i]);
    free(pieces);
    free(scores);
    free(sorted);
}

static void load(model *m, const char *path, const char *tok)
{
    long n;
    int32_t *hdr = m->file = read_all(path, &n);
    config *c = &m->c;
    *c = (config){hdr[0], hdr[1], hdr[2], hdr[3], hdr[4], abs(hdr[5]), hdr[6]};
    const int shared = hdr[5] > 0, hs = c->dim / c->n_heads, kv = c->n_kv * hs, L = c->n_layers;
    float *p = (float *)(hdr + 7);
    m->emb = p, p += (size_t)c->vocab * c->dim;
    m->rms_att = p, p += (size_t)L * c->dim;
    m->wq = p, p += (size_t)L * c->dim * c->dim;
    m->wk = p, p += (size_t)L * c->dim * kv;
    m->wv = p, p += (size_t)L * c->dim * kv;
    m->wo = p, p += (size_t)L * c->dim * c->dim;
    m->rms_ffn = p, p += (size_t)L * c->dim;
    m->w1 = p, p += (size_t)L * c->dim * c->hidden;
    m->w2 = p, p += (size_t)L * c->hidden * c->dim;
    m->w3 = p, p += (size_t)L * c->dim * c->hidden;
    m->rms_final = p, p += c->dim;
    p += (size_t)c->seq * hs; /* the two RoPE tables, unused */
    m->wcls = shared ? m->emb : p;
    m->kc = calloc((size_t)L * c->seq * kv, sizeof(float));
    m->vc = calloc((size_t)L * c->seq * kv, sizeof(float));
    read_tokenizer(tok, c->vocab);
}

/* The id whose piece is s (binary search, as run.c), or -1. */
static int lookup(const char *s, int V)
{
    int lo = 0, hi = V - 1;
    while (lo <= hi) {
        const int mid = (lo + hi) / 2, c = strcmp(pieces[sorted[mid]], s);
        if (!c) return sorted[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int encode(const char *text, int V, int *out)
{
    int n = 0;
    out[n++] = 1;
    if (text[0]) out[n++] = lookup(" ", V);
    for (const char *c = text; *c;) {
        int len = 1;
        while (len < 4 && (c[len] & 0xC0) == 0x80) len++; /* one code point */
        char cp[8] = {0};
        memcpy(cp, c, (size_t)len);
        int id = lookup(cp, V);
        if (id >= 0) out[n++] = id;
        else
            for (int i = 0; i < len; i++) out[n++] = (unsigned char)c[i] + 3;
        c += len;
    }
    for (;;) { /* merge the best-scoring adjacent pair, again and again */
        float best = -1e10f;
        int at = -1, id = -1;
        for (int i = 0; i + 1 < n; i++) {
            char buf[2048];
            snprintf(buf, sizeof buf, "%s%s", pieces[out[i]], pieces[out[i + 1]]);
            int k = lookup(buf, V);
            if (k >= 0 && scores[k] > best) best = scores[k], at = i, id = k;
        }
        if (at < 0) break;
        out[at] = id;
        memmove(out + at + 1, out + at + 2, (size_t)(n - at - 2) * sizeof *out);
        n--;
    }
    return n;
}

static void rmsnorm(float *o, const float *x, const float *w, int n)
{
    float ss = 0;
    for (int j = 0; j < n; j++) ss += x[j] * x[j];
    ss = 1.0f / sqrtf(ss / n + 1e-5f);
    for (int j = 0; j < n; j++) o[j] = w[j] * (ss * x[j]);
}

/* o (d) = W (d,n) x (n) */
static void matvec(float *o, const float *x, const float *w, int n, int d)
{
    for (int i = 0; i < d; i++) {
        float s = 0;
        for (int j = 0; j < n; j++) s += w[(size_t)i * n + j] * x[j];
        o[i] = s;
    }
}

static void forward(model *m, int token, int pos, float *logits)
{
    const config *c = &m->c;
    const int D = c->dim, hs = D / c->n_heads, kvd = c->n_kv * hs, G = c->n_heads / c->n_kv, H = c->hidden;
    float x[4096], xb[4096], q[4096], xb2[4096], hb[16384], hb2[16384], att[4096];
    memcpy(x, m->emb + (size_t)token * D, (size_t)D * sizeof *x);
    for (int l = 0; l < c->n_layers; l++) {
        rmsnorm(xb, x, m->rms_att + (size_t)l * D, D);
        float *k = m->kc + ((size_t)l * c->seq + pos) * kvd, *v = m->vc + ((size_t)l * c->seq + pos) * kvd;
        matvec(q, xb, m->wq + (size_t)l * D * D, D, D);
        matvec(k, xb, m->wk + (size_t)l * D * kvd, D, kvd);
        matvec(v, xb, m->wv + (size_t)l * D * kvd, D, kvd);
        for (int i = 0; i < D; i += 2) {
            const float freq = 1.0f / powf(10000.0f, (float)(i % hs) / (float)hs), a = pos * freq;
            const float cr = cosf(a), ci = sinf(a);
            for (int w = 0; w < (i < kvd ? 2 : 1); w++) {
                float *vec = w ? k : q, v0 = vec[i], v1 = vec[i + 1];
                vec[i] = v0 * cr - v1 * ci;
                vec[i + 1] = v0 * ci + v1 * cr;
            }
        }
        for (int h = 0; h < c->n_heads; h++) {
            const float *qh = q + h * hs;
            float mx = -1e30f, sum = 0;
            for (int t = 0; t <= pos; t++) {
                const float *kt = m->kc + ((size_t)l * c->seq + t) * kvd + (h / G) * hs;
                float s = 0;
                for (int i = 0; i < hs; i++) s += qh[i] * kt[i];
                att[t] = s / sqrtf((float)hs);
                if (att[t] > mx) mx = att[t];
            }
            for (int t = 0; t <= pos; t++) att[t] = expf(att[t] - mx), sum += att[t];
            float *o = xb + h * hs;
            memset(o, 0, (size_t)hs * sizeof *o);
            for (int t = 0; t <= pos; t++) {
                const float *vt = m->vc + ((size_t)l * c->seq + t) * kvd + (h / G) * hs;
                for (int i = 0; i < hs; i++) o[i] += att[t] / sum * vt[i];
            }
        }
        matvec(xb2, xb, m->wo + (size_t)l * D * D, D, D);
        for (int i = 0; i < D; i++) x[i] += xb2[i];
        rmsnorm(xb, x, m->rms_ffn + (size_t)l * D, D);
        matvec(hb, xb, m->w1 + (size_t)l * D * H, D, H);
        matvec(hb2, xb, m->w3 + (size_t)l * D * H, D, H);
        for (int i = 0; i < H; i++) hb[i] = hb[i] * (1.0f / (1.0f + expf(-hb[i]))) * hb2[i];
        matvec(xb, hb, m->w2 + (size_t)l * D * H, H, D);
        for (int i = 0; i < D; i++) x[i] += xb[i];
    }
    rmsnorm(x, x, m->rms_final, D);
    matvec(logits, x, m->wcls, D, c->vocab);
}

/* run.c's decode and printing of token after prev */
static void print_piece(int prev, int token)
{
    const char *p = pieces[token];
    if (prev == 1 && p[0] == ' ') p++;
    unsigned int byte;
    char one[2] = {0};
    if (sscanf(p, "<0x%02X>", &byte) == 1) one[0] = (char)byte, p = one;
    if (!p[0] || (!p[1] && !(isprint((unsigned char)p[0]) || isspace((unsigned char)p[0])))) return;
    fputs(p, stdout);
}

/* The prompt as a batch: its mean cross-entropy printed, and the batch
 * (idx, targets) written to PATH for tiny_gpt eval to score. */
static int score(model *m, const int *prompt, int np, float *logits, const char *path)
{
    const int V = m->c.vocab;
    double loss = 0;
    for (int t = 0; t + 1 < np; t++) {
        forward(m, prompt[t], t, logits);
        double mx = -1e30, s = 0;
        for (int i = 0; i < V; i++) mx = fmax(mx, logits[i]);
        for (int i = 0; i < V; i++) s += exp(logits[i] - mx);
        loss += (mx + log(s) - logits[prompt[t + 1]]) / (np - 1);
    }
    tg_st_writer *w = tg_st_writer_new();
    int64_t shape[2] = {1, np - 1};
    tg_st_writer_add(w, "idx", "I32", 2, shape, prompt);
    tg_st_writer_add(w, "targets", "I32", 2, shape, prompt + 1);
    tg_error err = {0};
    const int rc = tg_st_writer_save(w, path, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    else printf("loss %.9g\n", loss);
    tg_st_writer_free(w);
    return rc ? 1 : 0;
}

/* Greedy generation: the prompt teacher-forced, then argmax until BOS. */
static void generate(model *m, const int *prompt, int np, int steps, float *logits)
{
    const int V = m->c.vocab;
    int token = prompt[0];
    for (int pos = 0; pos < steps; pos++) {
        forward(m, token, pos, logits);
        int next = 0;
        if (pos < np - 1) next = prompt[pos + 1];
        else
            for (int i = 1; i < V; i++)
                if (logits[i] > logits[next]) next = i;
        if (next == 1) break;
        print_piece(token, next);
        token = next;
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--encode")) {
        const int V = read_tokenizer(argv[2], -1);
        size_t cap = 1 << 16, n = 0;
        char *text = malloc(cap + 1);
        for (size_t got; (got = fread(text + n, 1, cap - n, stdin)) > 0;)
            if ((n += got) == cap) text = realloc(text, (cap *= 2) + 1);
        text[n] = 0;
        int *ids = malloc((strlen(text) + 3) * sizeof *ids);
        const int k = encode(text, V, ids);
        for (int i = 0; i < k; i++) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
        free(ids);
        free(text);
        free_tokenizer();
        return 0;
    }
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: llama2c_run MODEL TOKENIZER PROMPT STEPS [BATCH]\n");
        return 1;
    }
    model m;
    load(&m, argv[1], argv[2]);
    const int V = m.c.vocab, steps = atoi(argv[4]) < m.c.seq ? atoi(argv[4]) : m.c.seq;
    if (V > 65536 || m.c.dim > 4096 || m.c.hidden > 16384 || m.c.seq > 4096) {
        fprintf(stderr, "llama2c_run: the model is larger than this test reader handles\n");
        return 1;
    }
    int *prompt = malloc((strlen(argv[3]) * 3 + 3) * sizeof *prompt);
    const int np = encode(argv[3], V, prompt);
    float *logits = malloc((size_t)V * sizeof *logits);
    const int rc = argc == 6 ? score(&m, prompt, np, logits, argv[5]) : (generate(&m, prompt, np, steps, logits), 0);
    free(logits);
    free(prompt);
    free(m.kc);
    free(m.vc);
    free(m.file);
    free_tokenizer();
    return rc;
}
