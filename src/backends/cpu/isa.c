/*
 * isa.c - which vector instructions the CPU backend's kernels use: chosen at run time from what
 * the running CPU reports (cpuid through __builtin_cpu_supports), so one portable build runs the
 * AVX-512 kernels on Zen 4/5 and Sapphire Rapids and the AVX2 ones on Zen 3. Every level gives
 * the same bits (the kernels do the same operations per element); tests force each level the
 * machine runs and compare.
 */
#include "backends/cpu/cpu_internal.h"
#include "strix/backend.h"

static int forced = -1; /* -1: the best level of this CPU */

bool cpu_isa_supported(cpu_isa isa) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    switch (isa) {
    case CPU_ISA_SCALAR: return true;
    case CPU_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    case CPU_ISA_AVX512:
        return cpu_isa_supported(CPU_ISA_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl");
    }
    return false;
#else
    return isa == CPU_ISA_SCALAR;
#endif
}

cpu_isa cpu_isa_active(void) {
    static int best = -1; /* computed once; a racing second computation gives the same */
    if (forced >= 0) return (cpu_isa)forced;
    if (best < 0)
        best = cpu_isa_supported(CPU_ISA_AVX512) ? CPU_ISA_AVX512
               : cpu_isa_supported(CPU_ISA_AVX2) ? CPU_ISA_AVX2
                                                 : CPU_ISA_SCALAR;
    return (cpu_isa)best;
}

cpu_isa cpu_isa_force(int isa) {
    cpu_isa previous = cpu_isa_active();
    forced = isa >= 0 && cpu_isa_supported((cpu_isa)isa) ? isa : -1;
    return previous;
}

const char *cpu_isa_name(cpu_isa isa) {
    return isa == CPU_ISA_AVX512 ? "avx512" : isa == CPU_ISA_AVX2 ? "avx2" : "scalar";
}

const char *strix_cpu_isa(void) { return cpu_isa_name(cpu_isa_active()); }
