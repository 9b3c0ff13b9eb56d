/* core: safetensors files. Round trips bit-exact, a file built byte by
 * byte from the format's spec (as PyTorch's safetensors writes them), every
 * validation the reader makes on corrupt or truncated files, conversions,
 * and atomic saves that leave the old file alone when they fail. */
#include "tg_test.h"

#include <errno.h>
#include <float.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- scratch directory and file helpers ---------------------------------- */

#define P tt_path /* a file in the scratch directory */

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* The whole file (malloc'd), its size in *n. */
static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)size + 1);
    ck_assert_uint_eq(fread(p, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *n = (size_t)size;
    return p;
}

/* A file: the 8-byte little-endian length `claimed`, then the header
 * text, then ndata bytes. */
static void write_st_claim(const char *path, uint64_t claimed, const char *header, const void *data, size_t ndata)
{
    size_t h = strlen(header);
    unsigned char *p = malloc(8 + h + ndata + 1);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(claimed >> (8 * i));
    memcpy(p + 8, header, h);
    if (ndata) memcpy(p + 8 + h, data, ndata);
    write_bytes(path, p, 8 + h + ndata);
    free(p);
}

static void write_st(const char *path, const char *header, const void *data, size_t ndata)
{
    write_st_claim(path, strlen(header), header, data, ndata);
}

/* Loading path must fail with a message containing needle. */
#define assert_load_fails(path, needle)                                                                                \
    do {                                                                                                               \
        tg_error e_ = {0};                                                                                             \
        tg_st_file *f_ = tg_st_load((path), &e_);                                                                      \
        ck_assert_msg(f_ == NULL, "'%s' loaded; expected '%s'", (path), (needle));                                     \
        ck_assert_msg(strstr(e_.msg, (needle)) != NULL, "error '%s' lacks '%s'", e_.msg, (needle));                    \
        ck_assert_msg(strncmp(e_.msg, "safetensors: ", 13) == 0, "error '%s' lacks the prefix", e_.msg);               \
    } while (0)

/* A header with one F32 tensor entry "a" written as `entry`, data ndata
 * bytes of zeros: loading must fail with needle. */
static void one_entry_fails(const char *entry, size_t ndata, const char *needle)
{
    char header[512];
    snprintf(header, sizeof header, "{\"a\":%s}", entry);
    unsigned char zeros[64] = {0};
    write_st(P("bad.safetensors"), header, zeros, ndata);
    assert_load_fails(P("bad.safetensors"), needle);
}

static tg_st_file *load_ok(const char *path)
{
    tg_error err = {0};
    tg_st_file *f = tg_st_load(path, &err);
    ck_assert_msg(f != NULL, "load '%s': %s", path, err.msg);
    return f;
}

static void assert_shape(const tg_st_tensor *e, int ndim, const int64_t *shape)
{
    ck_assert_int_eq(e->ndim, ndim);
    for (int d = 0; d < ndim; d++) ck_assert_int_eq(e->shape[d], shape[d]);
}

/* ---- round trips ----------------------------------------------------------- */

START_TEST(round_trip_is_bit_exact)
{
    /* values chosen to catch any conversion: -0, denormals, inf, NaN payloads, extremes */
    uint32_t nan_bits = 0x7fc01234u;
    float f32v[6] = {1.0f, -0.0f, 1e-45f, FLT_MAX, INFINITY, 0};
    memcpy(&f32v[5], &nan_bits, 4);
    double f64v[4] = {1.0 / 3.0, -0.0, DBL_MIN / 4, -1e300};
    int32_t i32v[3] = {INT32_MIN, -1, INT32_MAX};
    int64_t i64v[2] = {INT64_MIN, (int64_t)1 << 40};
    uint8_t u8v[5] = {0, 1, 127, 200, 255};
    float scalar = 2.5f;

    tg_st_writer *w = tg_st_writer_new();
    ck_assert_int_eq(tg_st_writer_add(w, "f32", "F32", 2, (int64_t[]){2, 3}, f32v), 0);
    ck_assert_int_eq(tg_st_writer_add(w, "f64", "F64", 1, (int64_t[]){4}, f64v), 0);
    ck_assert_int_eq(tg_st_writer_add(w, "i32", "I32", 3, (int64_t[]){1, 3, 1}, i32v), 0);
    ck_assert_int_eq(tg_st_writer_add(w, "i64", "I64", 1, (int64_t[]){2}, i64v), 0);
    ck_assert_int_eq(tg_st_writer_add(w, "u8 \"quoted\\name\"\n", "U8", 1, (int64_t[]){5}, u8v), 0);
    ck_assert_int_eq(tg_st_writer_add(w, "scalar", "F32", 0, NULL, &scalar), 0);
    ck_assert_int_eq(tg_st_writer_add(w, "empty", "F32", 3, (int64_t[]){2, 0, 3}, NULL), 0);
    ck_assert_int_eq(tg_st_writer_add_meta(w, "format", "pt"), 0);
    ck_assert_int_eq(tg_st_writer_add_meta(w, "note", "tab\there \"q\" \\ caf\xc3\xa9"), 0);
    tg_error err = {0};
    ck_assert_msg(tg_st_writer_save(w, P("rt.safetensors"), &err) == 0, "%s", err.msg);
    tg_st_writer_free(w);

    /* the layout, read back by hand: header length a multiple of 8 padded
     * with spaces after the closing brace, data contiguous right after the
     * header, 8-byte elements first, then 4 and 1 (insertion order within
     * each), so every tensor is aligned to its element size */
    size_t n;
    unsigned char *raw = read_bytes(P("rt.safetensors"), &n);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | raw[i];
    ck_assert_uint_eq(hl % 8, 0);
    size_t last = 8 + hl - 1;
    while (raw[last] == ' ') last--;
    ck_assert_int_eq(raw[last], '}');
    ck_assert_uint_lt(8 + hl - 1 - last, 8); /* fewer than 8 spaces of padding */
    size_t data_bytes = sizeof f32v + sizeof f64v + sizeof i32v + sizeof i64v + sizeof u8v + sizeof scalar;
    ck_assert_uint_eq(n, 8 + hl + data_bytes);
    const unsigned char *d = raw + 8 + hl;
    ck_assert_mem_eq(d, f64v, sizeof f64v);
    ck_assert_mem_eq(d + 32, i64v, sizeof i64v);
    ck_assert_mem_eq(d + 48, f32v, sizeof f32v);
    ck_assert_mem_eq(d + 72, i32v, sizeof i32v);
    ck_assert_mem_eq(d + 84, &scalar, 4);
    ck_assert_mem_eq(d + 88, u8v, sizeof u8v);
    free(raw);

    tg_st_file *f = load_ok(P("rt.safetensors"));
    ck_assert_int_eq(tg_st_count(f), 7);
    const char *names[] = {"f32", "f64", "i32", "i64", "u8 \"quoted\\name\"\n", "scalar", "empty"};
    for (int i = 0; i < 7; i++) ck_assert_str_eq(tg_st_at(f, i)->name, names[i]); /* header order */
    ck_assert_ptr_null(tg_st_at(f, 7));

    const tg_st_tensor *e = tg_st_find(f, "f32");
    ck_assert_str_eq(e->dtype, "F32");
    assert_shape(e, 2, (int64_t[]){2, 3});
    ck_assert_int_eq(e->numel, 6);
    ck_assert_uint_eq(e->nbytes, 24);
    ck_assert_mem_eq(e->data, f32v, sizeof f32v);
    e = tg_st_find(f, "f64");
    ck_assert_str_eq(e->dtype, "F64");
    ck_assert_mem_eq(e->data, f64v, sizeof f64v);
    e = tg_st_find(f, "i32");
    ck_assert_str_eq(e->dtype, "I32");
    assert_shape(e, 3, (int64_t[]){1, 3, 1});
    ck_assert_mem_eq(e->data, i32v, sizeof i32v);
    e = tg_st_find(f, "i64");
    ck_assert_str_eq(e->dtype, "I64");
    ck_assert_mem_eq(e->data, i64v, sizeof i64v);
    e = tg_st_find(f, "u8 \"quoted\\name\"\n");
    ck_assert_str_eq(e->dtype, "U8");
    ck_assert_mem_eq(e->data, u8v, sizeof u8v);
    e = tg_st_find(f, "scalar");
    ck_assert_int_eq(e->ndim, 0);
    ck_assert_int_eq(e->numel, 1);
    ck_assert_uint_eq(e->nbytes, 4);
    ck_assert_mem_eq(e->data, &scalar, 4);
    e = tg_st_find(f, "empty");
    assert_shape(e, 3, (int64_t[]){2, 0, 3});
    ck_assert_int_eq(e->numel, 0);
    ck_assert_uint_eq(e->nbytes, 0);

    ck_assert_str_eq(tg_st_meta(f, "format"), "pt");
    ck_assert_str_eq(tg_st_meta(f, "note"), "tab\there \"q\" \\ caf\xc3\xa9");
    ck_assert_ptr_null(tg_st_meta(f, "absent"));
    ck_assert_ptr_null(tg_st_find(f, "absent"));
    /* the entries one by one, in the file's order */
    ck_assert_int_eq(tg_st_meta_count(f), 2);
    const char *v, *k = tg_st_meta_at(f, 0, &v);
    ck_assert_str_eq(k, "format");
    ck_assert_str_eq(v, "pt");
    ck_assert_str_eq(tg_st_meta_at(f, 1, &v), "note");
    ck_assert_str_eq(v, tg_st_meta(f, "note"));
    ck_assert_ptr_null(tg_st_meta_at(f, 2, &v));
    ck_assert_ptr_null(v);
    ck_assert_ptr_null(tg_st_meta_at(f, -1, NULL));
    ck_assert_int_eq(tg_st_meta_count(NULL), 0);
    tg_st_free(f);
    ck_assert_int_eq(tt_count_names(tt_dir, ".tmp."), 0);
}
END_TEST

START_TEST(tapegrad_tensors_round_trip)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3)); /* (2,3) */
    tg_tensor *b = tg_tensor_new(g, TG_F64, TT_SHAPE(3)); /* (3) */
    tg_tensor *c = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 2)); /* (2,2) */
    tg_tensor *m = tg_tensor_new(g, TG_BOOL, TT_SHAPE(2, 2)); /* (2,2) */
    tg_tensor *s = tg_scalar(g, TG_F64, -7.125); /* () */
    for (int i = 0; i < 6; i++) ((float *)a->data)[i] = (float)i / 7 - 0.3f;
    for (int i = 0; i < 3; i++) ((double *)b->data)[i] = 1.0 / (i + 3);
    for (int i = 0; i < 4; i++) ((int32_t *)c->data)[i] = i * 1000003 - 5;
    for (int i = 0; i < 4; i++) ((uint8_t *)m->data)[i] = (uint8_t)(i & 1);

    tg_st_writer *w = tg_st_writer_new();
    tg_st_writer_add_tensor(w, "a", a);
    tg_st_writer_add_tensor(w, "b", b);
    tg_st_writer_add_tensor(w, "c", c);
    tg_st_writer_add_tensor(w, "m", m);
    tg_st_writer_add_tensor(w, "s", s);
    tg_error err = {0};
    ck_assert_msg(tg_st_writer_save(w, P("tg.safetensors"), &err) == 0, "%s", err.msg);
    tg_st_writer_free(w);

    tg_st_file *f = load_ok(P("tg.safetensors"));
    ck_assert_str_eq(tg_st_find(f, "a")->dtype, "F32");
    ck_assert_str_eq(tg_st_find(f, "b")->dtype, "F64");
    ck_assert_str_eq(tg_st_find(f, "c")->dtype, "I32");
    ck_assert_str_eq(tg_st_find(f, "m")->dtype, "U8");
    ck_assert_int_eq(tg_st_find(f, "s")->ndim, 0);
    tg_tensor *a2 = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3)); /* (2,3) */
    tg_tensor *b2 = tg_tensor_new(g, TG_F64, TT_SHAPE(3)); /* (3) */
    tg_tensor *c2 = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 2)); /* (2,2) */
    tg_tensor *m2 = tg_tensor_new(g, TG_BOOL, TT_SHAPE(2, 2)); /* (2,2) */
    tg_tensor *s2 = tg_scalar(g, TG_F64, 0); /* () */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "a"), a2, &err), 0);
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "b"), b2, &err), 0);
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "c"), c2, &err), 0);
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "m"), m2, &err), 0);
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "s"), s2, &err), 0);
    ck_assert_mem_eq(a2->data, a->data, 24);
    ck_assert_mem_eq(b2->data, b->data, 24);
    ck_assert_mem_eq(c2->data, c->data, 16);
    ck_assert_mem_eq(m2->data, m->data, 4);
    ck_assert_double_eq(tg_tensor_item(s2), -7.125);

    /* F32 -> f64 widens exactly */
    tg_tensor *a64 = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 3)); /* (2,3) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "a"), a64, &err), 0);
    for (int i = 0; i < 6; i++) ck_assert(((double *)a64->data)[i] == (double)((float *)a->data)[i]);
    tg_st_free(f);
    tg_graph_free(g);
}
END_TEST

static void fill_params(tg_params *p, double base)
{
    for (int i = 0; i < tg_params_count(p); i++) {
        tg_tensor *t = tg_params_at(p, i);
        for (int64_t j = 0; j < t->numel; j++) {
            double v = base + sin(1.7 * (double)j + i) * 3;
            if (t->dtype == TG_F32) ((float *)t->data)[j] = (float)v;
            else ((double *)t->data)[j] = v;
        }
    }
}

static tg_params *gpt_like_params(tg_dtype dt)
{
    tg_params *p = tg_params_new(dt, NULL);
    tg_params_add(p, "transformer.wte.weight", TT_SHAPE(10, 4), NULL);
    tg_params_add(p, "transformer.h.0.attn.c_attn.weight", TT_SHAPE(12, 4), NULL);
    tg_params_add(p, "transformer.h.0.attn.c_attn.bias", TT_SHAPE(12), NULL);
    tg_params_add(p, "transformer.ln_f.weight", TT_SHAPE(4), NULL);
    ck_assert_int_eq(tg_params_count(p), 4);
    return p;
}

START_TEST(params_round_trip_and_errors)
{
    for (int k = 0; k < 2; k++) {
        tg_dtype dt = k ? TG_F64 : TG_F32;
        tg_params *p = gpt_like_params(dt);
        fill_params(p, 0.25);
        tg_error err = {0};
        const char *meta[] = {"format", "pt", "step", "1200"};
        ck_assert_msg(tg_st_save_params(p, P("params.safetensors"), meta, 2, &err) == 0, "%s", err.msg);

        tg_st_file *f = load_ok(P("params.safetensors"));
        ck_assert_int_eq(tg_st_count(f), 4);
        ck_assert_str_eq(tg_st_find(f, "transformer.h.0.attn.c_attn.weight")->dtype, k ? "F64" : "F32");
        assert_shape(tg_st_find(f, "transformer.h.0.attn.c_attn.weight"), 2, (int64_t[]){12, 4});
        ck_assert_str_eq(tg_st_meta(f, "step"), "1200");
        tg_params *q = gpt_like_params(dt);
        ck_assert_msg(tg_st_load_params(q, f, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(tg_params_numel(q), 40 + 48 + 12 + 4);
        ck_assert_mem_eq(tg_params_data(q), tg_params_data(p), (size_t)tg_params_numel(p) * tg_dtype_size(dt));

        /* F32 <-> F64 across stores: values converted like a C cast */
        tg_params *r = gpt_like_params(k ? TG_F32 : TG_F64);
        ck_assert_msg(tg_st_load_params(r, f, &err) == 0, "%s", err.msg);
        for (int64_t j = 0; j < tg_params_numel(p); j++) {
            if (k) ck_assert(((float *)tg_params_data(r))[j] == (float)((double *)tg_params_data(p))[j]);
            else ck_assert(((double *)tg_params_data(r))[j] == (double)((float *)tg_params_data(p))[j]);
        }
        tg_params_free(r);
        tg_params_free(q);

        /* a store with an extra parameter: missing from the file, nothing written */
        tg_params *x = gpt_like_params(dt);
        tg_params_add(x, "lm_head.extra", TT_SHAPE(2), NULL);
        ck_assert_int_eq(tg_st_load_params(x, f, &err), -1);
        ck_assert_str_eq(err.msg, "safetensors: parameter 'lm_head.extra' is missing from the file");
        for (int i = 0; i < tg_params_count(x); i++)
            for (int64_t j = 0; j < tg_params_at(x, i)->numel; j++)
                ck_assert(tg_tensor_get(tg_params_at(x, i), j) == 0);
        tg_params_free(x);

        /* a shape mismatch on the last parameter: error names both shapes; the
         * earlier ones were not written */
        tg_params *y = tg_params_new(dt, NULL);
        tg_params_add(y, "transformer.wte.weight", TT_SHAPE(10, 4), NULL);
        tg_params_add(y, "transformer.ln_f.weight", TT_SHAPE(2, 2), NULL);
        ck_assert_int_eq(tg_st_load_params(y, f, &err), -1);
        ck_assert_str_eq(err.msg,
                         "safetensors: tensor 'transformer.ln_f.weight': shape (4) in the file does not "
                         "match (2,2) of the destination");
        for (int64_t j = 0; j < 40; j++) ck_assert(tg_tensor_get(tg_params_at(y, 0), j) == 0);
        tg_params_free(y);

        /* tensors in the file that the store lacks are ignored */
        tg_params *z = tg_params_new(dt, NULL);
        tg_params_add(z, "transformer.ln_f.weight", TT_SHAPE(4), NULL);
        ck_assert_int_eq(tg_st_load_params(z, f, &err), 0);
        ck_assert_mem_eq(tg_params_at(z, 0)->data, tg_params_get(p, "transformer.ln_f.weight")->data,
                         4 * tg_dtype_size(dt));
        tg_params_free(z);
        tg_st_free(f);
        tg_params_free(p);
    }
}
END_TEST

