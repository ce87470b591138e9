#!/bin/bash
# Builds the reference variants quoted in BENCHMARKS.md into PTX (needs nvcc; the GPU machine has
# none, so build here and carry the .ptx/.flags files). Run from anywhere.
set -e
cd "$(dirname "$0")"
build() {
  src=$1; name=$2; shift 2
  nvcc -arch=sm_90 -ptx -O3 "$@" "$src" -o "$name.ptx"
  sed -i 's/^\.version .*/.version 8.0/' "$name.ptx"  # the device driver JIT-compiles PTX 8.0
  echo "$*" > "$name.flags"
}
C="-DMINB=2 -DBM=128 -DBN=128 -DWM=32 -DWN=64"
build sgemm_simt.cu simt_best $C
build sgemm_simt.cu simt_best_epi $C -DEPI
build sgemm_simt.cu simt_single_scalar_a_k16 $C -DSINGLE -DSCALAR_A -DBK=16 -DKUNROLL=1
build sgemm_simt.cu simt_single_vector_a_k16 $C -DSINGLE -DBK=16
build sgemm_simt.cu simt_single_vector_a_k16_rolled $C -DSINGLE -DBK=16 -DKUNROLL=1
build sgemm_simt.cu simt_double_scalar_a_k16 $C -DSCALAR_A -DBK=16 -DKUNROLL=1
build sgemm_simt.cu simt_128x256 -DMINB=1 -DBN=256 -DWM=32 -DWN=128
build sgemm_3xtf32.cu tf32x3 -DWM=64 -DWN=64 -DMINB=1 -DSTAGES=3 -DBK=32 -DSMEM -DPADB=8
build sgemm_3xtf32.cu tf32x1 -DWM=64 -DWN=64 -DMINB=1 -DSTAGES=3 -DBK=32 -DSMEM -DPADB=8 -DPASSES=1
T="-DWM=64 -DWN=64 -DMINB=1 -DSMEM -DPADB=8"
build sgemm_3xtf32.cu tf32x3_promote1 $T -DBK=32 -DSTAGES=3 -DPROMOTE=1
build sgemm_3xtf32.cu tf32x3_single $T -DBK=32 -DSTAGES=1 -DSINGLE
build sgemm_3xtf32.cu tf32x3_single_promote1 $T -DBK=32 -DSTAGES=1 -DSINGLE -DPROMOTE=1
build sgemm_3xtf32.cu tf32x3_single_bk16_promote1 $T -DBK=16 -DSTAGES=1 -DSINGLE -DPROMOTE=1
T="-DWM=64 -DWN=32 -DMINB=1 -DSMEM -DPADB=8"
build sgemm_3xtf32.cu tf32x3_w32_promote4 $T -DBK=32 -DSTAGES=3 -DPROMOTE=4
build sgemm_3xtf32.cu tf32x3_w32_single_promote1 $T -DBK=32 -DSTAGES=1 -DSINGLE -DPROMOTE=1
build sgemm_3xtf32.cu tf32x3_w32_single_promote4 $T -DBK=32 -DSTAGES=1 -DSINGLE -DPROMOTE=4
build sgemm_3xtf32.cu tf32x3_w32 $T -DBK=32 -DSTAGES=3
build sgemm_3xtf32.cu tf32x3_w32_promote32 $T -DBK=32 -DSTAGES=3 -DPROMOTE=32
build sgemm_3xtf32.cu tf32x3_w32_promote128 $T -DBK=32 -DSTAGES=3 -DPROMOTE=128
T="-DWM=32 -DWN=64 -DMINB=1 -DSMEM -DPADB=8"
build sgemm_3xtf32.cu tf32x3_m32_promote32 $T -DBK=32 -DSTAGES=3 -DPROMOTE=32
T="-DWM=64 -DWN=32 -DMINB=2 -DSMEM -DPADB=8"
build sgemm_3xtf32.cu tf32x3_w32_minb2_promote32 $T -DBK=32 -DSTAGES=3 -DPROMOTE=32
build sgemm_simt.cu simt_double_vector_a_k16 $C -DBK=16
