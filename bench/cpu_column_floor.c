/* The floor of one core's column sum of 4096x1024 f32 (16 MiB), hand-written with AVX-512.

     gcc -O2 -march=native -o /tmp/colsum bench/cpu_column_floor.c && /tmp/colsum

   Two loop orders, each at row blocks of RB = 16..256 rows (partials of RB rows, as
   graph-split-column-reductions makes them), best of 60 calls over 3 rounds:
   "strips": mlc's column kernel (columns_cpu.py): per block, strips of 128 columns, 8 vector
   accumulators, every row of the block read 512 bytes at a time, optionally with a software
   prefetch of the row pf rows ahead; "rowmajor": whole rows read in order, accumulated into a
   4 KiB row of partials in L1 (unroll: rows added together before the accumulator).
   What it says: how far any loop order gets from the memory system's per-core limit (issue 19's
   column sum at 1-2 threads, BENCHMARKS.md branch cpu12). */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define R 4096
#define C 1024
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
/* current mlc shape: blocks of RB rows, strips of 128 columns, 8 accumulators */
static void strips(const float*x, float*part, int RB, int pf){
  for(int b=0;b<R/RB;b++) for(int s=0;s<C/128;s++){
    __m512 a[8]; for(int g=0;g<8;g++) a[g]=_mm512_setzero_ps();
    for(int r=b*RB;r<(b+1)*RB;r++){ const float*p=x+(size_t)r*C+s*128;
      if(pf) for(int g=0;g<8;g++) _mm_prefetch((const char*)(p+pf*C+g*16),_MM_HINT_T0);
      for(int g=0;g<8;g++) a[g]=_mm512_add_ps(a[g],_mm512_loadu_ps(p+g*16));}
    for(int g=0;g<8;g++) _mm512_storeu_ps(part+b*C+s*128+g*16,a[g]);
  }
}
/* row-major: accumulator row in L1 */
static void rowmajor(const float*x, float*part, int RB, int unroll){
  for(int b=0;b<R/RB;b++){ float*acc=part+b*C; memset(acc,0,C*4);
    for(int r=b*RB;r<(b+1)*RB;r+=unroll){ const float*p=x+(size_t)r*C;
      for(int c=0;c<C;c+=16){ __m512 v=_mm512_loadu_ps(p+c);
        for(int u=1;u<unroll;u++) v=_mm512_add_ps(v,_mm512_loadu_ps(p+u*C+c));
        _mm512_storeu_ps(acc+c,_mm512_add_ps(_mm512_loadu_ps(acc+c),v));}}
  }
}
int main(){ float*x=aligned_alloc(64,(size_t)R*C*4); float*part=aligned_alloc(64,(size_t)R*C*4);
  for(size_t i=0;i<(size_t)R*C;i++) x[i]=(float)(i%7);
  double bs[5][3], br[5][3]; int rbs[]={16,32,64,128,256};
  for(int i=0;i<5;i++) for(int j=0;j<3;j++) bs[i][j]=br[i][j]=1e9;
  for(int round=0;round<3;round++){
    for(int i=0;i<5;i++) for(int j=0;j<3;j++){ int pf=j*4; for(int k=0;k<20;k++){double t=now(); strips(x,part,rbs[i],pf); t=now()-t; if(t<bs[i][j])bs[i][j]=t;}}
    for(int i=0;i<5;i++) for(int j=0;j<3;j++){ int u=1<<j; for(int k=0;k<20;k++){double t=now(); rowmajor(x,part,rbs[i],u); t=now()-t; if(t<br[i][j])br[i][j]=t;}}
  }
  for(int i=0;i<5;i++) printf("RB=%3d strips pf0/4/8: %.3f %.3f %.3f ms | rowmajor unroll1/2/4: %.3f %.3f %.3f ms\n",rbs[i],bs[i][0]*1e3,bs[i][1]*1e3,bs[i][2]*1e3,br[i][0]*1e3,br[i][1]*1e3,br[i][2]*1e3);
}