/* ---- a file built byte by byte, as PyTorch's safetensors writes it ---------- */

START_TEST(hand_built_file_reads_correctly)
{
    /* compact JSON, __metadata__ first, then the tensors; padded with
     * spaces so that the header length (205 + 3) is a multiple of 8 */
    const char *header = "{\"__metadata__\":{\"format\":\"pt\"},"
                         "\"ids\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,24]},"
                         "\"weight\":{\"dtype\":\"F64\",\"shape\":[2,2],\"data_offsets\":[24,56]},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[56,64]}}   ";
    ck_assert_uint_eq(strlen(header), 208);
    static const unsigned char data[64] = {
        0x07, 0,    0,    0,    0,    0,    0,    0, /* ids:  7 */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /*      -1 */
        0,    0,    0,    0,    0,    0x01, 0,    0, /*       2^40 */
        0,    0,    0,    0,    0,    0,    0xe0, 0x3f, /* weight: 0.5 */
        0,    0,    0,    0,    0,    0,    0x0a, 0xc0, /*        -3.25 */
        0,    0,    0,    0,    0,    0,    0x59, 0x40, /*         100 */
        0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f, /*         0.1 */
        0,    0,    0xc0, 0x3f, /* b: 1.5 */
        0,    0,    0,    0xc0, /*   -2 */
    };
    write_st(P("torch.safetensors"), header, data, sizeof data);
    tg_st_file *f = load_ok(P("torch.safetensors"));
    ck_assert_int_eq(tg_st_count(f), 3);
    ck_assert_str_eq(tg_st_meta(f, "format"), "pt");
    const tg_st_tensor *ids = tg_st_find(f, "ids"), *wt = tg_st_find(f, "weight"), *b = tg_st_find(f, "b");
    ck_assert_str_eq(ids->dtype, "I64");
    ck_assert_str_eq(wt->dtype, "F64");
    ck_assert_str_eq(b->dtype, "F32");
    assert_shape(wt, 2, (int64_t[]){2, 2});
    ck_assert_ptr_eq(b->data, (const unsigned char *)ids->data + 56);

    tg_error err = {0};
    tg_graph *g = tg_graph_new();
    tg_tensor *w64 = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 2)); /* (2,2) */
    ck_assert_int_eq(tg_st_copy_to(wt, w64, &err), 0);
    const double *w = w64->data;
    ck_assert(w[0] == 0.5 && w[1] == -3.25 && w[2] == 100 && w[3] == 0.1);
    tg_tensor *w32 = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 2)); /* (2,2): F64 -> f32 */
    ck_assert_int_eq(tg_st_copy_to(wt, w32, &err), 0);
    const float *v = w32->data;
    ck_assert(v[0] == 0.5f && v[1] == -3.25f && v[2] == 100.0f && v[3] == (float)0.1);
    tg_tensor *b32 = tg_tensor_new(g, TG_F32, TT_SHAPE(2)); /* (2) */
    ck_assert_int_eq(tg_st_copy_to(b, b32, &err), 0);
    ck_assert(((float *)b32->data)[0] == 1.5f && ((float *)b32->data)[1] == -2.0f);

    /* I64 -> i32: 2^40 does not fit; the error names the tensor and element, dst untouched */
    tg_tensor *i32 = tg_tensor_new(g, TG_I32, TT_SHAPE(3)); /* (3) */
    ((int32_t *)i32->data)[0] = 99;
    ck_assert_int_eq(tg_st_copy_to(ids, i32, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: tensor 'ids': element 2 (2) = 1099511627776 does not fit in i32");
    ck_assert_int_eq(((int32_t *)i32->data)[0], 99);
    tg_st_free(f);

    /* the same file with ids = [7, -1, -2^31] converts exactly */
    unsigned char d2[64];
    memcpy(d2, data, 64);
    memcpy(d2 + 16, (unsigned char[]){0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff}, 8);
    write_st(P("torch2.safetensors"), header, d2, sizeof d2);
    f = load_ok(P("torch2.safetensors"));
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "ids"), i32, &err), 0);
    const int32_t *iv = i32->data;
    ck_assert(iv[0] == 7 && iv[1] == -1 && iv[2] == INT32_MIN);
    tg_st_free(f);
    tg_graph_free(g);
}
END_TEST

