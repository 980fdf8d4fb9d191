#include "kernels/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/gemm/qgemm_amx.h"

namespace qdqrt::kernels {

namespace {

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// One bit per Isa the CPU and OS support. The ISAs are not a chain: AVX-512 VNNI machines
// without the VEX-encoded AVX-VNNI exist (Zen 4/5 guests, Ice Lake), so each is checked on its own.
// Each level checks every extension its source files are compiled with (kernels/CMakeLists.txt):
// kAvx2 (and kAvxVnni): AVX2, FMA, F16C, BMI2; kAvx512Vnni: also AVX-512 F/BW/VL/DQ + VNNI.
unsigned detect_supported_mask() {
  unsigned mask = 1u << static_cast<int>(Isa::kScalar);
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return mask;
  const bool osxsave = ecx & (1u << 27);
  const bool avx = ecx & (1u << 28);
  const bool fma = ecx & (1u << 12);
  const bool f16c = ecx & (1u << 29);
  if (!osxsave || !avx || !fma || !f16c) return mask;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;
  if (!ymm_state) return mask;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool avx2 = ebx & (1u << 5);
  const bool bmi2 = ebx & (1u << 8);
  const bool avx512f = ebx & (1u << 16);
  const bool avx512dq = ebx & (1u << 17);
  const bool avx512bw = ebx & (1u << 30);
  const bool avx512vl = ebx & (1u << 31);
  const bool avx512vnni = ecx & (1u << 11);
  unsigned eax1 = 0, ebx1 = 0, ecx1 = 0, edx1 = 0;
  __cpuid_count(7, 1, eax1, ebx1, ecx1, edx1);
  const bool avxvnni = eax1 & (1u << 4);
  if (!avx2 || !bmi2) return mask;
  mask |= 1u << static_cast<int>(Isa::kAvx2);
  if (avxvnni) mask |= 1u << static_cast<int>(Isa::kAvxVnni);
  if (zmm_state && avx512f && avx512dq && avx512bw && avx512vl && avx512vnni) {
    mask |= 1u << static_cast<int>(Isa::kAvx512Vnni);
  }
  return mask;
}

unsigned supported_mask() {
  static const unsigned mask = detect_supported_mask();
  return mask;
}

// Linux (5.16+) hands out the 8 KB tile data state only to processes that ask for it.
constexpr long kArchGetXcompPerm = 0x1022;
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

std::string detect_amx_hardware_missing() {
  if (!(supported_mask() & (1u << static_cast<int>(Isa::kAvx512Vnni)))) {
    return "AVX-512 VNNI (the AMX kernels' epilogue) is missing";
  }
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  if (!(edx & (1u << 24))) return "the CPU lacks AMX-TILE (CPUID.(7,0):EDX bit 24)";
  if (!(edx & (1u << 25))) return "the CPU lacks AMX-INT8 (CPUID.(7,0):EDX bit 25)";
  const uint64_t xcr0 = read_xcr0();
  if ((xcr0 & (3ull << 17)) != (3ull << 17)) {
    return "the OS does not enable the AMX tile state (XCR0 bits 17 and 18 are clear)";
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    return std::string("Linux refused the AMX tile data permission (arch_prctl(ARCH_REQ_XCOMP_PERM): ") +
           std::strerror(errno) + ")";
  }
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0 || !(permitted & (1ul << kXfeatureXtiledata))) {
    return "Linux did not grant the AMX tile data permission (ARCH_GET_XCOMP_PERM)";
  }
  return "";
}

const std::string& amx_hardware_missing_cached() {
  static const std::string reason = detect_amx_hardware_missing();
  return reason;
}

// Computed once, after supported_mask(): the self-check packs for kAvx512Vnni, so it never asks
// about kAmxInt8 itself.
const std::string& amx_unavailable_cached() {
  static const std::string reason = [] {
    if (!amx_hardware_missing_cached().empty()) return amx_hardware_missing_cached();
    std::string failure = internal::amx_self_check();
    if (failure.empty()) return failure;
    std::fprintf(stderr, "qdqrt: warning: AMX-INT8 kernels disabled, their self-check failed (%s); using avx512vnni\n",
                 failure.c_str());
    return "the AMX self-check failed: " + failure;
  }();
  return reason;
}

std::atomic<int> amx_emulation_state{-1};  // -1: not set, read QDQRT_AMX_EMULATION

bool amx_supported() {
  if (amx_emulation()) return (supported_mask() & (1u << static_cast<int>(Isa::kAvx512Vnni))) != 0;
  return amx_unavailable_cached().empty();
}

// -1: no explicit limit (use the environment).
std::atomic<int> explicit_limit{-1};

}  // namespace

