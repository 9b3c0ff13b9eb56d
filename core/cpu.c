/* The kernel path (cpu.h): the CPU's best, capped by TG_ISA and
 * tg_isa_set_max.
 *
 * The CPU is asked through GCC's __builtin_cpu_supports, which also
 * checks that the OS saves the registers (XCR0): AVX-512 needs F (the
 * 512-bit registers and masks), BW and DQ (byte/word and dword/qword
 * lanes the compiler uses for masks and conversions) and VL (the same
 * instructions on 256 and 128 bits), which every AVX-512 CPU from
 * Skylake-X on has. The path is computed on first use and kept in an
 * atomic, so reading it in a kernel costs one load. AVX512_BF16
 * (vdpbf16ps, vcvtne2ps2bf16) is asked the same way, and counts only on
 * the avx512 path. */
#include "cpu.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa_internal.h" /* TG_AVX2_KERNELS: whether this compiler built the tuned kernels */

static const char *const NAMES[] = {"generic", "avx2", "avx512"};

static atomic_int active = -1; /* the path in effect, -1 until first asked */
static atomic_int bf16 = -1; /* whether the CPU has AVX512_BF16, -1 until first asked */
static char env_error[160];

tg_isa tg_isa_cpu(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return TG_ISA_GENERIC;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return TG_ISA_AVX512;
    return TG_ISA_AVX2;
#else
    return TG_ISA_GENERIC;
#endif
}

/* TG_ISA's cap: the path it names, TG_ISA_AVX512 when unset, generic
 * (with env_error set) for anything else */
static tg_isa env_cap(void)
{
    const char *e = getenv("TG_ISA");
    if (!e) return TG_ISA_AVX512;
    for (int i = 0; i < 3; i++)
        if (strcmp(e, NAMES[i]) == 0) return (tg_isa)i;
    snprintf(env_error, sizeof env_error, "TG_ISA='%.60s' is not a kernel path: use generic, avx2 or avx512", e);
    return TG_ISA_GENERIC;
}

static tg_isa capped(tg_isa max)
{
    tg_isa cpu = tg_isa_cpu();
    return max < cpu ? max : cpu;
}

tg_isa tg_isa_active(void)
{
    int a = atomic_load_explicit(&active, memory_order_relaxed);
    if (a < 0) {
        a = (int)capped(env_cap());
        atomic_store_explicit(&active, a, memory_order_relaxed);
    }
    return (tg_isa)a;
}

tg_isa tg_isa_set_max(tg_isa max)
{
    if ((int)max < TG_ISA_GENERIC || (int)max > TG_ISA_AVX512) return tg_isa_active();
    (void)tg_isa_active(); /* reads TG_ISA once, for tg_isa_check_env */
    atomic_store_explicit(&active, (int)capped(max), memory_order_relaxed);
    return tg_isa_active();
}

bool tg_isa_bf16(void)
{
    if (tg_isa_active() != TG_ISA_AVX512) return false;
    int b = atomic_load_explicit(&bf16, memory_order_relaxed);
    if (b < 0) {
#ifdef TG_AVX2_KERNELS /* (the bf16 kernel is built only with them) */
        __builtin_cpu_init();
        b = __builtin_cpu_supports("avx512bf16") != 0;
#else
        b = 0;
#endif
        atomic_store_explicit(&bf16, b, memory_order_relaxed);
    }
    return b != 0;
}

const char *tg_isa_name(tg_isa isa)
{
    return (int)isa >= TG_ISA_GENERIC && (int)isa <= TG_ISA_AVX512 ? NAMES[isa] : "?";
}

int tg_isa_check_env(tg_error *err)
{
    (void)tg_isa_active();
    return env_error[0] ? tg_error_set(err, "%s", env_error) : 0;
}