START_TEST(header_whitespace_and_edge_cases)
{
    /* pretty-printed JSON with a long run of space padding after it */
    const char *pretty = "{\n  \"x\" : { \"shape\" : [ ], \"dtype\" : \"F32\", \"data_offsets\" : [ 0 , 4 ] }\n}"
                         "                 ";
    float one = 1.0f;
    write_st(P("pretty.safetensors"), pretty, &one, 4);
    tg_st_file *f = load_ok(P("pretty.safetensors"));
    ck_assert_int_eq(tg_st_count(f), 1);
    ck_assert_int_eq(tg_st_find(f, "x")->ndim, 0);
    ck_assert_mem_eq(tg_st_find(f, "x")->data, &one, 4);
    ck_assert_ptr_null(tg_st_meta(f, "format"));
    tg_st_free(f);

    /* zero-size tensors (begin == end) anywhere, an empty header, every dtype name */
    const char *zeros = "{\"z0\":{\"dtype\":\"BF16\",\"shape\":[0],\"data_offsets\":[0,0]},"
                        "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                        "\"z1\":{\"dtype\":\"U64\",\"shape\":[3,0],\"data_offsets\":[4,4]}}";
    write_st(P("zeros.safetensors"), zeros, "abcd", 4);
    f = load_ok(P("zeros.safetensors"));
    ck_assert_int_eq(tg_st_count(f), 3);
    ck_assert_int_eq(tg_st_find(f, "z1")->numel, 0);
    ck_assert_uint_eq(tg_st_find(f, "h")->nbytes, 4);
    tg_st_free(f);
    write_st(P("empty.safetensors"), "{}", NULL, 0);
    f = load_ok(P("empty.safetensors"));
    ck_assert_int_eq(tg_st_count(f), 0);
    tg_st_free(f);

    const char *dts[] = {"BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"};
    const int sizes[] = {1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};
    for (int i = 0; i < 13; i++) {
        char h[128];
        snprintf(h, sizeof h, "{\"t\":{\"dtype\":\"%s\",\"shape\":[3],\"data_offsets\":[0,%d]}}", dts[i], 3 * sizes[i]);
        write_st(P("dt.safetensors"), h, "012345678901234567890123", (size_t)(3 * sizes[i]));
        f = load_ok(P("dt.safetensors"));
        ck_assert_str_eq(tg_st_find(f, "t")->dtype, dts[i]);
        tg_st_free(f);
    }
}
END_TEST

