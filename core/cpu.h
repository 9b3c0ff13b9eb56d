/* tapegrad core: the kernel path in use.
 *
 * tapegrad's tuned f32 kernels come in three paths, chosen once from the
 * CPU when first needed:
 *
 *   generic   any x86-64 (or any other CPU): plain C, SSE2 on x86-64
 *   avx2      AVX2 + FMA (Haswell, Zen 1 and later)
 *   avx512    AVX-512 F, BW, DQ and VL (Skylake-X, Ice Lake, Zen 4, Zen 5)
 *
 * The environment variable TG_ISA=generic|avx2|avx512 caps the path: the
 * best one the CPU has, up to the cap (as oneDNN's ONEDNN_MAX_CPU_ISA).
 * Within one path results are the same bits on any thread count and
 * across a stopped and resumed run; across paths the last bits of f32
 * results may differ (docs/decisions.md). f64 work is the same on every
 * path. */
#ifndef TG_CPU_H
#define TG_CPU_H

#include <stdbool.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_isa { TG_ISA_GENERIC = 0, TG_ISA_AVX2 = 1, TG_ISA_AVX512 = 2 } tg_isa;

/* The path tapegrad's kernels take: the CPU's best (tg_isa_cpu), capped by
 * TG_ISA when it is set and by tg_isa_set_max. A TG_ISA value that is not
 * one of the three names takes the generic path, and tg_isa_check_env says
 * so (programs should refuse to run: tiny_gpt does). */
TG_API tg_isa tg_isa_active(void);
/* The best path this CPU (and this build's compiler) offers, whatever the cap. */
TG_API tg_isa tg_isa_cpu(void);
/* Caps the path from now on (the path in effect is min(max, tg_isa_cpu()))
 * and returns it. For tests and benchmarks that compare paths in one
 * process; not to be called while another thread runs tapegrad. A value
 * outside the enum leaves the path as it is. */
TG_API tg_isa tg_isa_set_max(tg_isa max);
/* Whether the products in bf16 (mixed precision) run on the CPU's
 * vdpbf16ps: the avx512 path is in use and the CPU has AVX512_BF16 (Zen 4
 * and 5, Cooper Lake, Sapphire Rapids and later). When false they take a
 * portable path that gives the same bits, slower than f32 products are
 * (ops/sgemm_bf16.c). Follows the cap as tg_isa_active does. */
TG_API bool tg_isa_bf16(void);
/* "generic", "avx2" or "avx512"; "?" for a value outside the enum. */
TG_API const char *tg_isa_name(tg_isa isa);
/* 0 when TG_ISA is unset or names a path; else -1 with a message naming
 * the value and the accepted ones. */
TG_API int tg_isa_check_env(tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
