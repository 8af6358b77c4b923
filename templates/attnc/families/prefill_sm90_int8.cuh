// int8 inside prefill_sm90 (attention-semantics.md §5.2): Int8Mode::qk (int8 Q and K, 16-bit V) and
// Int8Mode::qkv (V int8 too, with per-channel v_channel_scale).
//
// Q and K tiles arrive by TMA as int8 rows: a SwizzledTile of half the columns in 2-byte units holds
// them byte for byte (AttentionParams' int8 strides are in 2-byte units too), and S = Q Kᵀ runs as
// s8 x s8 -> s32 wgmma (k32 steps, both operands K-major, sm90/wgmma_s8.cuh) into the registers of
// the fp32 score tile. The s32 sums convert exactly (|sum| <= 256 * 127 * 127 < 2^24) and are then
// multiplied by q_scale[row] * k_token_scale[key], as attention_sm80's int8 path does with its
// widened tiles, before softcap, ALiBi, mask and softmax. The score transform's own multiplier
// (scale * log2 e, or softcap's scale / cap) is folded into the q scales at the start, so the
// scores pay one multiplication less (FoldedScore is what is left of the transform); with neither
// softcap nor ALiBi the q scale goes further, into the softmax's exponent FMA
// (OnlineSoftmax::update_rows<true>), and a score costs one conversion and one multiplication (by its
// key's scale) more than a 16-bit one. P·V stays 16-bit.
//
// int8_qkv: 8-bit wgmma takes only K-major operands and V is MN-major for P·V, so V is widened to
// fp16 (exact for int8) in shared memory: TMA brings the raw int8 V tile into a ring of its own
// (raw_full / raw_empty barriers), and two producer warps turn it into the swizzled 16-bit V tile
// the consumers' wgmma reads (v_full gets one arrival per warp); P is packed as fp16 for that
// product whatever the element type (P in [0, 1]: fp16 keeps 3 more bits than bf16).
// v_channel_scale factors out of the sum over keys and multiplies O's columns in the epilogue, as
// attention_sm80 does.
//
// The key scales travel with the K tile: a producer warp copies the tile's BN scales into a ring
// beside the K ring and arrives on the same k_full barrier (which then waits for the TMA bytes and
// that arrival), so the consumers read them from shared memory after the product, holding no
// registers across it (fetching them into registers under the wgmma spilled at d128). K/V rows
// past the request read the next request's scales or zeros and are masked.
#pragma once

#include "attnc/features/int8_scales.cuh"
#include "attnc/features/score.cuh"
#include "attnc/params/params.h"
#include "attnc/sm90/fence.cuh"
#include "attnc/sm90/mbarrier.cuh"
#include "attnc/sm90/wgmma.cuh"
#include "attnc/sm90/wgmma_s8.cuh"