/* ---- corrupt and truncated files --------------------------------------------- */

START_TEST(corrupt_files_are_rejected)
{
    /* the file itself */
    assert_load_fails(P("does-not-exist.safetensors"),
                      "does-not-exist.safetensors: cannot open: No such file or directory");
    assert_load_fails(tt_dir, "not a regular file");
    write_bytes(P("short.safetensors"), "\x02\0\0\0\0", 5);
    assert_load_fails(P("short.safetensors"), "file is 5 bytes, too short for the 8-byte header length");
    write_st_claim(P("long.safetensors"), 1000, "{}", NULL, 0);
    assert_load_fails(P("long.safetensors"),
                      "header length 1000 runs past the end of the file (2 bytes after the length)");
    write_st_claim(P("huge.safetensors"), (uint64_t)1 << 62, "{}", NULL, 0);
    assert_load_fails(P("huge.safetensors"), "header length 4611686018427387904 is absurdly large");

    /* the header as a whole */
    write_st(P("bad.safetensors"), "{\"a\": ", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "header is not valid JSON");
    write_st(P("bad.safetensors"), "[1, 2]", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "header is not a JSON object");
    write_st(P("bad.safetensors"), "{} {}", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "header has bytes after the JSON value (byte 3)");
    write_st(P("bad.safetensors"), "{\"\xff\":{}}", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "header is not valid UTF-8 (byte 2)");
    write_st(P("bad.safetensors"), "{\"a\x01\":{}}", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "header has control byte 0x01 at byte 3, which JSON does not allow");

    /* one entry */
    one_entry_fails("3", 0, "tensor 'a': entry is not an object");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[1]}", 4, "tensor 'a': missing field \"data_offsets\"");
    one_entry_fails("{\"shape\":[1],\"data_offsets\":[0,4]}", 4, "tensor 'a': missing field \"dtype\"");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"foo\":1}", 4,
                    "tensor 'a': unexpected field \"foo\"");
    one_entry_fails("{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4,
                    "tensor 'a': field \"dtype\" appears twice");
    one_entry_fails("{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}", 4, "tensor 'a': \"dtype\" is not a string");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}", 4,
                    "tensor 'a': \"shape\" is not an array");
    one_entry_fails("{\"dtype\":\"F12\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "tensor 'a': unknown dtype \"F12\"");
    one_entry_fails("{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "tensor 'a': unknown dtype \"f32\"");

    /* shapes */
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[2,-2],\"data_offsets\":[0,0]}", 0,
                    "tensor 'a': shape[1] must be a non-negative integer, got -2");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,10]}", 10,
                    "tensor 'a': shape[0] must be a non-negative integer, got 2.5");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}", 8,
                    "tensor 'a': shape[0] must be a non-negative integer, got a string");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}", 4,
                    "tensor 'a': shape has 9 dimensions, more than 8");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}", 4,
                    "tensor 'a': shape (4294967296,4294967296,4294967296) of F32 overflows");
    one_entry_fails(
        "{\"dtype\":\"F64\",\"shape\":[4503599627370496,1024],\"data_offsets\":[0,4]}", 4,
        "tensor 'a': shape (4503599627370496,1024) of F64 overflows: element count times 8 bytes exceeds 2^63");
    one_entry_fails(
        "{\"dtype\":\"F64\",\"shape\":[9007199254740993],\"data_offsets\":[0,4]}", 4,
        "tensor 'a': shape[0] must be a non-negative integer, got 9007199254740992 (2^53 or more: not exact)");

    /* data_offsets */
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}", 4,
                    "tensor 'a': \"data_offsets\" must be [begin, end], two non-negative integers");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}", 4,
                    "tensor 'a': \"data_offsets\" must be [begin, end], two non-negative integers");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}", 4,
                    "tensor 'a': \"data_offsets\" must be [begin, end], two non-negative integers");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}", 8,
                    "tensor 'a': data_offsets [8, 4] have begin > end");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}", 4,
                    "tensor 'a': data_offsets [0, 4] span 4 bytes but F32 (2) needs 8");
    one_entry_fails("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 4,
                    "tensor 'a': data_offsets [0, 8] run past the end of the data section (4 bytes)");

    /* tiling of the data section */
    unsigned char d[16] = {0};
    write_st(P("bad.safetensors"),
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
             d, 12);
    assert_load_fails(P("bad.safetensors"), "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
    write_st(P("bad.safetensors"), /* a zero-size tensor inside another also overlaps */
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
             d, 8);
    assert_load_fails(P("bad.safetensors"), "tensors 'a' [0, 8] and 'z' [4, 4] overlap");
    write_st(P("bad.safetensors"),
             "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
             d, 12);
    assert_load_fails(P("bad.safetensors"), "data section bytes [4, 8) are covered by no tensor");
    write_st(P("bad.safetensors"), "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 7);
    assert_load_fails(P("bad.safetensors"), "data section bytes [4, 7) are covered by no tensor");
    write_st(P("bad.safetensors"), "{}", d, 1);
    assert_load_fails(P("bad.safetensors"), "data section bytes [0, 1) are covered by no tensor");

    /* names and metadata */
    write_st(P("bad.safetensors"),
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
             d, 8);
    assert_load_fails(P("bad.safetensors"), "tensor name 'a' appears twice");
    write_st(P("bad.safetensors"), "{\"__metadata__\":[\"x\"]}", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "__metadata__ is not an object");
    write_st(P("bad.safetensors"), "{\"__metadata__\":{\"format\":\"pt\",\"step\":12}}", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "__metadata__ value for 'step' is not a string");
    write_st(P("bad.safetensors"), "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "__metadata__ key 'k' appears twice");
    write_st(P("bad.safetensors"), "{\"__metadata__\":{},\"__metadata__\":{}}", NULL, 0);
    assert_load_fails(P("bad.safetensors"), "__metadata__ appears twice");

    /* a good file cut short, in the data and in the header */
    float v[4] = {1, 2, 3, 4};
    tg_st_writer *w = tg_st_writer_new();
    tg_st_writer_add(w, "v", "F32", 1, (int64_t[]){4}, v);
    tg_error err = {0};
    ck_assert_msg(tg_st_writer_save(w, P("good.safetensors"), &err) == 0, "%s", err.msg);
    tg_st_writer_free(w);
    size_t n;
    unsigned char *raw = read_bytes(P("good.safetensors"), &n);
    write_bytes(P("cut.safetensors"), raw, n - 3);
    assert_load_fails(P("cut.safetensors"),
                      "tensor 'v': data_offsets [0, 16] run past the end of the data section (13 bytes)");
    write_bytes(P("cut.safetensors"), raw, 20);
    assert_load_fails(P("cut.safetensors"), "runs past the end of the file (12 bytes after the length)");
    free(raw);
    ck_assert_ptr_null(tg_st_load(NULL, &err));
    ck_assert_ptr_null(tg_st_load(P("does-not-exist"), NULL)); /* no buffer: still no crash */
}
END_TEST

/* ---- conversions ---------------------------------------------------------------- */

START_TEST(conversions_and_their_errors)
{
    /* F64 -> f32 rounds to nearest; a finite value beyond f32 is an error */
    double dv[4] = {0.1, 1.0 / 3.0, -1e-50, 1e300};
    int64_t iv[3] = {5, (int64_t)INT32_MAX + 1, -3};
    float fv[6] = {1, 2, 3, 4, 5, 6};
    uint8_t bv[2] = {1, 2};
    tg_st_writer *w = tg_st_writer_new();
    tg_st_writer_add(w, "d", "F64", 2, (int64_t[]){2, 2}, dv);
    tg_st_writer_add(w, "ok", "F64", 1, (int64_t[]){3}, dv);
    tg_st_writer_add(w, "i", "I64", 1, (int64_t[]){3}, iv);
    tg_st_writer_add(w, "f", "F32", 2, (int64_t[]){2, 3}, fv);
    tg_st_writer_add(w, "u", "U8", 1, (int64_t[]){2}, bv);
    uint16_t hv[2] = {0x3e00, 0x4000}; /* 1.5, 2 in binary16 */
    tg_st_writer_add(w, "h", "F16", 1, (int64_t[]){2}, hv);
    tg_error err = {0};
    ck_assert_msg(tg_st_writer_save(w, P("conv.safetensors"), &err) == 0, "%s", err.msg);
    tg_st_writer_free(w);
    tg_st_file *f = load_ok(P("conv.safetensors"));

    tg_graph *g = tg_graph_new();
    tg_tensor *ok = tg_tensor_new(g, TG_F32, TT_SHAPE(3)); /* (3) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "ok"), ok, &err), 0);
    const float *o = ok->data;
    ck_assert(o[0] == (float)0.1 && o[1] == (float)(1.0 / 3.0) && o[2] == -0.0f);
    ck_assert(signbit(o[2])); /* -1e-50 underflows to -0 */

    tg_tensor *d32 = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 2)); /* (2,2) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "d"), d32, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: tensor 'd': element 3 (1,1) = 1.0000000000000001e+300 does not fit in f32");
    ck_assert(((float *)d32->data)[0] == 0); /* untouched */

    tg_tensor *i32 = tg_tensor_new(g, TG_I32, TT_SHAPE(3)); /* (3) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "i"), i32, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: tensor 'i': element 1 (1) = 2147483648 does not fit in i32");

    /* shapes must match exactly, numel alone is not enough */
    tg_tensor *f6 = tg_tensor_new(g, TG_F32, TT_SHAPE(3, 2)); /* (3,2) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "f"), f6, &err), -1);
    ck_assert_str_eq(err.msg,
                     "safetensors: tensor 'f': shape (2,3) in the file does not match (3,2) of the destination");
    tg_tensor *f4 = tg_tensor_new(g, TG_F32, TT_SHAPE(4)); /* (4) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "f"), f4, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: tensor 'f': shape (2,3) in the file does not match (4) of the destination");

    /* dtypes that do not convert */
    tg_tensor *fi = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 3)); /* (2,3) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "f"), fi, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: tensor 'f': cannot convert F32 to i32");
    tg_tensor *if32 = tg_tensor_new(g, TG_F32, TT_SHAPE(3)); /* (3) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "i"), if32, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: tensor 'i': cannot convert I64 to f32");
    tg_tensor *h = tg_tensor_new(g, TG_I32, TT_SHAPE(2)); /* (2) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "h"), h, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: tensor 'h': cannot convert F16 to i32");
    tg_tensor *b = tg_tensor_new(g, TG_BOOL, TT_SHAPE(2)); /* (2) */
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "u"), b, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: tensor 'u': element 1 (1) = 2 is not 0 or 1 for bool");
    ck_assert_int_eq(tg_st_copy_to(NULL, b, &err), -1);
    ck_assert_str_eq(err.msg, "safetensors: copy: tensor is NULL");
    tg_graph_free(g);
    tg_st_free(f);
}
END_TEST

