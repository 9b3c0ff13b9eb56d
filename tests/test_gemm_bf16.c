/* The bf16 products (ops/sgemm_bf16.c, ops/sgemm_bf16_avx512.c,
 * ops/gemm.c's tg_gemm_bf16) and their rounding (ops/bf16_internal.h).
 *
 * The rounding f32 -> bf16 against a definition written here from the
 * numbers (the nearer of the two bf16 around x, the even one on a tie,
 * computed in f64), over every upper half with several lower halves, and
 * on this CPU against vcvtne2ps2bf16 over every f32. One step of the sum
 * against vdpbf16ps on random and underflowing operands, and against
 * cases worked by hand (which run on any CPU).
 *
 * Every kernel (the vdpbf16ps one where the CPU has it, the portable one,
 * the unpacked one, the dispatch tg_sgemm_bf16 and the threaded
 * tg_gemm_bf16) against an f64 reference of the same rounded operands, so
 * that only the order of the f32 sums differs: all four layouts, sizes
 * around the 14-row, 16- and 32-column tiles and the slices of K, padded
 * leading dimensions, alpha and beta (beta = 0: C starts as NaN and must
 * not be read), C's padding untouched. The bound is the textbook one for
 * K + S + 3 roundings of a sum (S the slices of K):
 *   |computed - exact| <= (K + S + 3) u (|alpha| sum_k |a_ik b_kj| + |beta c_ij|),  u = 2^-24.
 * A kernel that skipped the rounding to bf16 would miss it by far (an
 * operand's rounding error is up to 2^-9 of it).
 *
 * Bits: the vdpbf16ps kernel, the portable one and the unpacked one give
 * the same bits on every shape tried, also on operands of every magnitude
 * (where the portable kernel takes its exact steps); any cut of C's rows
 * or columns into calls gives the bits of one call; 1, 2 and 3 threads
 * give the same bits.
 *
 * Run once per kernel path (tests/CMakeLists.txt): on avx512 with
 * AVX512_BF16 the dispatch takes the vdpbf16ps kernel; on the others (and
 * on CPUs without AVX512_BF16) the portable kernel compiled for that path;
 * the tests that need the instruction say so and pass where it is absent. */
#define _DEFAULT_SOURCE
#include <stdint.h>

#include "tg_test.h"

#include "../ops/bf16_internal.h"
#include "../ops/gemm_bf16_internal.h"
#include "../ops/sgemm_bf16_avx512_internal.h"
#include "../ops/sgemm_bf16_internal.h"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && __GNUC__ >= 11
#include <immintrin.h>
#define HAVE_BF16_INTRINSICS 1
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ---- the rounding --------------------------------------------------- */

/* The definition: a NaN becomes its upper half with the quiet bit set; inf
 * stays; |x| < 2^-126 becomes a zero of its sign; else the bf16 nearer to
 * x of the two around it (its truncation lo and the next one up in
 * magnitude, hi), the one with an even last bit on a tie; hi past the
 * largest bf16 is inf. */
static uint16_t def_round(float x)
{
    const uint32_t u = bits_of(x);
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x40);
    if (isinf(x)) return (uint16_t)(u >> 16);
    if (fabsf(x) < 0x1p-126f) return (uint16_t)(u >> 16 & 0x8000);
    const uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    /* hi past the largest bf16 is inf, but is compared as 2^128, the next
     * bf16 with the exponent unbounded (IEEE's rounding, then overflow) */
    const double vh = (hi & 0x7f80) == 0x7f80 ? copysign(0x1p128, x) : (double)tg_bf16_float(hi);
    const double dl = fabs((double)x - (double)tg_bf16_float(lo)), dh = fabs(vh - (double)x);
    if (dl < dh) return lo;
    if (dh < dl) return hi;
    return lo & 1 ? hi : lo;
}

