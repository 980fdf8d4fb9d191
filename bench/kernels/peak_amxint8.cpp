// tdpbusd throughput: four independent 16x16 int32 accumulator tiles (tmm0-3) fed by two A
// and two B tiles (tmm4-7), all 16 rows x 64 bytes. Runs only where isa_supported(kAmxInt8)
// (which has already asked Linux for the tile data permission).
#include <immintrin.h>

#include "bench/kernels/peak.h"
#include "kernels/gemm/qgemm_amx.h"

namespace qdqrt::bench {

int64_t tdpbusd_amx_loop(int64_t iterations) {
  const kernels::internal::AmxTileConfig config = kernels::internal::amx_kernel_tile_config();
  __asm__ volatile("" ::: "memory");  // GCC's ldtilecfg names only 8 of the config's 64 bytes
  _tile_loadconfig(&config);          // also zeroes the tiles
  for (int64_t it = 0; it < iterations; ++it) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  _tile_release();
  return iterations * 4 * 16 * 16 * 64;
}

}  // namespace qdqrt::bench
