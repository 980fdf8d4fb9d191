// The instruction sets qdqrt's INT8 kernels are written for, detected once from CPUID.
// QDQRT_MAX_ISA=scalar|avx2|avxvnni|avx512vnni|amxint8 (or set_max_isa) forces a lower path so
// every variant can be tested on one machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace qdqrt::kernels {

// Ordered by preference. Not a chain: a CPU may have kAvx512Vnni without kAvxVnni (the
// VEX-encoded AVX-VNNI), so ask isa_supported() for each one.
// kAmxInt8 is kAvx512Vnni plus AMX-TILE/AMX-INT8 (tdpbusd on tile registers), the OS's tile state
// (XCR0) and Linux's permission to use it (arch_prctl(ARCH_REQ_XCOMP_PERM)), and a passed
// self-check (a small AMX GEMM against the oracle). Only the GEMM family (GEMM, 1x1 and
// implicit-GEMM convolution) has AMX kernels; every other family runs its avx512 variant there.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvxVnni = 2, kAvx512Vnni = 3, kAmxInt8 = 4 };

const char* isa_name(Isa isa);  // "scalar", "avx2", "avxvnni", "avx512vnni", "amxint8"
std::optional<Isa> parse_isa(const std::string& name);

// The best ISA the CPU (and OS, via XGETBV) supports.
Isa detected_isa();
// The best supported ISA not above the limit from set_max_isa() or else QDQRT_MAX_ISA.
Isa active_isa();
// Limits active_isa(); pass std::nullopt to go back to the environment/CPUID choice.
void set_max_isa(std::optional<Isa> isa);
bool isa_supported(Isa isa);
// The best supported ISA not above `limit` (ignores QDQRT_MAX_ISA).
Isa best_supported_up_to(Isa limit);

// AVX-512 VBMI (vpermb/vpermi2b) is an extra on top of kAvx512Vnni (Ice Lake+, Zen 4+): usable
// only when active_isa() is kAvx512Vnni, so QDQRT_MAX_ISA limits it too.
bool cpu_has_avx512vbmi();    // what CPUID says
bool avx512vbmi_usable();     // cpu_has_avx512vbmi() && active_isa() >= kAvx512Vnni

// Why the AMX tiles cannot be used here: the missing CPUID bit, OS tile state or permission
// ("" when the CPU and OS allow AMX-INT8). Does not run the self-check: the testers use this to
// call the real AMX kernels directly.
std::string amx_hardware_missing();
// Why kAmxInt8 is not supported here (amx_hardware_missing(), or the failed self-check; "" when
// it is). A failed self-check is also reported once on stderr.
std::string amx_unavailable_reason();

// For tests on machines without AMX: pretend AMX-INT8 is present and run its kernels through the
// emulated tile layer (kernels/gemm/qgemm_amx_tiles_inl.h), bit-exact with the real instructions and
// far slower. Needs kAvx512Vnni (the AMX kernels' epilogue is AVX-512). QDQRT_AMX_EMULATION=1 in
// the environment does the same for whole programs.
void set_amx_emulation(bool enabled);
bool amx_emulation();

// Per-core L2 size in bytes (sysconf; 2 MiB when the OS does not say). Zen 4/5 have 1 MiB,
// Sapphire Rapids 2 MiB: the GEMM sizes its column chunks from it.
int64_t l2_cache_bytes();
// Bytes of packed GEMM weights one column chunk may hold: half the L2, within [256 KiB, 1 MiB],
// so a chunk stays in L2 while every row block of the layer passes over it.
int64_t gemm_column_chunk_bytes();

}  // namespace qdqrt::kernels