START_TEST(rounding_matches_definition)
{
    static const uint32_t lows[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1234, 0xc001};
    long n = 0;
    for (uint32_t hi = 0; hi < 0x10000; hi++)
        for (size_t l = 0; l < sizeof lows / sizeof *lows; l++, n++) {
            const float x = float_of(hi << 16 | lows[l]);
            const uint16_t got = tg_bf16_round(x), want = def_round(x);
            if (got != want) ck_abort_msg("tg_bf16_round(%08x) = %04x, the definition %04x", bits_of(x), got, want);
        }
    /* cases worked by hand */
    static const struct {
        uint32_t x;
        uint16_t want;
    } hand[] = {
        {0x3f800000, 0x3f80}, /* 1 */
        {0x3f808000, 0x3f80}, /* 1 + half an ulp: the tie goes to 1, even */
        {0x3f818000, 0x3f82}, /* 1 + 3 halves: the tie goes up, to the even 0x3f82 */
        {0x3f808001, 0x3f81}, /* just past the tie: up */
        {0x7f7fffff, 0x7f80}, /* the largest f32 rounds past the largest bf16: inf */
        {0x7f7f7fff, 0x7f7f}, /* below the tie there: the largest bf16 */
        {0x7f7f8000, 0x7f80}, /* on the tie: to the even 2^128, so inf */
        {0x00800000, 0x0080}, /* 2^-126 stays */
        {0x007fffff, 0x0000}, /* the largest subnormal: zero */
        {0x807fffff, 0x8000}, /* negative: -0 */
        {0x80000001, 0x8000}, {0x7f800000, 0x7f80}, /* inf */
        {0xff800000, 0xff80}, {0x7f800001, 0x7fc0}, /* a signalling NaN becomes quiet */
        {0xffc00001, 0xffc0}, {0x7fbfffff, 0x7fff}, /* the payload's upper bits stay, never carried into the sign */
    };
    for (size_t i = 0; i < sizeof hand / sizeof *hand; i++) {
        const uint16_t got = tg_bf16_round(float_of(hand[i].x));
        ck_assert_msg(got == hand[i].want, "tg_bf16_round(%08x) = %04x, want %04x", hand[i].x, got, hand[i].want);
        ck_assert_msg(def_round(float_of(hand[i].x)) == hand[i].want, "the definition at %08x", hand[i].x);
    }
    printf("test_gemm_bf16: rounding: %ld values and %zu by hand agree with the definition\n", n,
           sizeof hand / sizeof *hand);
}
END_TEST

#ifdef HAVE_BF16_INTRINSICS
/* f32 bits [lo, lo + 2^24) rounded by vcvtne2ps2bf16 against tg_bf16_round:
 * the first that differs, or -1 */
BF16_TARGET static int64_t cpu_round_block(uint32_t lo)
{
    const __m512i step = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (uint32_t u = lo; u - lo < (1u << 24); u += 16) {
        const __m512 x = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_set1_epi32((int)u), step));
        const __m256bh r = _mm512_cvtneps_pbh(x);
        uint16_t got[16];
        memcpy(got, &r, sizeof got);
        for (int i = 0; i < 16; i++)
            if (got[i] != tg_bf16_round(float_of(u + (uint32_t)i))) return u + (uint32_t)i;
    }
    return -1;
}

/* lane 0 of vdpbf16ps: acc + (a1 b1 first, then a0 b0) */
BF16_TARGET static float cpu_dot_pair(float acc, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1)
{
    const __m128i va = _mm_set1_epi32((int)((uint32_t)a1 << 16 | a0));
    const __m128i vb = _mm_set1_epi32((int)((uint32_t)b1 << 16 | b0));
    return _mm_cvtss_f32(_mm_dpbf16_ps(_mm_set1_ps(acc), (__m128bh)va, (__m128bh)vb));
}
#endif

/* The CPU's own bf16 instructions can be compared with (--cpu). */
static bool have_bf16(void)
{
#ifdef HAVE_BF16_INTRINSICS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16")) return true;
#endif
    return false;
}

START_TEST(rounding_matches_the_cpu)
{
#ifdef HAVE_BF16_INTRINSICS
    for (uint64_t lo = 0; lo < (1ull << 32); lo += 1u << 24) {
        const int64_t bad = cpu_round_block((uint32_t)lo);
        if (bad >= 0)
            ck_abort_msg("f32 %08x: tg_bf16_round %04x, vcvtne2ps2bf16 differs", (uint32_t)bad,
                         tg_bf16_round(float_of((uint32_t)bad)));
    }
    printf("test_gemm_bf16: rounding: every f32 as vcvtne2ps2bf16 rounds it\n");
#endif
}
END_TEST

