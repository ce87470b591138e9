#!/bin/bash
# Samples the SM clock and power while cuBLAS fp32 4096^3 runs for a few seconds (on the GPU machine).
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv,noheader -lms 250 > /tmp/clocks.csv &
smi=$!
python3 - <<'PY'
import torch, time
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.randn(4096, 4096, device="cuda"); b = torch.randn(4096, 4096, device="cuda")
end = time.time() + 4
while time.time() < end:
    for _ in range(50): a @ b
    torch.cuda.synchronize()
PY
kill $smi
echo "sm clock MHz, max MHz, power, limit, temp (sampled every 250 ms under cuBLAS fp32 4096^3):"
tail -n 8 /tmp/clocks.csv
