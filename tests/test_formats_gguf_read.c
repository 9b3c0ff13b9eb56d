/* formats: the GGUF reader (formats/gguf_parse.c, gguf_read.c,
 * gguf_read_vocab.c) on files crafted here byte by byte, which no writer
 * would make: each must be refused naming what is wrong, in time and
 * memory in proportion to the file, writing nothing.
 *
 * - Signed integer keys (I8, I16, I32) are read with their sign: -1 is
 *   -1, not a shift past the width (UBSan's build checks the read).
 * - Every tensor's data must follow the one before it (llama.cpp's
 *   layout), so no two tensors share bytes: a 0.7 MB file whose 8,000
 *   tensors all point at the same bytes, describing a Llama of 1e9
 *   parameters, is refused at once, in a process that may not map more
 *   than 256 MB (ASan's build, which maps terabytes of shadow, only times
 *   it); every tensor the model needs is checked present, of its shape,
 *   before anything is allocated.
 * - A name given twice (a tensor, a key) is refused naming it, as
 *   llama.cpp refuses it.
 * - A token type outside GGUF's numbers is named as it is (99, -1); an
 *   epsilon is shown with the digits that tell it from tapegrad's. */
#include "tg_test.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define ERRLEN 2048

enum { GU8, GI8, GU16, GI16, GU32, GI32, GF32, GBOOL, GSTRING, GARRAY, GU64, GI64, GF64 }; /* GGUF's value types */
enum { Q_F32 = 0, Q_Q8_0 = 8 }; /* ggml's tensor types */

/* ---- a GGUF writer for crafted files ---------------------------------------- */

/* a growing buffer of bytes and a count of what it holds (key-values, tensor infos) */
typedef struct gw {
    unsigned char *p;
    size_t len, cap;
    uint64_t n;
} gw;

static void w_put(gw *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        ck_assert(b->p != NULL);
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}
static void w_u32(gw *b, uint32_t v) { w_put(b, &v, 4); }
static void w_u64(gw *b, uint64_t v) { w_put(b, &v, 8); }
static void w_str(gw *b, const char *s) { w_u64(b, strlen(s)), w_put(b, s, strlen(s)); }
static void w_key(gw *b, const char *key, uint32_t type) { w_str(b, key), w_u32(b, type), b->n++; }

/* key = x as a number of GGUF type `type` (an integer type, F32, F64 or BOOL) */
static void w_num(gw *b, const char *key, uint32_t type, double x)
{
    w_key(b, key, type);
    const int64_t i = (int64_t)x;
    const float f = (float)x;
    switch (type) {
    case GU8:
    case GI8:
    case GBOOL: w_put(b, &(int8_t){(int8_t)i}, 1); break;
    case GU16:
    case GI16: w_put(b, &(int16_t){(int16_t)i}, 2); break;
    case GU32:
    case GI32: w_put(b, &(int32_t){(int32_t)i}, 4); break;
    case GF32: w_put(b, &f, 4); break;
    case GF64: w_put(b, &x, 8); break;
    default: w_put(b, &i, 8);
    }
}
static void w_string(gw *b, const char *key, const char *s) { w_key(b, key, GSTRING), w_str(b, s); }
/* key = an array of n values of fixed-size type elem (size bytes each) */
static void w_array(gw *b, const char *key, uint32_t elem, uint64_t n, const void *v, size_t size)
{
    w_key(b, key, GARRAY), w_u32(b, elem), w_u64(b, n), w_put(b, v, n * size);
}
static void w_strings(gw *b, const char *key, uint64_t n, const char *const *s)
{
    w_key(b, key, GARRAY), w_u32(b, GSTRING), w_u64(b, n);
    for (uint64_t i = 0; i < n; i++) w_str(b, s[i]);
}
static void w_tinfo(gw *b, const char *name, uint32_t ndim, const uint64_t *dims, uint32_t type, uint64_t offset)
{
    w_str(b, name), w_u32(b, ndim);
    for (uint32_t d = 0; d < ndim; d++) w_u64(b, dims[d]);
    w_u32(b, type), w_u64(b, offset);
    b->n++;
}
/* "GGUF", version 3, the counts, the key-values, the tensor infos, padding
 * to 32 bytes, then data (dlen bytes). */
static void w_file(const char *path, const gw *kv, const gw *ti, const void *data, size_t dlen)
{
    gw f = {0};
    w_put(&f, "GGUF", 4), w_u32(&f, 3), w_u64(&f, ti->n), w_u64(&f, kv->n);
    w_put(&f, kv->p, kv->len), w_put(&f, ti->p, ti->len);
    static const unsigned char zero[32];
    w_put(&f, zero, (32 - f.len % 32) % 32);
    if (dlen) w_put(&f, data, dlen);
    FILE *o = fopen(path, "wb");
    ck_assert(o && fwrite(f.p, 1, f.len, o) == f.len && fclose(o) == 0);
    free(f.p);
}