/* the step's cases worked by hand (bf16_internal.h's definition), on any CPU */
START_TEST(step_by_hand)
{
    static const struct {
        float acc, a, b, want;
    } hand[] = {
        {1.0f, 3.0f, 0.5f, 2.5f},
        {0x1p-126f, 0x1p-63f, 0x1p-64f, 0x1.8p-126f}, /* a product below 2^-126 is not flushed */
        {0.0f, 0x1p-63f, 0x1p-64f, 0.0f}, /* but a sum is: 2^-127 */
        {0x1p-126f, -0x1p-75f, 0x1p-76f, 0x1p-126f}, /* 2^-126 - 2^-151 rounds (unbounded) to 2^-126: kept */
        {0x1p-126f, -0x1p-75f, 0x1p-75f, 0.0f}, /* 2^-126 - 2^-150 rounds to itself, below: flushed */
        {-0x1.8p-126f, 0x1p-126f, 1.0f, -0.0f}, /* a flushed sum keeps its sign */
        {0x1p-127f, 0x1p-126f, 1.0f, 0x1p-126f}, /* an acc below 2^-126 is read as zero */
        {1.0f, 0x1p-24f, 1.0f, 1.0f}, /* 1 + 2^-24: the tie to even */
        {1.0f, 0x1.8p-24f, 1.0f, 1.0f + 0x1p-23f}, /* past the tie: up */
        {0x1.fffffep127f, 0x1p127f, 1.0f, INFINITY}, /* overflow: inf */
        {-0.0f, -0.0f, 1.0f, -0.0f}, /* -0 + -0 */
        {-0.0f, 0.0f, 1.0f, 0.0f}, /* -0 + 0 */
        {1.0f, 0x1p-130f, 0x1p100f, 1.0f}, /* a bf16 operand below 2^-126 is read as zero */
    };
    for (size_t i = 0; i < sizeof hand / sizeof *hand; i++) {
        const float got = tg_bf16_step(hand[i].acc, hand[i].a, hand[i].b);
        ck_assert_msg(bits_of(got) == bits_of(hand[i].want), "step(%a, %a, %a) = %a, want %a", hand[i].acc, hand[i].a,
                      hand[i].b, got, hand[i].want);
    }
    ck_assert(isnan(tg_bf16_step(1.0f, INFINITY, 0.0f)));
    ck_assert(isnan(tg_bf16_step(INFINITY, -INFINITY, 1.0f)));
}
END_TEST

