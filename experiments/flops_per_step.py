"""The training FLOPs of one step of a config, as sparsetrain counts them (`flops_actual`: what the
kernels ran, sparse layers at their kept weights), for the make_configs.py scripts that size runs
to a FLOP budget. Trains the config one step with the build's binary in a temporary directory."""
import json
import subprocess
import tempfile
from pathlib import Path

BIN = Path(__file__).resolve().parents[1] / "build/src/cli/sparsetrain"


def flops_per_step(text):
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "c.yaml"
        cfg.write_text(text)
        subprocess.run([BIN, "train", "--params", cfg, "--model_dir", Path(tmp) / "run", "--max_steps", "1",
                        "--threads", "2"], check=True, capture_output=True)
        rows = [json.loads(l) for l in (Path(tmp) / "run/metrics.jsonl").read_text().splitlines()]
        return [r for r in rows if r.get("split") == "train"][-1]["flops_actual"]
