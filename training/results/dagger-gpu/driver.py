"""One device call's training: step by step until the time is spent, keeping every step's adapter, then
three of them (first third, second third, last) tarred and split under the device tool's 16 MiB a file.

python3 training/results/dagger-gpu/driver.py CONFIG MODEL_DIR SECONDS
"""
import os
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())
from training.config import load_config  # noqa: E402
from training.run import train  # noqa: E402

config_path, model_dir, budget = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
out = Path(os.environ.get("OUT", "/tmp/out"))
out.mkdir(parents=True, exist_ok=True)
start = time.monotonic()
run, keep = Path("/tmp/run"), Path("/tmp/adapters")
trainer = train(load_config(config_path), run, model_dir, max_steps=1)
trainer.save_adapter(keep / f"step{trainer.step}")
step_s = time.monotonic() - start
while trainer.step < trainer.total_steps and time.monotonic() - start + 1.15 * step_s < budget:
    t0 = time.monotonic()
    trainer.run(max_steps=1)
    trainer.save_adapter(keep / f"step{trainer.step}")
    step_s = time.monotonic() - t0
print(f"stopped after step {trainer.step} at {time.monotonic() - start:.0f} s", flush=True)

(out / "metrics.jsonl").write_bytes((run / "metrics.jsonl").read_bytes())
n = trainer.step
for step in sorted({max(1, n // 3), max(1, 2 * n // 3), n}):
    tar = Path(f"/tmp/adapter-step{step}.tar")
    with tarfile.open(tar, "w") as t:
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            t.add(keep / f"step{step}" / name, arcname=f"adapter-step{step}/{name}")
    data = tar.read_bytes()
    half = len(data) // 2 + 1
    (out / f"adapter-step{step}.tar.0").write_bytes(data[:half])
    (out / f"adapter-step{step}.tar.1").write_bytes(data[half:])
print("packed", sorted(p.name for p in out.iterdir()), flush=True)