/* ---- a crafted Llama ---------------------------------------------------------- */

/* What a Llama file holds: its sizes, its tensors' type (F32 or Q8_0
 * matrices; the norms are F32), whether every tensor's data starts at
 * offset 0 (shared) rather than after the one before; and the keys to
 * write differently (type, value) or add, and a tensor to leave out. */
typedef struct kover {
    const char *key;
    uint32_t type;
    double x;
} kover;
typedef struct llama_file {
    int C, H, L, V, T;
    uint32_t type;
    bool shared;
    kover keys[4];
    const char *skip; /* this tensor is not written */
    const char *twice; /* this tensor is written twice */
    const char *key_twice; /* this key is written again, = 1 as U32 */
    void (*vocab)(gw *kv);
} llama_file;

/* key = x as GGUF type `type`, unless o overrides it (or drops it: type ~0) */
static void w_key_of(gw *b, const llama_file *o, const char *key, uint32_t type, double x)
{
    for (int i = 0; i < 4 && o->keys[i].key; i++)
        if (!strcmp(o->keys[i].key, key)) type = o->keys[i].type, x = o->keys[i].x;
    if (type != ~0u) w_num(b, key, type, x);
}

static uint64_t tensor_bytes(uint32_t type, uint64_t numel) { return type == Q_Q8_0 ? numel / 32 * 34 : numel * 4; }

static void write_llama(const char *path, const llama_file *o)
{
    gw kv = {0}, ti = {0};
    w_string(&kv, "general.architecture", "llama");
    w_key_of(&kv, o, "llama.embedding_length", GU32, o->C);
    w_key_of(&kv, o, "llama.feed_forward_length", GU32, o->H);
    w_key_of(&kv, o, "llama.block_count", GU32, o->L);
    w_key_of(&kv, o, "llama.attention.head_count", GU32, 1);
    w_key_of(&kv, o, "llama.attention.head_count_kv", GU32, 1);
    w_key_of(&kv, o, "llama.context_length", GU32, o->T);
    w_key_of(&kv, o, "llama.rope.dimension_count", GU32, o->C);
    w_key_of(&kv, o, "llama.attention.layer_norm_rms_epsilon", GF32, 1e-5);
    for (int i = 0; i < 4 && o->keys[i].key; i++) /* keys the Llama does not have: added */
        if (strncmp(o->keys[i].key, "llama.", 6)) w_num(&kv, o->keys[i].key, o->keys[i].type, o->keys[i].x);
    if (o->key_twice) w_num(&kv, o->key_twice, GU32, 1);
    if (o->vocab) o->vocab(&kv);
    static const char *const part[9] = {"attn_norm", "attn_q",   "attn_k",   "attn_v", "attn_output",
                                        "ffn_norm",  "ffn_gate", "ffn_down", "ffn_up"};
    const uint64_t C = (uint64_t)o->C, H = (uint64_t)o->H;
    const uint64_t shape[9][2] = {{C, 0}, {C, C}, {C, C}, {C, C}, {C, C}, {C, 0}, {C, H}, {H, C}, {C, H}};
    uint64_t off = 0, most = 0;
    char name[64];
    for (int k = -1; k <= o->L; k++)
        for (int j = 0; j < (k >= 0 && k < o->L ? 9 : 1); j++) {
            uint64_t dims[2] = {C, k < 0 ? (uint64_t)o->V : 0};
            if (k < 0) snprintf(name, sizeof name, "token_embd.weight");
            else if (k == o->L) snprintf(name, sizeof name, "output_norm.weight");
            else
                snprintf(name, sizeof name, "blk.%d.%s.weight", k, part[j]), dims[0] = shape[j][0],
                                                                             dims[1] = shape[j][1];
            const uint32_t nd = dims[1] ? 2 : 1, type = nd == 2 ? o->type : Q_F32;
            const uint64_t nb = tensor_bytes(type, dims[0] * (nd == 2 ? dims[1] : 1));
            for (int rep = 0; rep < (o->twice && !strcmp(name, o->twice) ? 2 : 1); rep++) {
                if (o->skip && !strcmp(name, o->skip)) continue;
                w_tinfo(&ti, name, nd, dims, type, o->shared ? 0 : off);
                if (!o->shared) off += (nb + 31) / 32 * 32;
                if (nb > most) most = nb;
            }
        }
    const size_t dlen = o->shared ? (size_t)most : (size_t)off;
    unsigned char *data = calloc(dlen ? dlen : 1, 1); /* zeros: finite in every type */
    w_file(path, &kv, &ti, data, dlen);
    free(data);
    free(kv.p);
    free(ti.p);
}

