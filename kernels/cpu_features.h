// The instruction sets qdqrt's INT8 kernels are written for, detected once from CPUID.
// QDQRT_MAX_ISA=scalar|avx2|avxvnni|avx512vnni (or set_max_isa) forces a lower path so every
// variant can be tested on one machine.
#pragma once

#include <optional>
#include <string>

namespace qdqrt::kernels {

// Ordered: a higher value implies the lower ones are usable too, with one exception: AVX-VNNI (the
// VEX form of vpdpbusd) is not implied by AVX-512 VNNI (Cascade Lake, Ice Lake and Zen 4 have
// AVX-512 VNNI without it); on such machines kAvxVnni is unsupported and limits fall back to kAvx2.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvxVnni = 2, kAvx512Vnni = 3 };

const char* isa_name(Isa isa);  // "scalar", "avx2", "avxvnni", "avx512vnni"
std::optional<Isa> parse_isa(const std::string& name);

// The highest level the CPU (and OS, via XGETBV) supports.
Isa detected_isa();
// min(detected_isa(), the limit from set_max_isa() or else QDQRT_MAX_ISA); kAvx2 instead of an
// unsupported kAvxVnni.
Isa active_isa();
// Limits active_isa(); pass std::nullopt to go back to the environment/CPUID choice.
void set_max_isa(std::optional<Isa> isa);
// Whether this machine can run the kernels of `isa` (kAvxVnni also needs cpu_has_avxvnni()).
bool isa_supported(Isa isa);
bool cpu_has_avxvnni();  // what CPUID says (true on kAvxVnni machines and some kAvx512Vnni ones)

// AVX-512 VBMI (vpermb/vpermi2b) is an extra on top of kAvx512Vnni (Ice Lake+, Zen 4+): usable
// only when active_isa() is kAvx512Vnni, so QDQRT_MAX_ISA limits it too.
bool cpu_has_avx512vbmi();  // what CPUID says
bool avx512vbmi_usable();   // cpu_has_avx512vbmi() && active_isa() == kAvx512Vnni

}  // namespace qdqrt::kernels
