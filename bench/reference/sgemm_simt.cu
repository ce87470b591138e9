// Reference only (not part of mlc): hand-written SIMT fp32 matmul variants, to measure what the
// structure mlc generates can reach on a GPU and which of its parts matter (BENCHMARKS.md).
// C[M,N] = A[M,K] @ B[K,N] (+bias, relu if EPI). Row-major. M, N multiples of BM, BN; K of BK.
// Defaults: 128x128x8 blocks, 256 threads, 8x8 micro-tiles in 4x4 chunks, A stored transposed in
// shared memory (16-byte reads), two shared stages, K steps fully unrolled. Switches: SINGLE (one
// shared stage, two barriers per K step), SCALAR_A (A stored as is, read one element per row),
// KUNROLL=n (unroll factor of the K steps), EPI (bias + relu epilogue), SWIZZLE_GROUP.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 32   // warp tile rows
#endif
#ifndef WN
#define WN 64   // warp tile cols
#endif
#ifndef LM
#define LM 4    // lane rows
#endif
#define LN (32 / LM)
#define TM (WM / LM)  // rows per thread (chunks of 4)
#define TN (WN / LN)
#define NT ((BM / WM) * (BN / WN) * 32)
#ifndef PADA
#define PADA 4
#endif
#ifndef PADB
#define PADB 4
#endif
#ifndef STAGES
#ifdef SINGLE
#define STAGES 1
#else
#define STAGES 2
#endif
#endif

extern "C" __global__ void __launch_bounds__(NT, MINB)
sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, const float* __restrict__ bias, int M, int N, int K) {
#ifdef SCALAR_A
  __shared__ __align__(16) float As[STAGES][BM][BK + PADA];
#else
  __shared__ __align__(16) float As[STAGES][BK][BM + PADA];
#endif
  __shared__ __align__(16) float Bs[STAGES][BK][BN + PADB];
  const int tid = threadIdx.x;
#ifdef SWIZZLE_GROUP
  // grouped block order for L2 reuse
  int pid = blockIdx.x, grid_n = N / BN, grid_m = M / BM;
  int group = SWIZZLE_GROUP * grid_n;
  int gid = pid / group, first_m = gid * SWIZZLE_GROUP;
  int gsize = min(grid_m - first_m, SWIZZLE_GROUP);
  int bm = first_m + (pid % group) % gsize, bn = (pid % group) / gsize;
#else
  int bm = blockIdx.y, bn = blockIdx.x;
#endif
  const float* Ab = A + (size_t)bm * BM * K;
  const float* Bb = B + (size_t)bn * BN;
  const int warp = tid / 32, lane = tid % 32;
  const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
  const int lr = lane / LN, lc = lane % LN;
  // global load mapping
  constexpr int A4 = BM * BK / 4 / NT;  // float4 per thread for A
  constexpr int B4 = BK * BN / 4 / NT;
  float4 ra[A4], rb[B4];
  float acc[TM][TN] = {};
  auto load = [&](int k0) {
#pragma unroll
    for (int i = 0; i < A4; ++i) {
      int idx = tid + i * NT; int row = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
      ra[i] = *(const float4*)(Ab + (size_t)row * K + k0 + kc);
    }
#pragma unroll
    for (int i = 0; i < B4; ++i) {
      int idx = tid + i * NT; int row = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      rb[i] = *(const float4*)(Bb + (size_t)(k0 + row) * N + c);
    }
  };
  auto store = [&](int s) {
#pragma unroll
    for (int i = 0; i < A4; ++i) {
      int idx = tid + i * NT; int row = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
#ifdef SCALAR_A
      *(float4*)&As[s][row][kc] = ra[i];
#else
      As[s][kc + 0][row] = ra[i].x; As[s][kc + 1][row] = ra[i].y; As[s][kc + 2][row] = ra[i].z; As[s][kc + 3][row] = ra[i].w;
#endif
    }
#pragma unroll
    for (int i = 0; i < B4; ++i) {
      int idx = tid + i * NT; int row = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      *(float4*)&Bs[s][row][c] = rb[i];
    }
  };
  load(0); store(0); __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    bool more = k0 + BK < K;
    if (more) load(k0 + BK);
#ifndef KUNROLL
#define KUNROLL BK
#endif
    constexpr int kunroll = KUNROLL;
#pragma unroll kunroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
#ifdef SCALAR_A
      for (int i = 0; i < TM; ++i) a[i] = As[s][wm + lr + LM * i][k];
#else
      for (int i = 0; i < TM / 4; ++i) *(float4*)&a[i * 4] = *(const float4*)&As[s][k][wm + i * LM * 4 + lr * 4];
#endif
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) *(float4*)&b[j * 4] = *(const float4*)&Bs[s][k][wn + j * LN * 4 + lc * 4];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
#ifdef SINGLE
    __syncthreads();
    if (more) store(0);
    __syncthreads();
#else
    if (more) { store(s ^ 1); }
    __syncthreads();
    s ^= 1;
#endif
  }
  float* Cb = C + (size_t)(bm * BM + wm) * N + bn * BN + wn;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#ifdef SCALAR_A
    int row = lr + LM * i;
#else
    int row = (i / 4) * LM * 4 + lr * 4 + i % 4;
#endif
#pragma unroll
    for (int j = 0; j < TN / 4; ++j) {
      int col = j * LN * 4 + lc * 4;
      float4 v = make_float4(acc[i][j * 4], acc[i][j * 4 + 1], acc[i][j * 4 + 2], acc[i][j * 4 + 3]);
#ifdef EPI
      float4 bb = *(const float4*)(bias + bn * BN + wn + col);
      v.x = fmaxf(v.x + bb.x, 0.f); v.y = fmaxf(v.y + bb.y, 0.f); v.z = fmaxf(v.z + bb.z, 0.f); v.w = fmaxf(v.w + bb.w, 0.f);
#endif
      *(float4*)(Cb + (size_t)row * N + col) = v;
    }
  }
}