/* F16 and BF16 into f32 and f64: every one of the 65536 bit patterns of
 * each, against the value its fields say (ldexp of the significand), NaN
 * payloads kept. */
START_TEST(halves_convert_exactly)
{
    static uint16_t hv[65536];
    for (int i = 0; i < 65536; i++) hv[i] = (uint16_t)i;
    tg_st_writer *w = tg_st_writer_new();
    tg_st_writer_add(w, "h", "F16", 1, (int64_t[]){65536}, hv);
    tg_st_writer_add(w, "b", "BF16", 1, (int64_t[]){65536}, hv);
    tg_error err = {0};
    ck_assert_msg(tg_st_writer_save(w, P("halves.safetensors"), &err) == 0, "%s", err.msg);
    tg_st_writer_free(w);
    tg_st_file *f = load_ok(P("halves.safetensors"));
    tg_graph *g = tg_graph_new();
    tg_tensor *h32 = tg_tensor_new(g, TG_F32, TT_SHAPE(65536)), *h64 = tg_tensor_new(g, TG_F64, TT_SHAPE(65536));
    tg_tensor *b32 = tg_tensor_new(g, TG_F32, TT_SHAPE(65536)), *b64 = tg_tensor_new(g, TG_F64, TT_SHAPE(65536));
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "h"), h32, &err), 0);
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "h"), h64, &err), 0);
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "b"), b32, &err), 0);
    ck_assert_int_eq(tg_st_copy_to(tg_st_find(f, "b"), b64, &err), 0);
    for (int i = 0; i < 65536; i++) {
        const int sg = i >> 15, e = i >> 10 & 31, m = i & 1023;
        const double want = (sg ? -1 : 1) * (e ? ldexp(1024 + m, e - 25) : ldexp(m, -24));
        const float got = ((float *)h32->data)[i];
        if (e == 31) {
            uint32_t bits;
            memcpy(&bits, &got, 4);
            ck_assert_msg(bits == ((uint32_t)sg << 31 | 0x7F800000u | (uint32_t)m << 13), "F16 %04x", i);
        } else {
            ck_assert_msg(got == want && !signbit(got) == !signbit(want), "F16 %04x: %.9g, want %.9g", i, got, want);
        }
        ck_assert_msg(((double *)h64->data)[i] == got || (isnan(got) && isnan(((double *)h64->data)[i])), "%04x", i);
        const int be = i >> 7 & 255, bm = i & 127;
        const float bg = ((float *)b32->data)[i];
        if (be == 255) {
            ck_assert_msg(bm ? isnan(bg) : isinf(bg), "BF16 %04x", i);
        } else {
            const double bw = (sg ? -1 : 1) * (be ? ldexp(128 + bm, be - 134) : ldexp(bm, -133));
            ck_assert_msg(bg == bw && !signbit(bg) == !signbit(bw), "BF16 %04x: %.9g, want %.9g", i, bg, bw);
        }
        ck_assert_msg(((double *)b64->data)[i] == bg || (isnan(bg) && isnan(((double *)b64->data)[i])), "%04x", i);
    }
    tg_graph_free(g);
    tg_st_free(f);
}
END_TEST