namespace attnc {

template <class T, int BN, int D, int STAGES>
struct PrefillInt8 {
  static constexpr Int8Mode kMode = Int8ModeOf<T>::value;
  static constexpr bool kOn = kMode != Int8Mode::none;
  // 16-bit kernels with neither softcap nor ALiBi: the score's scale * log2 e folded into the
  // exponent FMA as int8's q scale is (one FMUL a score less on the consumer chain: -3 % at d128
  // causal, docs/kernels-int8.md "The chain in cycles"). ATTNC_UNFOLD_SCALE16 restores the FMUL
  // per score (for an A/B).
#ifdef ATTNC_UNFOLD_SCALE16
  static constexpr bool kFold16 = false;
#else
  static constexpr bool kFold16 = !kOn && !T::kSoftcap && T::kAlibi == Alibi::none;
#endif
  // The row scale (q scale, or kFold16's) applied by the softmax (update_rows<true>) rather than to
  // each score: only where nothing between the scores and the softmax needs the true logits.
  static constexpr bool kRowScaleInSoftmax = (kOn || kFold16) && !T::kSoftcap && T::kAlibi == Alibi::none;
  // int8_qkv: V is fp16 in shared memory (P·V in fp16) and scaled per channel in the epilogue; it is
  // widened by the producer, or (T::kVPrewiden) once per call by `<entry>_widen_v` into a 16-bit
  // workspace that TMA loads as int8_qk's V (prefill_sm90_widen_v.cuh).
  static constexpr bool kFp16V = kMode == Int8Mode::qkv;
  static constexpr bool kWidenV = kFp16V && !T::kVPrewiden;  // V widened by the producer
  // Columns of the Q and K tiles in 2-byte units: one per int8 pair.
  static constexpr int kQkCols = kOn ? (D + 1) / 2 : D;
  static constexpr int KSTEPS = (D + 31) / 32;  // k32 steps; TMA zero-fills the columns past D
  // The key-scale ring (fp32, BN per stage) and the arrivals k_full takes per stage: the TMA
  // thread's and (contiguous K) the scale warp's; paged, the scales are bulk-copied with the K boxes
  // (prefill_sm90_paged.cuh) onto the TMA thread's arrival.
  static constexpr int kScaleBytes = kOn ? STAGES * BN * 4 : 0;
  static constexpr int kKeyFullArrivals = kOn && !T::kPaged ? 2 : 1;
  // v_full's arrivals: the TMA thread's, or (int8_qkv) one per widening warp.
  static constexpr int kWidenWarps = 2;
  static constexpr int kValueFullArrivals = kWidenV ? kWidenWarps : 1;
  // int8_qkv's raw V ring (RawVTile: rows of Dv bytes as 2-byte pairs) and its barriers.
  template <int DV>
  using RawVTile = SwizzledTile<BN, (DV + 1) / 2>;
  template <int DV>
  static constexpr int kRawVBytes = kWidenV ? STAGES * RawVTile<DV>::kBytes : 0;
  static constexpr int kRawBarrierBytes = kWidenV ? 2 * STAGES * 8 : 0;  // raw_full[STAGES], raw_empty[STAGES]

  // The score transform once its multiplier is in the q scales: softcap's tanh and cap, or nothing.
  struct FoldedScore {
    float out_mul;  // softcap: cap * log2(e)
    __device__ explicit FoldedScore(const AttentionParams& p) : out_mul(p.softcap * kLog2e) {}
    __device__ float operator()(float qk) const {
      if constexpr (T::kSoftcap) return fast_tanh(qk) * out_mul;
      return qk;
    }
  };

  float qs[2];  // q_scale of this thread's two rows times the transform's multiplier (0 past the request);
                // kFold16: scale * log2 e

  // S (as s32, in s's registers) = Q Kᵀ for the warpgroup's 64 rows at q_row0; issued, not waited.
  template <class QTile, class KTile>
  __device__ static void issue_qk(float (&s)[BN / 8][4], u32 q, u32 k, int q_row0) {
    int(&si)[BN / 8][4] = reinterpret_cast<int(&)[BN / 8][4]>(s);
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
      wgmma_s8_ss<BN>(si, QTile::desc_k_major(q, q_row0, kk), KTile::desc_k_major(k, 0, kk), kk > 0);
  }

  // Producer warp: the scales of keys [n0, n0 + BN) of the request (0 past sk, masked there) into
  // stage `ring`, once the consumers have released it; then one arrival on k_full. The loads are
  // issued before the wait, so their latency passes while the stage is still in use.
  __device__ static void load_scales(const AttentionParams& p, float* ring, u64* full, u64* empty, int kv_head,
                                     int k_begin, int sk, int n0, int i, int lane) {
    constexpr int kPerLane = (BN + 31) / 32;
    const float* ks = p.k_token_scale + kv_head * p.k_token_scale_head_stride;
    float v[kPerLane];
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      const int j = lane + 32 * t;
      v[t] = j < BN && n0 + j < sk ? __ldg(ks + (long long)(k_begin + n0 + j) * p.k_token_scale_row_stride) : 0.f;
    }
    if (lane == 0) mbar_wait(empty, ((i / STAGES) & 1) ^ 1);
    __syncwarp();
#pragma unroll
    for (int t = 0; t < kPerLane; ++t)
      if (lane + 32 * t < BN) ring[lane + 32 * t] = v[t];
    __syncwarp();
    if (lane == 0) mbar_arrive(full);  // release: the stores above are seen by whoever waits on `full`
  }