Isa best_supported_up_to(Isa limit) {
  for (int level = static_cast<int>(limit); level > 0; --level) {
    if (isa_supported(static_cast<Isa>(level))) return static_cast<Isa>(level);
  }
  return Isa::kScalar;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avxvnni";
    case Isa::kAvx512Vnni: return "avx512vnni";
    case Isa::kAmxInt8: return "amxint8";
  }
  return "unknown";
}

std::optional<Isa> parse_isa(const std::string& name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAmxInt8}) {
    if (name == isa_name(isa)) return isa;
  }
  return std::nullopt;
}

// Not cached: set_amx_emulation() changes it.
Isa detected_isa() { return best_supported_up_to(Isa::kAmxInt8); }

Isa active_isa() {
  Isa limit = Isa::kAmxInt8;
  int explicit_value = explicit_limit.load();
  if (explicit_value >= 0) {
    limit = static_cast<Isa>(explicit_value);
  } else if (const char* env = std::getenv("QDQRT_MAX_ISA")) {
    if (auto parsed = parse_isa(env)) limit = *parsed;
  }
  return best_supported_up_to(limit);
}

void set_max_isa(std::optional<Isa> isa) { explicit_limit.store(isa ? static_cast<int>(*isa) : -1); }

bool cpu_has_avx512vbmi() {
  static const bool has_vbmi = [] {
    if (!isa_supported(Isa::kAvx512Vnni)) return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    return (ecx & (1u << 1)) != 0;
  }();
  return has_vbmi;
}

bool avx512vbmi_usable() { return cpu_has_avx512vbmi() && active_isa() >= Isa::kAvx512Vnni; }

bool isa_supported(Isa isa) {
  if (isa == Isa::kAmxInt8) return amx_supported();
  return (supported_mask() & (1u << static_cast<int>(isa))) != 0;
}

std::string amx_hardware_missing() { return amx_hardware_missing_cached(); }

std::string amx_unavailable_reason() {
  if (amx_emulation()) return amx_supported() ? "" : "AVX-512 VNNI (needed by the emulated AMX kernels) is missing";
  return amx_unavailable_cached();
}

void set_amx_emulation(bool enabled) { amx_emulation_state.store(enabled ? 1 : 0); }

bool amx_emulation() {
  int state = amx_emulation_state.load();
  if (state < 0) {
    const char* env = std::getenv("QDQRT_AMX_EMULATION");
    state = env != nullptr && std::strcmp(env, "1") == 0 ? 1 : 0;
    int expected = -1;
    amx_emulation_state.compare_exchange_strong(expected, state);
    state = amx_emulation_state.load();
  }
  return state == 1;
}

int64_t l2_cache_bytes() {
  static const int64_t bytes = [] {
    const long reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return reported >= (64 << 10) ? static_cast<int64_t>(reported) : int64_t{2} << 20;
  }();
  return bytes;
}

int64_t gemm_column_chunk_bytes() {
  static const int64_t bytes = std::clamp<int64_t>(l2_cache_bytes() / 2, int64_t{256} << 10, int64_t{1} << 20);
  return bytes;
}

}  // namespace qdqrt::kernels
