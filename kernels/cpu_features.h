// The instruction sets qdqrt's INT8 kernels are written for, detected once from CPUID.
// QDQRT_MAX_ISA=scalar|avx2|avxvnni|avx512vnni (or set_max_isa) forces a lower path so every
// variant can be tested on one machine.
#pragma once

#include <optional>
#include <string>

namespace qdqrt::kernels {

// Ordered by preference. Not a chain: a CPU may have kAvx512Vnni without kAvxVnni (the
// VEX-encoded AVX-VNNI), so ask isa_supported() for each one.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvxVnni = 2, kAvx512Vnni = 3 };

const char* isa_name(Isa isa);  // "scalar", "avx2", "avxvnni", "avx512vnni"
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
bool avx512vbmi_usable();     // cpu_has_avx512vbmi() && active_isa() == kAvx512Vnni

}  // namespace qdqrt::kernels