/* ---- the writer's own errors --------------------------------------------------- */

/* w's save fails with the first failed add's message, writing nothing */
static void assert_save_fails(tg_st_writer *w, const char *msg)
{
    const char *path = P("sticky.safetensors");
    char want[600];
    snprintf(want, sizeof want, "%s (nothing written to '%s')", msg, path);
    tg_error err = {0};
    ck_assert_int_eq(tg_st_writer_save(w, path, &err), -1);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(access(path, F_OK), -1);
}

START_TEST(writer_errors_stick)
{
    float v[2] = {1, 2};
    const char *bad[][2] = {
        {"", "safetensors: writer: tensor name is empty"},
        {"__metadata__", "safetensors: writer: tensor name '__metadata__' is reserved"},
        {"caf\xc3", "safetensors: writer: tensor name is not valid UTF-8"},
    };
    for (int i = 0; i < 3; i++) {
        tg_st_writer *w = tg_st_writer_new();
        ck_assert_int_eq(tg_st_writer_add(w, bad[i][0], "F32", 1, (int64_t[]){2}, v), -1);
        assert_save_fails(w, bad[i][1]);
        tg_st_writer_free(w);
    }
    tg_st_writer *w = tg_st_writer_new();
    ck_assert_int_eq(tg_st_writer_add(w, "a", "F8", 1, (int64_t[]){2}, v), -1);
    ck_assert_int_eq(tg_st_writer_add(w, "b", "F32", 1, (int64_t[]){2}, v), -1); /* sticks */
    assert_save_fails(w, "safetensors: writer: tensor 'a': unknown dtype \"F8\"");
    tg_st_writer_free(w);

    struct {
        int ndim;
        int64_t shape[9];
        const void *data;
        const char *msg;
    } cases[] = {
        {1, {-1}, v, "safetensors: writer: tensor 't': bad shape (-1): dimensions must be >= 0"},
        {9, {1}, v, "safetensors: writer: tensor 't': ndim 9 must be 0..8 with a shape"},
        {1, {2}, NULL, "safetensors: writer: tensor 't': data is NULL"},
        {2, {INT64_MAX, 2}, v, "safetensors: writer: tensor 't': too large (more than 2^53 bytes)"},
    };
    for (int i = 0; i < 4; i++) {
        w = tg_st_writer_new();
        ck_assert_int_eq(tg_st_writer_add(w, "t", "F32", cases[i].ndim, cases[i].shape, cases[i].data), -1);
        assert_save_fails(w, cases[i].msg);
        tg_st_writer_free(w);
    }
    w = tg_st_writer_new();
    ck_assert_int_eq(tg_st_writer_add_meta(w, "k", "1"), 0);
    ck_assert_int_eq(tg_st_writer_add_meta(w, "k", "2"), -1);
    assert_save_fails(w, "safetensors: writer: duplicate metadata key 'k'");
    tg_st_writer_free(w);
    tg_st_writer_free(NULL);
    tg_st_free(NULL);
}
END_TEST