/* the import of path: -1 with its message in err, and no checkpoint written */
static void refused(const char *path, tg_error *err)
{
    remove(tt_path("out.safetensors"));
    ck_assert_int_eq(tg_gguf_import(path, tt_path("out.safetensors"), TG_F32, err), -1);
    ck_assert_int_eq(access(tt_path("out.safetensors"), F_OK), -1);
}

static const llama_file SMALL = {.C = 32, .H = 64, .L = 2, .V = 8, .T = 16, .type = Q_F32};

START_TEST(a_crafted_llama_imports)
{
    tg_error err = {0};
    write_llama(tt_path("ok.gguf"), &SMALL);
    ck_assert_msg(tg_gguf_import(tt_path("ok.gguf"), tt_path("ok.safetensors"), TG_F32, &err) == 0, "%s", err.msg);
    remove(tt_path("ok.safetensors"));
}
END_TEST

START_TEST(signed_keys_keep_their_sign)
{
    tg_error err = {0};
    static const struct {
        const char *key;
        uint32_t type;
        double x;
        const char *want;
    } cases[] = {
        {"llama.block_count", GI32, -1, "key 'llama.block_count' = -1 is outside [1, 16777216]"},
        {"llama.attention.head_count", GI16, -1, "key 'llama.attention.head_count' = -1 is outside"},
        {"llama.feed_forward_length", GI8, -128, "key 'llama.feed_forward_length' = -128 is outside"},
        {"general.alignment", GI32, -32, "key 'general.alignment' = -32 is outside"},
        {"llama.context_length", GI64, -5, "key 'llama.context_length' = -5 is outside"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        llama_file o = SMALL;
        o.keys[0] = (kover){cases[i].key, cases[i].type, cases[i].x};
        write_llama(tt_path("neg.gguf"), &o);
        refused(tt_path("neg.gguf"), &err);
        ck_assert_msg(strstr(err.msg, cases[i].want), "case %zu: %s", i, err.msg);
    }
    /* a signed value in range is taken: head_count_kv 1 as I8 */
    llama_file o = SMALL;
    o.keys[0] = (kover){"llama.attention.head_count_kv", GI8, 1};
    write_llama(tt_path("i8.gguf"), &o);
    ck_assert_msg(tg_gguf_import(tt_path("i8.gguf"), tt_path("i8.safetensors"), TG_F32, &err) == 0, "%s", err.msg);
    remove(tt_path("i8.safetensors"));
}
END_TEST

/* The import of path in a child process that may map at most `room`
 * bytes more than it has: its message into err; the seconds it took. */
static double import_in_a_small_room(const char *path, size_t room, char *err, int *status)
{
    int fd[2];
    ck_assert(pipe(fd) == 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        unsigned long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r"); /* its size now, in pages (ASan's shadow is mapped already) */
        if (!f || fscanf(f, "%lu", &pages) != 1) _exit(3);
        fclose(f);
        const rlim_t most = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + room;
        if (setrlimit(RLIMIT_AS, &(struct rlimit){most, most})) _exit(4);
        tg_error e = {0};
        const int rc = tg_gguf_import(path, tt_path("big.safetensors"), TG_F32, &e);
        const ssize_t w = write(fd[1], e.msg, strlen(e.msg) + 1);
        _exit(rc == -1 && w > 0 ? 0 : 1);
    }
    close(fd[1]);
    ssize_t n = 0, r;
    while (n < ERRLEN - 1 && (r = read(fd[0], err + n, (size_t)(ERRLEN - 1 - n))) > 0) n += r;
    err[n] = 0;
    close(fd[0]);
    ck_assert(waitpid(pid, status, 0) == pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

START_TEST(tensors_that_share_bytes_are_refused_at_once)
{
    /* 950 blocks of C 256 and SwiGLU 1024 in Q8_0: 1.0e9 parameters (4 GB as f32) in a 0.8 MB file
     * whose 8,552 tensors all start at offset 0 */
    tg_error err = {0};
    const llama_file o = {.C = 256, .H = 1024, .L = 950, .V = 32, .T = 16, .type = Q_Q8_0, .shared = true};
    write_llama(tt_path("big.gguf"), &o);
    struct stat st;
    ck_assert(stat(tt_path("big.gguf"), &st) == 0 && st.st_size < 1000000);
    int status;
    const double s = import_in_a_small_room(tt_path("big.gguf"), 256u << 20, err.msg, &status);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the import %s (wait status %d) in %.2f s: %s",
                  WIFEXITED(status) ? "was not refused with a message" : "died", status, s, err.msg);
    ck_assert_msg(strstr(err.msg,
                         "tensor 'blk.0.attn_norm.weight': its data is at offset 0 of the data section, where "
                         "the tensors before it end at 8704"),
                  "%s", err.msg);
    ck_assert_msg(s < 2.0, "%.2f s", s);
    ck_assert_int_eq(access(tt_path("big.safetensors"), F_OK), -1);
    remove(tt_path("big.gguf"));
}
END_TEST

START_TEST(every_tensor_is_checked_before_the_model_is_built)
{
    tg_error err = {0};
    llama_file o = SMALL;
    o.skip = "blk.1.ffn_up.weight";
    write_llama(tt_path("miss.gguf"), &o);
    refused(tt_path("miss.gguf"), &err);
    ck_assert_msg(strstr(err.msg, "the file has no tensor 'blk.1.ffn_up.weight' (the Llama its keys describe has it)"),
                  "%s", err.msg);
    o = SMALL;
    o.keys[0] = (kover){"llama.feed_forward_length", GU32, 48};
    write_llama(tt_path("shape.gguf"), &o);
    refused(tt_path("shape.gguf"), &err);
    ck_assert_msg(strstr(err.msg,
                         "tensor 'blk.0.ffn_gate.weight' is [32, 64] where the model its keys describe has "
                         "[32, 48]"),
                  "%s", err.msg);
    /* a Llama of 1e9 parameters whose file holds one block of it: refused before 4 GB are allocated */
    o = (llama_file){.C = 256, .H = 1024, .L = 950, .V = 32, .T = 16, .type = Q_Q8_0};
    o.keys[0] = (kover){"llama.block_count", GU32, 950};
    o.L = 1;
    write_llama(tt_path("few.gguf"), &o);
    int status;
    const double s = import_in_a_small_room(tt_path("few.gguf"), 256u << 20, err.msg, &status);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                      strstr(err.msg, "no tensor 'blk.1.attn_norm.weight'"),
                  "status %d in %.2f s: %s", status, s, err.msg);
}
END_TEST

/* a "llama" vocabulary of 8 pieces whose id 1 has the type bad_type */
static int32_t bad_type;
static void vocab_bad_type(gw *kv)
{
    static const char *const tok[8] = {"<unk>", "<s>", "</s>", "a", "b", "c", "ab", "abc"};
    const float scores[8] = {0};
    int32_t types[8] = {2, 3, 3, 1, 1, 1, 1, 1};
    types[1] = bad_type;
    w_string(kv, "tokenizer.ggml.model", "llama");
    w_strings(kv, "tokenizer.ggml.tokens", 8, tok);
    w_array(kv, "tokenizer.ggml.scores", GF32, 8, scores, 4);
    w_array(kv, "tokenizer.ggml.token_type", GI32, 8, types, 4);
}

START_TEST(a_token_type_is_named_as_it_is)
{
    tg_error err = {0};
    char want[200];
    static const int32_t bad[2] = {99, -1};
    for (int i = 0; i < 2; i++) {
        llama_file o = SMALL;
        bad_type = bad[i];
        o.vocab = vocab_bad_type;
        write_llama(tt_path("type.gguf"), &o);
        refused(tt_path("type.gguf"), &err);
        snprintf(want, sizeof want,
                 "key 'tokenizer.ggml.token_type': id 1 has type %d, not one of GGUF's (1 normal, "
                 "2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte)",
                 (int)bad[i]);
        ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
    }
}
END_TEST

START_TEST(a_name_given_twice_is_refused)
{
    tg_error err = {0};
    llama_file o = SMALL;
    o.twice = "blk.1.attn_q.weight";
    write_llama(tt_path("twice.gguf"), &o);
    refused(tt_path("twice.gguf"), &err);
    ck_assert_msg(strstr(err.msg,
                         "tensor 'blk.1.attn_q.weight' is given twice (tensor infos 11 and 12): llama.cpp "
                         "refuses such a file"),
                  "%s", err.msg);
    o = SMALL;
    o.key_twice = "llama.block_count";
    write_llama(tt_path("twice.gguf"), &o);
    refused(tt_path("twice.gguf"), &err);
    ck_assert_msg(strstr(err.msg, "key 'llama.block_count' is given twice (key-values 3 and 9)"), "%s", err.msg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("formats_gguf_read");
    tt_tcase(s, "gguf_read", 120,
             TT_TESTS(a_crafted_llama_imports, signed_keys_keep_their_sign, a_name_given_twice_is_refused,
                      tensors_that_share_bytes_are_refused_at_once, every_tensor_is_checked_before_the_model_is_built,
                      a_token_type_is_named_as_it_is));
    return tt_run_in_tmpdir(s, "tg_gguf_read_test", true);
}