  // Widening warps (w = 0, 1 of kWidenWarps): the raw int8 V tile of stage s -> fp16 in the swizzled
  // 16-bit tile `dst` (VTile), once TMA has filled the one and the consumers have released the
  // other; then one arrival per warp on v_full and on raw_empty. Rows past the tensor arrive as
  // zeros (TMA's fill) and rows past the request are masked (P = 0 there).
  // 16 bytes a lane: biased to unsigned (xor 0x80), placed under the fp16 exponent of 1024
  // (0x64XX = 1024 + u), minus 1152: exact, with no int -> float conversions.
  template <class VTile, int DV>
  __device__ static void widen_v(u16* dst, const u16* raw, u64* v_full, u64* v_empty, u64* raw_full, u64* raw_empty,
                                 int i, int w, int lane) {
    if constexpr (kWidenV) {
      using Raw = RawVTile<DV>;
      constexpr int kPieces = (DV + 15) / 16;  // 16-byte pieces of a raw row
      if (lane == 0) {
        mbar_wait(raw_full, (i / STAGES) & 1);
        mbar_wait(v_empty, ((i / STAGES) & 1) ^ 1);
      }
      __syncwarp();
      constexpr bool kLaneConstant = 8 % kPieces == 0 && BN % (8 * (8 / kPieces)) == 0;  // whole passes
      if constexpr (kLaneConstant) {
        // Lane t of the 64 owns row r8 = t % 8 of each 8-row group and piece (t / 8) % kPieces of
        // row group (t / 8) / kPieces of each pass: the swizzle depends on the row only through
        // row % 8, so both tiles' offsets are lane constants plus 1024 bytes per pass, and the
        // loop is mostly the conversion (d128 SASS: 33 instructions per piece, 10 of them address
        // and loop, where the per-piece offsets made it 55 and 32). Each 8-lane phase of a
        // 16-byte access covers 8 rows of one piece: 8 distinct swizzled chunks, no bank conflict.
        static_assert(kWidenWarps * 32 == 64, "8 rows x 8 pieces per pass");
        constexpr int kRowsPerPass = 8 * (8 / kPieces);
        // The lane read afresh for each tile (volatile: not hoisted out of the caller's loop over
        // tiles, where the offsets below would stay live and spill the 24 registers).
        u32 fresh_lane;
        asm volatile("mov.u32 %0, %%laneid;\n" : "=r"(fresh_lane));
        const int t = w * 32 + int(fresh_lane), rest = t / 8;
        const int row = t % 8 + 8 * (rest / kPieces), piece = rest % kPieces;
        // The piece's second 16 bytes go to the chunk whose index differs in bit 0 (columns
        // piece * 16 + 8: chunk 2 p + 1 where the first is 2 p, both xor row % 8): element ^ 8,
        // which row offsets (multiples of 64) leave alone; one register less than a second offset.
        const int src = Raw::offset(row, piece * 8), out = VTile::offset(row, piece * 16);
#pragma unroll 1
        for (int r = 0; r < BN; r += kRowsPerPass) {
          const int rows = r * 64;  // r rows of 64 columns in both tiles
          const uint4 v = *reinterpret_cast<const uint4*>(raw + src + rows);
          const u32 a = v.x ^ 0x80808080u, b = v.y ^ 0x80808080u, c = v.z ^ 0x80808080u, d = v.w ^ 0x80808080u;
          *reinterpret_cast<uint4*>(dst + (out + rows)) =
              make_uint4(widen4_lo(a), widen4_hi(a), widen4_lo(b), widen4_hi(b));
          *reinterpret_cast<uint4*>(dst + ((out + rows) ^ 8)) =
              make_uint4(widen4_lo(c), widen4_hi(c), widen4_lo(d), widen4_hi(d));
        }
      } else {  // pieces per row that do not divide 8 (Dv 48, 80, 96, 112, 192, 256): offsets per piece
#pragma unroll 1
        for (int j = w * 32 + lane; j < BN * kPieces; j += kWidenWarps * 32) {
          const int row = j / kPieces, piece = j % kPieces;
          const uint4 in = *reinterpret_cast<const uint4*>(raw + Raw::offset(row, piece * 8));
          const u32 a = in.x ^ 0x80808080u, b = in.y ^ 0x80808080u, c = in.z ^ 0x80808080u, d = in.w ^ 0x80808080u;
          *reinterpret_cast<uint4*>(dst + VTile::offset(row, piece * 16)) =
              make_uint4(widen4_lo(a), widen4_hi(a), widen4_lo(b), widen4_hi(b));
          *reinterpret_cast<uint4*>(dst + VTile::offset(row, piece * 16 + 8)) =
              make_uint4(widen4_lo(c), widen4_hi(c), widen4_lo(d), widen4_hi(d));
        }
      }
      fence_proxy_async_shared();  // ordinary stores, read by wgmma
      __syncwarp();
      if (lane == 0) {
        mbar_arrive(v_full);
        mbar_arrive(raw_empty);
      }
    }
  }

