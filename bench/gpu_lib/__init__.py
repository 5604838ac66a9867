"""The GPU benchmarks' parts (bench/gpu_path.py, bench/gpu_harness_step.py): run on the device machine
with torch, transformers, trl, peft and datasets only, and tested tiny on a CPU with `--smoke`."""