/* ---- atomic saves --------------------------------------------------------------- */

static void save_two(const char *path, float a, float b)
{
    float v[2] = {a, b};
    tg_st_writer *w = tg_st_writer_new();
    tg_st_writer_add(w, "v", "F32", 1, (int64_t[]){2}, v);
    tg_error err = {0};
    ck_assert_msg(tg_st_writer_save(w, path, &err) == 0, "%s", err.msg);
    tg_st_writer_free(w);
}

START_TEST(saves_are_atomic)
{
    tg_error err = {0};
    float v[2] = {1, 2};

    /* into a directory that does not exist: fails cleanly, creates nothing */
    tg_st_writer *w = tg_st_writer_new();
    tg_st_writer_add(w, "v", "F32", 1, (int64_t[]){2}, v);
    ck_assert_int_eq(tg_st_writer_save(w, P("no/such/dir/x.safetensors"), &err), -1);
    ck_assert_msg(strstr(err.msg,
                         "no/such/dir/x.safetensors': cannot create a temporary file beside it: "
                         "No such file or directory"),
                  "%s", err.msg);
    tg_st_writer_free(w);
    ck_assert_int_eq(access(P("no"), F_OK), -1);

    /* a new file gets 0666 minus the umask, like fopen's */
    mode_t old_mask = umask(022);
    save_two(P("old.safetensors"), 7, 8);
    umask(old_mask);
    struct stat st;
    ck_assert_int_eq(stat(P("old.safetensors"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    size_t n0;
    unsigned char *before = read_bytes(P("old.safetensors"), &n0);

    /* a duplicate name: the add fails, the save reports it and writes nothing */
    w = tg_st_writer_new();
    ck_assert_int_eq(tg_st_writer_add(w, "v", "F32", 1, (int64_t[]){2}, v), 0);
    ck_assert_int_eq(tg_st_writer_add(w, "v", "F32", 1, (int64_t[]){2}, v), -1);
    ck_assert_int_eq(tg_st_writer_save(w, P("old.safetensors"), &err), -1);
    ck_assert_msg(strstr(err.msg, "safetensors: writer: duplicate tensor name 'v' (nothing written to '"), "%s",
                  err.msg);
    tg_st_writer_free(w);
    size_t n1;
    unsigned char *after = read_bytes(P("old.safetensors"), &n1);
    ck_assert_uint_eq(n1, n0);
    ck_assert_mem_eq(after, before, n0);
    free(after);

    /* a write that fails half-way (the file size limit is hit while
     * writing the temporary file): the temporary file is removed and the
     * old file is byte-identical */
    static float big[16384]; /* 64 KiB */
    for (int i = 0; i < 16384; i++) big[i] = (float)i;
    struct rlimit saved;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = {4096, saved.rlim_max};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    w = tg_st_writer_new();
    tg_st_writer_add(w, "big", "F32", 2, (int64_t[]){128, 128}, big);
    int rc = tg_st_writer_save(w, P("old.safetensors"), &err);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, old_handler);
    tg_st_writer_free(w);
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err.msg, "of the temporary file failed: File too large"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "left as it was"), "%s", err.msg);
    after = read_bytes(P("old.safetensors"), &n1);
    ck_assert_uint_eq(n1, n0);
    ck_assert_mem_eq(after, before, n0);
    free(after);
    free(before);

    /* a save that succeeds replaces the file and keeps its mode */
    ck_assert_int_eq(chmod(P("old.safetensors"), 0600), 0);
    save_two(P("old.safetensors"), 9, 10);
    ck_assert_int_eq(stat(P("old.safetensors"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    tg_st_file *f = load_ok(P("old.safetensors"));
    ck_assert(((const float *)tg_st_find(f, "v")->data)[1] == 10.0f);
    tg_st_free(f);

    /* renaming over a directory fails and leaves no temporary file */
    ck_assert_int_eq(mkdir(P("adir"), 0755), 0);
    w = tg_st_writer_new();
    tg_st_writer_add(w, "v", "F32", 1, (int64_t[]){2}, v);
    ck_assert_int_eq(tg_st_writer_save(w, P("adir"), &err), -1);
    ck_assert_msg(strstr(err.msg, "rename of the temporary file failed"), "%s", err.msg);
    tg_st_writer_free(w);
    ck_assert_int_eq(rmdir(P("adir")), 0);

    ck_assert_int_eq(tt_count_names(tt_dir, ".tmp."), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("safetensors");
    tt_tcase(s, "safetensors", 0,
             TT_TESTS(round_trip_is_bit_exact, tapegrad_tensors_round_trip, params_round_trip_and_errors,
                      hand_built_file_reads_correctly, header_whitespace_and_edge_cases, corrupt_files_are_rejected,
                      conversions_and_their_errors, halves_convert_exactly, writer_errors_stick, saves_are_atomic));
    return s;
}

int main(void) { return tt_run_in_tmpdir(suite(), "tg_st_test", true); }
