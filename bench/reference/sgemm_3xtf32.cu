// Reference only (not part of mlc): fp32 matmul emulated as 3xTF32 on tensor cores (mma.sync
// m16n8k8: a = big + small, each rounded to TF32; big*big + big*small + small*big), to measure its
// speed and its error against fp64 next to cuBLAS's fp32 (BENCHMARKS.md). PASSES=1: plain TF32.
// PROMOTE=n: every n steps of 8 along K the tensor cores' partial sums (which they accumulate with
// truncation) are added into fp32 accumulators by ordinary rounded adds. SINGLE: one shared stage
// filled by plain loads and stores between two barriers (what mlc's lowering emits), no cp.async.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#define NT ((BM / WM) * (BN / WN) * 32)
#define MT (WM / 16)
#define NTL (WN / 8)
#ifndef PADA
#define PADA 4
#endif
#ifndef PADB
#define PADB 8
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef PASSES
#define PASSES 3
#endif
#ifndef PROMOTE
#define PROMOTE 0
#endif


__device__ __forceinline__ void cp16(void* smem, const void* gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(gmem));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void wait_group() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }
__device__ __forceinline__ unsigned tf32(float x) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
__device__ __forceinline__ void split(float x, unsigned& hi, unsigned& lo) { hi = tf32(x); lo = tf32(x - __uint_as_float(hi)); }
__device__ __forceinline__ void mma(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void __launch_bounds__(NT, MINB)
sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, const float* __restrict__ bias, int M, int N, int K) {
  extern __shared__ __align__(16) float smem[];
  float (*As)[BM][BK + PADA] = (float (*)[BM][BK + PADA])smem;
  float (*Bs)[BK][BN + PADB] = (float (*)[BK][BN + PADB])(smem + STAGES * BM * (BK + PADA));
  const int tid = threadIdx.x;
  int bm = blockIdx.y, bn = blockIdx.x;
  const float* Ab = A + (size_t)bm * BM * K;
  const float* Bb = B + (size_t)bn * BN;
  const int warp = tid / 32, lane = tid % 32;
  const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
  const int g = lane >> 2, t = lane & 3;
  constexpr int A4 = BM * BK / 4 / NT;
  constexpr int B4 = BK * BN / 4 / NT;
  float acc[MT][NTL][4] = {};
#if PROMOTE > 1
  float part[MT][NTL][4] = {};
#endif
  auto load = [&](int kt, int s) {
    int k0 = kt * BK;
#pragma unroll
    for (int i = 0; i < A4; ++i) {
      int idx = tid + i * NT; int row = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
#ifdef SINGLE
      *(float4*)&As[s][row][kc] = *(const float4*)(Ab + (size_t)row * K + k0 + kc);
#else
      cp16(&As[s][row][kc], Ab + (size_t)row * K + k0 + kc);
#endif
    }
#pragma unroll
    for (int i = 0; i < B4; ++i) {
      int idx = tid + i * NT; int row = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
#ifdef SINGLE
      *(float4*)&Bs[s][row][c] = *(const float4*)(Bb + (size_t)(k0 + row) * N + c);
#else
      cp16(&Bs[s][row][c], Bb + (size_t)(k0 + row) * N + c);
#endif
    }
  };
  const int KT = K / BK;
#ifdef SINGLE
  for (int kt = 0; kt < KT; ++kt) {
    __syncthreads();
    load(kt, 0);
    __syncthreads();
    const int s = 0;
#else
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) { if (s < KT) load(s, s); commit(); }
  for (int kt = 0; kt < KT; ++kt) {
    wait_group<STAGES - 2>();
    __syncthreads();
    int nk = kt + STAGES - 1;
    if (nk < KT) load(nk, nk % STAGES);
    commit();
    const int s = kt % STAGES;
#endif
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      unsigned ah[MT][4], al[MT][4], bh[NTL][2], bl[NTL][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        const int r = wm + i * 16 + g;
        split(As[s][r][kk + t], ah[i][0], al[i][0]);
        split(As[s][r + 8][kk + t], ah[i][1], al[i][1]);
        split(As[s][r][kk + t + 4], ah[i][2], al[i][2]);
        split(As[s][r + 8][kk + t + 4], ah[i][3], al[i][3]);
      }
#pragma unroll
      for (int j = 0; j < NTL; ++j) {
        const int c = wn + j * 8 + g;
        split(Bs[s][kk + t][c], bh[j][0], bl[j][0]);
        split(Bs[s][kk + t + 4][c], bh[j][1], bl[j][1]);
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NTL; ++j) {
#if PROMOTE == 1
          float tmp[4] = {0.f, 0.f, 0.f, 0.f};
          float* target = tmp;
#elif PROMOTE
          float* target = part[i][j];
#else
          float* target = acc[i][j];
#endif
#if PASSES == 3
          mma(target, al[i], bh[j]);
          mma(target, ah[i], bl[j]);
#endif
          mma(target, ah[i], bh[j]);
#if PROMOTE == 1
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] += tmp[e];
#endif
        }
#if PROMOTE > 1
      if (((kt * BK + kk) / 8 + 1) % PROMOTE == 0) {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NTL; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) { acc[i][j][e] += part[i][j][e]; part[i][j][e] = 0.f; }
      }
#endif
    }
  }
#if PROMOTE > 1
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NTL; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] += part[i][j][e];
#endif
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NTL; ++j) {
      int row = bm * BM + wm + i * 16 + g, col = bn * BN + wn + j * 8 + 2 * t;
      float2 v0 = make_float2(acc[i][j][0], acc[i][j][1]), v1 = make_float2(acc[i][j][2], acc[i][j][3]);
#ifdef EPI
      float2 bb = *(const float2*)(bias + col);
      v0.x = fmaxf(v0.x + bb.x, 0.f); v0.y = fmaxf(v0.y + bb.y, 0.f); v1.x = fmaxf(v1.x + bb.x, 0.f); v1.y = fmaxf(v1.y + bb.y, 0.f);
#endif
      *(float2*)(C + (size_t)row * N + col) = v0;
      *(float2*)(C + (size_t)(row + 8) * N + col) = v1;
    }
}