  // Bytes 0, 1 (lo) or 2, 3 (hi) of four biased int8 values -> two fp16 values.
  __device__ static u32 widen4_lo(u32 u) { return hsub2_1152(__byte_perm(u, 0x64646464u, 0x5150)); }
  __device__ static u32 widen4_hi(u32 u) { return hsub2_1152(__byte_perm(u, 0x64646464u, 0x7372)); }

  // Two fp16 lanes minus 1152 (0x6480): 1024 + u - 1152 = u - 128, the signed byte.
  __device__ static u32 hsub2_1152(u32 x) {
    u32 r;
    asm("sub.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(x), "r"(0x64806480u));
    return r;
  }

  // int8_qkv: v_channel_scale of this thread's output columns d and d + 1 (1 past Dv, in the padding).
  template <int DV>
  __device__ static float2 v_scale(const AttentionParams& p, int kv_head, int d) {
    if constexpr (kFp16V) {
      const float* vs = p.v_channel_scale + kv_head * DV;
      return make_float2(d < DV ? vs[d] : 0.f, d + 1 < DV ? vs[d + 1] : 0.f);
    }
    return make_float2(1.f, 1.f);
  }

  // The online softmax's step over a tile of scores; between() after the row maxima (chain stamps).
  template <class Softmax, int NT, class Between>
  __device__ void softmax_update(Softmax& softmax, float (&s)[NT][4], float (&rescale)[2], Between between) const {
    const float unscaled[2] = {1.f, 1.f};
    if constexpr (kRowScaleInSoftmax) softmax.template update_rows<true>(s, rescale, qs, between);
    else softmax.template update_rows<false>(s, rescale, unscaled, between);
  }

  // tok: this thread's two rows within the request.
  __device__ void init(const AttentionParams& p, int head, int q_begin, int sq, const int (&tok)[2]) {
    if constexpr (kOn) {
      const float mul = T::kSoftcap ? p.softcap_inv_scale : p.scale_log2;  // ScoreTransform's, folded in
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        qs[r] = tok[r] < sq ? p.q_scale[(long long)(q_begin + tok[r]) * p.q_scale_row_stride +
                                        head * p.q_scale_head_stride] * mul
                            : 0.f;
        // update_rows<true> needs a scale > 0 (a masked -inf times 0 is NaN); a row of zeros (q_scale 0)
        // has every score 0, which a tiny scale keeps.
        if constexpr (kRowScaleInSoftmax) qs[r] = fmaxf(qs[r], 1e-30f);
      }
    } else if constexpr (kFold16) {
      qs[0] = qs[1] = p.scale_log2;  // > 0 (softmax_scale is checked finite and > 0)
    }
  }

  // s32 scores (in s's registers, fenced after the wait) -> fp32 times q_scale * k_token_scale (or,
  // kRowScaleInSoftmax, times k_token_scale only), the key scales from the K tile's stage of the
  // ring (read before the stage is released).
  __device__ void scale(float (&s)[BN / 8][4], const float* ring, int col0) const {
    if constexpr (kOn) {
      const int(&si)[BN / 8][4] = reinterpret_cast<const int(&)[BN / 8][4]>(s);
#pragma unroll
      for (int i = 0; i < BN / 8; ++i) {
        const float2 k = *reinterpret_cast<const float2*>(ring + i * 8 + col0);
        const int lo0 = si[i][0], lo1 = si[i][1], hi0 = si[i][2], hi1 = si[i][3];
        if constexpr (kRowScaleInSoftmax) {  // the q scale waits for the softmax
          s[i][0] = float(lo0) * k.x;
          s[i][1] = float(lo1) * k.y;
          s[i][2] = float(hi0) * k.x;
          s[i][3] = float(hi1) * k.y;
        } else {
          s[i][0] = float(lo0) * (qs[0] * k.x);
          s[i][1] = float(lo1) * (qs[0] * k.y);
          s[i][2] = float(hi0) * (qs[1] * k.x);
          s[i][3] = float(hi1) * (qs[1] * k.y);
        }
      }
    }
  }
};

}  // namespace attnc
