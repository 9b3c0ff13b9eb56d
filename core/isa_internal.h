/* tapegrad core (internal): one loop compiled for every kernel path
 * (core/cpu.h).
 *
 * A hot f32 loop is written once, as a `TG_KERNEL_BODY` function
 * `name_body`, and TG_ISA_CLONES(ret, name,
 * (params), (args)) (or TG_ISA_CLONES_VOID(name, ...)) compiles it three
 * times: for x86-64-v4 (AVX-512 F/BW/DQ/VL, 16 lanes), for x86-64-v3
 * (AVX2 + FMA, 8 lanes) and for the baseline (SSE2, 4 lanes), and makes
 * `name`, which calls the one of the path in use (tg_isa_active). The
 * library is built with -ffp-contract=fast, which only the v3 and v4
 * clones can act on, so the paths round differently (by an ulp or so);
 * each is deterministic. Where the compiler has no such targets (not GCC
 * 11+ on x86-64), `name` is the body compiled once. */
#ifndef TG_ISA_INTERNAL_H
#define TG_ISA_INTERNAL_H

#include "cpu.h"

#define TG_KERNEL_BODY static inline __attribute__((always_inline))
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && defined(__x86_64__)
/* Kernels written with AVX2 + FMA intrinsics (ops/sgemm.c,
 * ops/attention_avx2.c) and AVX-512 ones (ops/sgemm_avx512.c,
 * ops/attention_avx512.c), called only when tg_isa_active() says so. */
#define TG_AVX2_KERNELS 1
#define TG_TARGET_AVX2 __attribute__((target("arch=x86-64-v3")))
#define TG_TARGET_AVX512 __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))
#define TG_ISA_CLONES(ret, name, params, args)                                                                         \
    TG_TARGET_AVX512 static ret name##_avx512 params { return name##_body args; }                                      \
    TG_TARGET_AVX2 static ret name##_avx2 params { return name##_body args; }                                          \
    static ret name##_generic params { return name##_body args; }                                                      \
    static ret name params                                                                                             \
    {                                                                                                                  \
        switch (tg_isa_active()) {                                                                                     \
        case TG_ISA_AVX512: return name##_avx512 args;                                                                 \
        case TG_ISA_AVX2: return name##_avx2 args;                                                                     \
        default: return name##_generic args;                                                                           \
        }                                                                                                              \
    }
#define TG_ISA_CLONES_VOID(name, params, args)                                                                         \
    TG_TARGET_AVX512 static void name##_avx512 params { name##_body args; }                                            \
    TG_TARGET_AVX2 static void name##_avx2 params { name##_body args; }                                                \
    static void name##_generic params { name##_body args; }                                                            \
    static void name params                                                                                            \
    {                                                                                                                  \
        switch (tg_isa_active()) {                                                                                     \
        case TG_ISA_AVX512: name##_avx512 args; break;                                                                 \
        case TG_ISA_AVX2: name##_avx2 args; break;                                                                     \
        default: name##_generic args;                                                                                  \
        }                                                                                                              \
    }
static inline int tg_cpu_avx2(void) { return tg_isa_active() >= TG_ISA_AVX2; }
static inline int tg_cpu_avx512(void) { return tg_isa_active() >= TG_ISA_AVX512; }
#else
#define TG_ISA_CLONES(ret, name, params, args)                                                                         \
    static ret name params { return name##_body args; }
#define TG_ISA_CLONES_VOID(name, params, args)                                                                         \
    static void name params { name##_body args; }
static inline int tg_cpu_avx2(void) { return 0; }
static inline int tg_cpu_avx512(void) { return 0; }
#endif

#endif