static uint64_t rng_state = 88172645463325252ull;
static uint32_t next_u32(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

/* a bf16 of any sign with an exponent near 1, near the bottom, near the
 * top, or anywhere (inf and NaN included now and then); never subnormal
 * (the products never see one: the rounding flushes them) */
static uint16_t any_bf16(void)
{
    const uint32_t kind = next_u32() % 8, sign = next_u32() & 1;
    uint32_t e = kind == 0 ? next_u32() % 256
        : kind < 3         ? 1 + next_u32() % 40
        : kind < 4         ? 254 - next_u32() % 40
                           : 107 + next_u32() % 40;
    if (next_u32() % 16 == 0) e = 0;
    return (uint16_t)(sign << 15 | (e ? e << 7 | (next_u32() & 0x7f) : 0));
}

START_TEST(step_matches_the_cpu)
{
#ifdef HAVE_BF16_INTRINSICS
    long tiny = 0;
    for (long i = 0; i < 4000000; i++) {
        uint16_t a0 = any_bf16(), a1 = any_bf16(), b0 = any_bf16(), b1 = any_bf16();
        if (i % 3 == 0) b1 = b0 ^ 0x8000, a1 = (uint16_t)(a0 + next_u32() % 5 - 2); /* the two products cancel */
        uint32_t au = next_u32();
        if (i % 4 == 1) au = (au & 0x807fffffu) | (97 + next_u32() % 60) << 23;
        if (i % 4 == 2) au &= 0x80ffffffu; /* near 2^-126, subnormals included */
        float acc = float_of(au);
        if (i % 5 == 0) /* acc cancels the first product, to within a few ulps */
            acc = -tg_bf16_float(a1) * tg_bf16_float(b1) * (1.0f + (float)((int)(next_u32() % 9) - 4) * 0x1p-23f);
        const float got =
            tg_bf16_step(tg_bf16_step(acc, tg_bf16_float(a1), tg_bf16_float(b1)), tg_bf16_float(a0), tg_bf16_float(b0));
        const float want = cpu_dot_pair(acc, a0, a1, b0, b1);
        const double exact = (double)acc + (double)tg_bf16_float(a1) * tg_bf16_float(b1);
        tiny += exact != 0 && fabs(exact) < 0x1p-125;
        if (isnan(got) && isnan(want)) continue; /* NaN payloads are not promised */
        if (bits_of(got) != bits_of(want))
            ck_abort_msg("acc %08x a (%04x, %04x) b (%04x, %04x): steps %08x, vdpbf16ps %08x", bits_of(acc), a0, a1, b0,
                         b1, bits_of(got), bits_of(want));
    }
    printf("test_gemm_bf16: step: 4000000 pairs as vdpbf16ps sums them (%ld with a first sum below 2^-125)\n", tiny);
    ck_assert_int_gt(tiny, 100000);
#endif
}
END_TEST

/* ---- the products ---------------------------------------------------- */

typedef struct {
    bool ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
} prob;

/* n floats in [-1, 1) (exactly n, so that AddressSanitizer sees a read past them) */
static float *fill(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    if (!x) abort();
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(seed >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
    }
    return x;
}

static size_t a_floats(const prob *p) { return (size_t)(p->ta ? p->K : p->M) * p->lda; }
static size_t b_floats(const prob *p) { return (size_t)(p->tb ? p->N : p->K) * p->ldb; }
static float a_at(const prob *p, const float *A, int i, int k)
{
    return p->ta ? A[(size_t)k * p->lda + i] : A[(size_t)i * p->lda + k];
}
static float b_at(const prob *p, const float *B, int k, int j)
{
    return p->tb ? B[(size_t)j * p->ldb + k] : B[(size_t)k * p->ldb + j];
}

/* the kernels; false when one cannot run here */
typedef bool (*gemm_fn)(const prob *p, const float *A, const float *B, float *C);
static bool run_avx512(const prob *p, const float *A, const float *B, float *C)
{
    return tg_sgemm_bf16_avx512(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
}
static bool run_portable(const prob *p, const float *A, const float *B, float *C)
{
    tg_sgemm_bf16_portable(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
    return true;
}
static bool run_direct(const prob *p, const float *A, const float *B, float *C)
{
    tg_sgemm_bf16_direct(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
    return true;
}
static bool run_dispatch(const prob *p, const float *A, const float *B, float *C)
{
    tg_sgemm_bf16(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
    return true;
}
static bool run_threaded(const prob *p, const float *A, const float *B, float *C)
{
    tg_gemm_bf16(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
    return true;
}
enum { KERNELS = 5 };
static const gemm_fn KERNEL_FNS[KERNELS] = {run_avx512, run_portable, run_direct, run_dispatch, run_threaded};
static const char *const KERNEL_NAMES[KERNELS] = {"vdpbf16ps kernel", "portable kernel", "unpacked kernel",
                                                  "tg_sgemm_bf16", "tg_gemm_bf16"};

/* The f64 sums of the operands rounded by the definition, alpha and beta
 * applied (ref, M x N), and each one's bound (the top comment). */
static void make_reference(const prob *p, const float *A, const float *B, const float *C0, double *ref, double *bound)
{
    const double u = 0x1p-24;
    const int M = p->M, N = p->N, K = p->K, slices = (K + tg_bf16_slice_depth(K) - 1) / tg_bf16_slice_depth(K);
    double *ar = malloc((size_t)M * K * sizeof *ar), *bt = malloc((size_t)N * K * sizeof *bt);
    if (!ar || !bt) abort();
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) ar[(size_t)i * K + k] = tg_bf16_float(def_round(a_at(p, A, i, k)));
    for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) bt[(size_t)j * K + k] = tg_bf16_float(def_round(b_at(p, B, k, j)));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const double *a = ar + (size_t)i * K, *b = bt + (size_t)j * K;
            double s = 0, sa = 0;
            for (int k = 0; k < K; k++) s += a[k] * b[k], sa += fabs(a[k] * b[k]);
            const double c0 = p->beta != 0 ? C0[(size_t)i * p->ldc + j] : 0;
            ref[(size_t)i * N + j] = p->alpha * s + p->beta * c0;
            bound[(size_t)i * N + j] = (K + slices + 3) * u * (fabs(p->alpha) * sa + fabs(p->beta * c0)) + 1e-30;
        }
    free(ar), free(bt);
}

/* C (after a kernel) against the reference; C's padding must still be
 * C0's (before). The worst |error| / bound. */
static double check_reference(const prob *p, const double *ref, const double *bound, const float *C0, const float *C,
                              const char *what)
{
    double worst = 0;
    for (int i = 0; i < p->M; i++) {
        for (int j = 0; j < p->N; j++) {
            const double got = C[(size_t)i * p->ldc + j], want = ref[(size_t)i * p->N + j], err = fabs(got - want),
                         b = bound[(size_t)i * p->N + j];
            if (!(err <= b))
                ck_abort_msg("%s ta=%d tb=%d M=%d N=%d K=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g: C(%d,%d) = %.9g, "
                             "reference %.9g, error %.3g > bound %.3g",
                             what, p->ta, p->tb, p->M, p->N, p->K, p->lda, p->ldb, p->ldc, p->alpha, p->beta, i, j, got,
                             want, err, b);
            if (err / b > worst) worst = err / b;
        }
        for (int j = p->N; j < p->ldc; j++)
            if (memcmp(&C[(size_t)i * p->ldc + j], &C0[(size_t)i * p->ldc + j], sizeof(float)) != 0)
                ck_abort_msg("%s M=%d N=%d K=%d: padding C(%d,%d) was written", what, p->M, p->N, p->K, i, j);
    }
    return worst;
}

/* Every kernel on one problem: each against the reference (when
 * reference), and all with the same bits as the first that ran. worst[k]
 * keeps each kernel's worst error ratio (-1: it did not run). direct:
 * include the (slow) unpacked kernel. */
static void all_kernels(prob p, uint64_t seed, bool reference, bool direct, double worst[KERNELS])
{
    const size_t nc = (size_t)p.M * p.ldc;
    float *A = fill(a_floats(&p), seed), *B = fill(b_floats(&p), seed + 1), *C0 = fill(nc, seed + 2);
    float *first = NULL, *C = malloc(nc * sizeof *C);
    if (!C) abort();
    if (p.beta == 0) /* must not be read */
        for (int i = 0; i < p.M; i++)
            for (int j = 0; j < p.N; j++) C0[(size_t)i * p.ldc + j] = NAN;
    const char *first_name = NULL;
    double *ref = NULL, *bound = NULL;
    if (reference) {
        ref = malloc((size_t)p.M * p.N * sizeof *ref), bound = malloc((size_t)p.M * p.N * sizeof *bound);
        if (!ref || !bound) abort();
        make_reference(&p, A, B, C0, ref, bound);
    }
    for (int k = 0; k < KERNELS; k++) {
        if (k == 2 && !direct) continue;
        memcpy(C, C0, nc * sizeof *C);
        if (!KERNEL_FNS[k](&p, A, B, C)) continue;
        if (reference) {
            const double w = check_reference(&p, ref, bound, C0, C, KERNEL_NAMES[k]);
            if (w > worst[k]) worst[k] = w;
        } else if (worst[k] < 0) worst[k] = 0;
        if (!first) {
            first = malloc(nc * sizeof *first);
            if (!first) abort();
            memcpy(first, C, nc * sizeof *C);
            first_name = KERNEL_NAMES[k];
        } else if (memcmp(first, C, nc * sizeof *C) != 0)
            ck_abort_msg("%s and %s differ: ta=%d tb=%d M=%d N=%d K=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g",
                         first_name, KERNEL_NAMES[k], p.ta, p.tb, p.M, p.N, p.K, p.lda, p.ldb, p.ldc, p.alpha, p.beta);
    }
    free(A), free(B), free(C0), free(C), free(first), free(ref), free(bound);
}

static void report(const char *test, int cases, const double worst[KERNELS])
{
    printf("test_gemm_bf16: %s, %d problems; worst error / bound:", test, cases);
    for (int k = 0; k < KERNELS; k++)
        if (worst[k] >= 0) printf(" %s %.3f,", KERNEL_NAMES[k], worst[k]);
        else printf(" %s not run,", KERNEL_NAMES[k]);
    printf(" all the same bits\n");
}

/* Sizes around every edge (14-row panels, 16- and 32-column tiles, 512
 * columns of a block, pairs, 32-deep packing, 512-deep slices), all four
 * layouts, alpha and beta, padded leading dimensions. */
START_TEST(kernels_match_reference_on_edges)
{
    static const int Ms[] = {1, 13, 14, 15, 29, 61}, Ns[] = {1, 15, 16, 17, 33, 64, 130, 520},
                     Ks[] = {1, 2, 31, 33, 64, 512, 513, 1030};
    static const float ab[][2] = {{1, 0}, {-0.75f, 1}, {2, 0.5f}};
    double worst[KERNELS];
    for (int k = 0; k < KERNELS; k++) worst[k] = -1;
    int cases = 0;
    uint64_t seed = 1;
    for (int l = 0; l < 4; l++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++, seed += 3) {
                    const int M = Ms[mi], N = Ns[ni], K = Ks[ki];
                    if ((double)M * N * K > 1.2e6) continue;
                    const int v = (int)((l + mi + ni + ki) % 3), pad = (mi + ni + ki) % 2 ? 3 : 0;
                    const bool ta = l & 1, tb = l >> 1;
                    const prob p = {ta,      tb,       M,       N, K, (ta ? M : K) + pad, (tb ? K : N) + pad,
                                    N + pad, ab[v][0], ab[v][1]};
                    all_kernels(p, seed, true, (double)M * N * K <= 2e5, worst);
                    cases++;
                }
    report("edges", cases, worst);
    ck_assert_int_gt(cases, 1000);
    ck_assert(worst[1] >= 0 && worst[3] >= 0 && worst[4] >= 0);
}
END_TEST

/* A size in [1, hi]: half the time next to a multiple of 14, 16 or 32 */
static int edge_size(int hi)
{
    static const int widths[] = {14, 16, 32};
    int n;
    if (next_u32() % 2) {
        const int w = widths[next_u32() % 3], m = 1 + (int)(next_u32() % (uint32_t)(hi / w));
        n = m * w + (int)(next_u32() % 3) - 1;
    } else n = 1 + (int)(next_u32() % (uint32_t)hi);
    return n < 1 ? 1 : n > hi ? hi : n;
}

/* Random problems: M, N up to 300, K up to 1100, leading dimensions
 * larger by 0 to 40 (one in 8 of A's 1024 or 2048 floats apart). */
START_TEST(kernels_match_reference_random)
{
    static const float ab[][2] = {{1, 0}, {-0.75f, 1}, {2, 0.5f}, {0.5f, -2}, {1, 1}};
    double worst[KERNELS];
    for (int k = 0; k < KERNELS; k++) worst[k] = -1;
    int cases = 0;
    while (cases < 160) {
        const bool ta = cases & 1, tb = (cases >> 1) & 1;
        const int M = edge_size(300), N = edge_size(300), K = edge_size(cases % 5 ? 300 : 1100);
        if ((double)M * N * K > 4e6) continue;
        int pads[3];
        for (int i = 0; i < 3; i++) pads[i] = next_u32() % 3 ? (int)(next_u32() % 41) : 0;
        const int lda = (cases >> 4) % 2 ? 1024 : 2048; /* a power of two, where a row fits in it */
        if ((cases >> 2) % 4 == 3 && lda >= (ta ? M : K)) pads[0] = lda - (ta ? M : K);
        const int v = (int)(next_u32() % 5);
        const prob p = {ta,          tb,       M,       N, K, (ta ? M : K) + pads[0], (tb ? K : N) + pads[1],
                        N + pads[2], ab[v][0], ab[v][1]};
        all_kernels(p, 1000 + 4 * (uint64_t)cases, true, false, worst);
        cases++;
    }
    report("random sizes", cases, worst);
}
END_TEST

/* n floats of every magnitude: f32 subnormals, values near 2^-126 and the
 * top of the range, zeros of both signs, and exponents in [e_lo, e_hi]
 * (biased), now and then inf or NaN (nonfinite: allowed); only the last
 * range when it starts below 2^-37 (e_lo <= 90) and nonfinite is false */
static float *fill_any(size_t n, bool nonfinite, int e_lo, int e_hi)
{
    float *x = malloc(n * sizeof *x);
    if (!x) abort();
    for (size_t i = 0; i < n; i++) {
        const uint32_t kind = nonfinite || e_lo > 90 ? next_u32() % 10 : 9, sign = next_u32() & 0x80000000u;
        uint32_t e = e_lo + next_u32() % (uint32_t)(e_hi - e_lo + 1);
        if (kind == 0) e = 0; /* zero or subnormal */
        else if (kind == 1) e = 255 - 1 - next_u32() % 70; /* large */
        else if (kind == 2) e = 1 + next_u32() % 70; /* small */
        else if (kind == 3 && nonfinite && next_u32() % 64 == 0) e = 255;
        x[i] = float_of(sign | e << 23 | (next_u32() & 0x7fffffu));
    }
    return x;
}

/* The vdpbf16ps kernel, the portable one and the unpacked one on operands
 * of every magnitude (the portable kernel's exact steps, the instruction's
 * flushes), and on operands whose products sum to near 2^-126 (B 2^-66 and
 * A 2^-60 around): the same bits; NaN where the others have NaN. */
START_TEST(kernels_agree_on_every_magnitude)
{
    int cases = 0, flushed = 0;
    for (int t = 0; t < 48; t++) {
        const bool ta = t & 1, tb = (t >> 1) & 1, near_min = t % 3 == 2;
        const int M = edge_size(40), N = edge_size(70), K = edge_size(t % 4 ? 100 : 600);
        const prob p = {ta,
                        tb,
                        M,
                        N,
                        K,
                        (ta ? M : K) + t % 3,
                        (tb ? K : N) + t % 5,
                        N + t % 2,
                        t % 4 ? 1.0f : -0.5f,
                        t % 5 ? 0.0f : 0.25f};
        float *A =
            near_min ? fill_any(a_floats(&p), false, 127 - 62, 127 - 58) : fill_any(a_floats(&p), t % 2, 100, 154);
        float *B =
            near_min ? fill_any(b_floats(&p), false, 127 - 68, 127 - 64) : fill_any(b_floats(&p), false, 100, 154);
        const size_t nc = (size_t)M * p.ldc;
        float *C[3];
        for (int k = 0; k < 3; k++) {
            C[k] = malloc(nc * sizeof(float));
            if (!C[k]) abort();
            for (size_t i = 0; i < nc; i++) C[k][i] = (float)(i % 7) - 3.0f;
        }
        const bool hw = run_avx512(&p, A, B, C[0]);
        run_portable(&p, A, B, C[1]);
        run_direct(&p, A, B, C[2]);
        for (int k = hw ? 0 : 1; k < 2; k++)
            for (size_t i = 0; i < nc; i++) {
                const float x = C[k][i], y = C[2][i];
                if (!(isnan(x) && isnan(y)) && bits_of(x) != bits_of(y))
                    ck_abort_msg("%s and the unpacked kernel differ at %zu: %08x and %08x (ta=%d tb=%d M=%d N=%d K=%d)",
                                 KERNEL_NAMES[k], i, bits_of(x), bits_of(y), ta, tb, M, N, K);
            }
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) flushed += near_min && C[2][(size_t)i * p.ldc + j] == 0;
        free(A), free(B), free(C[0]), free(C[1]), free(C[2]);
        cases++;
    }
    printf("test_gemm_bf16: every magnitude, %d problems, the same bits (%d elements of C flushed to zero)\n", cases,
           flushed);
    ck_assert_int_gt(flushed, 0);
}
END_TEST

/* cuts[0..n] ascending from 0 to total: n random blocks */
static int random_cuts(int total, int *cuts, int max_blocks)
{
    int n = 0;
    cuts[0] = 0;
    while (cuts[n] < total && n < max_blocks - 1) {
        const int step = 1 + (int)(next_u32() % (uint32_t)(total / 2 + 1));
        cuts[n + 1] = cuts[n] + step < total ? cuts[n] + step : total;
        n++;
    }
    if (cuts[n] < total) cuts[++n] = total;
    return n;
}

/* A product cut into blocks of rows, of columns, and both, one call per
 * block (as ops/gemm.c cuts it, at any row or column), gives the bits of
 * one call: the vdpbf16ps kernel and the portable one, every layout,
 * alpha and beta, K across slices. */
START_TEST(cuts_give_the_same_bits)
{
    int cases = 0;
    for (int t = 0; t < 64; t++) {
        const int kern = t % 2 ? 1 : 0; /* run_avx512, run_portable */
        const bool ta = (t >> 1) & 1, tb = (t >> 2) & 1;
        const int M = edge_size(200), N = edge_size(200), K = edge_size(t % 3 ? 300 : 1100);
        prob p = {ta,
                  tb,
                  M,
                  N,
                  K,
                  (t >> 3) % 3 == 2 && (ta ? M : K) <= 1024 ? 1024 : (ta ? M : K) + t % 5, /* lda >= a row */
                  (tb ? K : N) + t % 7,
                  N + t % 3,
                  t % 4 ? 1 : -1.5f,
                  t % 3 == 0 ? 0 : 0.75f};
        float *A = fill(a_floats(&p), 40 + t), *B = fill(b_floats(&p), 80 + t), *C0 = fill((size_t)M * p.ldc, 120 + t);
        float *whole = malloc((size_t)M * p.ldc * sizeof(float)), *parts = malloc((size_t)M * p.ldc * sizeof(float));
        if (!whole || !parts) abort();
        memcpy(whole, C0, (size_t)M * p.ldc * sizeof(float));
        if (KERNEL_FNS[kern](&p, A, B, whole)) {
            cases++;
            for (int mode = 0; mode < 3; mode++) { /* rows, columns, both */
                int rc[9], cc[9];
                const int nr = mode != 1 ? random_cuts(M, rc, 8) : (rc[0] = 0, rc[1] = M, 1);
                const int ncut = mode != 0 ? random_cuts(N, cc, 8) : (cc[0] = 0, cc[1] = N, 1);
                memcpy(parts, C0, (size_t)M * p.ldc * sizeof(float));
                for (int bi = 0; bi < nr; bi++)
                    for (int bj = 0; bj < ncut; bj++) {
                        const int i0 = rc[bi], j0 = cc[bj];
                        prob q = p;
                        q.M = rc[bi + 1] - i0, q.N = cc[bj + 1] - j0;
                        KERNEL_FNS[kern](&q, A + (ta ? (size_t)i0 : (size_t)i0 * p.lda),
                                         B + (tb ? (size_t)j0 * p.ldb : (size_t)j0), parts + (size_t)i0 * p.ldc + j0);
                    }
                ck_assert_msg(memcmp(whole, parts, (size_t)M * p.ldc * sizeof(float)) == 0,
                              "%s %dx%dx%d ta=%d tb=%d: %s blocks (%d x %d) differ from one call", KERNEL_NAMES[kern],
                              M, N, K, ta, tb,
                              mode == 0       ? "row"
                                  : mode == 1 ? "column"
                                              : "row and column",
                              nr, ncut);
            }
        }
        free(A), free(B), free(C0), free(whole), free(parts);
    }
    printf("test_gemm_bf16: cuts, %d products in 3 ways each, the bits of one call\n", cases);
    ck_assert_int_ge(cases, 32);
}
END_TEST

/* tg_gemm_bf16 on 1, 2 and 3 threads gives the bits of one tg_sgemm_bf16
 * call: products cut by rows (M >= N) and by columns, of every layout. */
START_TEST(threads_give_the_same_bits)
{
    static const int shapes[][3] = {{64, 120, 300}, {300, 200, 100}, {40, 600, 100}, {500, 64, 700}, {1024, 96, 64}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
        for (int l = 0; l < 4; l++) {
            const bool ta = l & 1, tb = l >> 1;
            const int M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2];
            const prob p = {ta, tb, M, N, K, ta ? M : K, tb ? K : N, N, 1, 0.5f};
            float *A = fill(a_floats(&p), 8), *B = fill(b_floats(&p), 9), *one = fill((size_t)M * N, 10);
            float *got = malloc((size_t)M * N * sizeof(float)), *C0 = fill((size_t)M * N, 10);
            if (!got) abort();
            run_dispatch(&p, A, B, one);
            for (int threads = 1; threads <= 3; threads++) {
                tg_set_num_threads(threads);
                memcpy(got, C0, (size_t)M * N * sizeof(float));
                run_threaded(&p, A, B, got);
                ck_assert_msg(memcmp(one, got, (size_t)M * N * sizeof(float)) == 0,
                              "%dx%dx%d ta=%d tb=%d: %d threads differ from one call", M, N, K, ta, tb, threads);
            }
            tg_set_num_threads(1);
            free(A), free(B), free(one), free(got), free(C0);
        }
}
END_TEST

/* K = 0 gives beta C (beta = 0: zeros, a NaN in C not read); M or N = 0
 * writes nothing; an inf or a NaN in A reaches its row of C. */
START_TEST(degenerate_and_nonfinite)
{
    float C[6] = {1, 2, 3, 4, 5, NAN}, A[4] = {0}, B[4] = {0};
    tg_sgemm_bf16(false, false, 2, 3, 0, 1, A, 1, B, 3, 0.5f, C, 3);
    for (int i = 0; i < 5; i++) ck_assert_float_eq(C[i], 0.5f * (i + 1));
    tg_gemm_bf16(false, false, 2, 3, 0, 1, A, 1, B, 3, 0, C, 3);
    for (int i = 0; i < 6; i++) ck_assert(bits_of(C[i]) == 0);
    C[0] = 7;
    tg_gemm_bf16(false, false, 0, 3, 2, 1, A, 2, B, 3, 0, C, 3);
    tg_gemm_bf16(false, false, 2, 0, 2, 1, A, 2, B, 3, 0, C, 3);
    ck_assert_float_eq(C[0], 7);
    for (int k = 0; k < KERNELS; k++) {
        const prob p = {false, false, 3, 20, 5, 5, 20, 20, 1, 0};
        float *a = fill(15, 1), *b = fill(100, 2), c[60];
        a[1 * 5 + 2] = INFINITY, a[2 * 5 + 4] = NAN;
        for (int i = 0; i < 20; i++) b[2 * 20 + i] = 0.5f + (float)i; /* row 2 of B: inf times positive */
        if (KERNEL_FNS[k](&p, a, b, c))
            for (int j = 0; j < 20; j++) {
                ck_assert_msg(isfinite(c[j]), "%s: row 0 finite", KERNEL_NAMES[k]);
                ck_assert_msg(isinf(c[20 + j]) && c[20 + j] > 0, "%s: C(1,%d) = %g, want inf", KERNEL_NAMES[k], j,
                              c[20 + j]);
                ck_assert_msg(isnan(c[40 + j]), "%s: C(2,%d) = %g, want NaN", KERNEL_NAMES[k], j, c[40 + j]);
            }
        free(a), free(b);
    }
}
END_TEST

static void add_kernel_tests(TCase *tc)
{
    tcase_add_test(tc, kernels_match_reference_on_edges);
    tcase_add_test(tc, kernels_match_reference_random);
    tcase_add_test(tc, kernels_agree_on_every_magnitude);
    tcase_add_test(tc, cuts_give_the_same_bits);
    tcase_add_test(tc, threads_give_the_same_bits);
    tcase_add_test(tc, degenerate_and_nonfinite);
}

/* test_gemm_bf16: the rounding, the step and every kernel against their
 * definitions. test_gemm_bf16 --cpu: the rounding and the step against
 * this CPU's vcvtne2ps2bf16 and vdpbf16ps (exit 77, skipped, on a CPU or
 * compiler without AVX512_BF16). */
int main(int argc, char **argv)
{
    const bool cpu = argc > 1 && !strcmp(argv[1], "--cpu");
    if (cpu && !have_bf16()) {
        printf("skipped: this CPU (or compiler) has no AVX512_BF16 to compare with\n");
        return 77;
    }
    Suite *s = suite_create("gemm_bf16");
    TCase *tc = tcase_create("gemm_bf16");
    tcase_set_timeout(tc, 300);
    if (cpu) {
        tcase_add_test(tc, rounding_matches_the_cpu);
        tcase_add_test(tc, step_matches_the_cpu);
    } else {
        tcase_add_test(tc, rounding_matches_definition);
        tcase_add_test(tc, step_by_hand);
        add_kernel_tests(tc);
    }
    suite_add_tcase(s, tc);
    printf("test_gemm_bf16: the %s kernel path; the products on %s\n", tg_isa_name(tg_isa_active()),
           tg_isa_bf16() ? "vdpbf16ps" : "the portable kernel");
    return tt_run(s);
}
