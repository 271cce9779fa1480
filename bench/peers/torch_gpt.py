#!/usr/bin/env python3
"""Times training steps of sparsetrain's benchmark GPT written in plain PyTorch: the peer that
bench/peers/run.sh puts beside `sparsetrain bench train` (docs/benchmarks.md, "bf16 mixed precision").

The model is sparsetrain's `gpt` (src/sparsetrain/models/gpt.h) op for op: learned token and
position embeddings; pre-LayerNorm blocks x += attn.c_proj(attention(attn.c_attn(ln_1(x)))),
x += mlp.c_proj(gelu(mlp.c_fc(ln_2(x)))) with the tanh GELU; every linear layer and LayerNorm
with a bias; LayerNorm eps 1e-5; causal softmax(q k^T / sqrt(head dim)); no dropout; logits
ln_f(x) wte^T (tied head, no bias); mean softmax cross-entropy on the next token. AdamW over
every parameter in one group (weight decay on biases, gains and embeddings too, as sparsetrain
does). Initialization as GPT-2 and sparsetrain: N(0, 0.02), residual projections scaled by
1/sqrt(2 * layers), zero biases, unit gains (it does not change the speed).

Tokens are random (throughput only). A timed step is forward + loss, backward, optimizer step and
zero_grad; the result is the median step after the warm-up ones.

  --precision fp32   everything in float32
  --precision bf16   torch.autocast('cpu', dtype=torch.bfloat16) around forward and loss; float32
                     weights, gradients and AdamW (what the PyTorch recipe for CPU mixed precision
                     is)

  --profile          after the timed steps, --steps more under torch.profiler: the ops by self time
                     per step and the dense products' share of the step (stderr), to set beside
                     `sparsetrain bench train --profile`

  --ddp N            data parallel: the script starts N processes itself (torch.multiprocessing,
                     no torchrun), each with --threads threads, joined by torch.distributed's
                     "gloo" backend (TCP over the loopback interface: GLOO_SOCKET_IFNAME=lo unless
                     set) on the CPU, the model wrapped in
                     torch.nn.parallel.DistributedDataParallel with its default options (gradient
                     buckets of --bucket-cap-mb, 25 MB: torch's default; all-reduce overlapped
                     with backward; the constant causal-mask buffer left out of its syncing, as
                     gloo cannot broadcast bool tensors). The global --batch is split as evenly
                     as it goes (8 over 2: 4 and 4; 9 over 2: 5 and 4); each rank's loss is
                     scaled by its share of the batch times N, so that DDP's averaged gradient is
                     the global batch's mean even when the split is uneven. Every rank cuts its
                     rows from the same global batches. A timed step is the same as above,
                     started together on every rank (an untimed barrier before it); the step's
                     time is the slowest rank's, and the result is the median of those. tokens/s
                     = global batch x context / median step. Rank 0 prints the result, with
                     ranks, threads_per_rank, ddp_backend and ddp_bucket_cap_mb added.
"""
import argparse
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    p.add_argument("--steps", type=int, default=5, help="timed steps (default 5)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps before them (default 2)")
    p.add_argument("--seed", type=int, default=1)
    # The shape of configs/bench_gpt_csr90.yaml.
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--embed", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--layer-norm-eps", type=float, default=1e-5)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    p.add_argument("--profile", action="store_true",
                   help="after the timed steps, run --steps more under torch.profiler and print where "
                        "they go to stderr: the ops by self time per step, and the share of the dense "
                        "products (aten::mm, addmm, bmm); one process only")
    p.add_argument("--ddp", type=int, default=0, metavar="N",
                   help="data parallel over N processes this script starts, --threads each, --batch "
                        "split among them (DistributedDataParallel, gloo, CPU; default 0: one process, "
                        "no DDP)")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0,
                   help="DistributedDataParallel's bucket_cap_mb with --ddp (default 25, torch's default)")
    a = p.parse_args(argv)
    if a.ddp < 0:
        p.error("--ddp must be >= 0")
    if a.ddp and a.batch < a.ddp:
        p.error(f"--batch {a.batch} gives no rows to some of the {a.ddp} --ddp processes")
    if a.bucket_cap_mb <= 0:
        p.error("--bucket-cap-mb must be > 0")
    for name in ("threads", "steps", "layers", "embed", "heads", "context", "vocab", "batch"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be >= 1")
    if a.warmup < 0:
        p.error("--warmup must be >= 0")
    if a.embed % a.heads:
        p.error("--embed must be a multiple of --heads")
    return a


args = parse_args(sys.argv[1:])
# OpenBLAS (torch's float32 GEMM on Debian) sizes its thread pool from these when it loads, and
# torch.set_num_threads does not reach it, so they must be set before torch is imported.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = str(args.threads)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
    def __init__(self, c, heads, eps):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(c, eps=eps)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(c, 3 * c)
        self.attn.c_proj = nn.Linear(c, c)
        self.ln_2 = nn.LayerNorm(c, eps=eps)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(c, 4 * c)
        self.mlp.c_proj = nn.Linear(4 * c, c)

    def forward(self, x, causal_mask):
        b, t, c = x.shape
        d = c // self.heads
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, d).transpose(1, 2) for z in (q, k, v))  # [B, H, T, D]
        # torch 1.13 has no scaled_dot_product_attention: the explicit causal softmax it replaced.
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        att = att.masked_fill(causal_mask[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.attn.c_proj(y)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(a.vocab, a.embed)
        self.transformer.wpe = nn.Embedding(a.context, a.embed)
        self.transformer.h = nn.ModuleList(Block(a.embed, a.heads, a.layer_norm_eps) for _ in range(a.layers))
        self.transformer.ln_f = nn.LayerNorm(a.embed, eps=a.layer_norm_eps)
        # True above the diagonal: the keys after each query.
        self.register_buffer("causal_mask", torch.ones(a.context, a.context, dtype=torch.bool).triu(1),
                             persistent=False)
        residual_std = 0.02 / math.sqrt(2 * a.layers)
        for name, p in self.named_parameters():
            if name.endswith(".bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name:
                nn.init.ones_(p)
            else:
                nn.init.normal_(p, std=residual_std if name.endswith("c_proj.weight") else 0.02)

    def forward(self, ids, targets):
        tr = self.transformer
        t = ids.shape[1]
        x = tr.wte(ids) + tr.wpe(torch.arange(t, device=ids.device))
        for block in tr.h:
            x = block(x, self.causal_mask)
        logits = F.linear(tr.ln_f(x), tr.wte.weight)  # the tied head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def blas_library():
    """The BLAS library this process loaded (torch's build reports only BLAS_INFO=generic on Debian:
    the library is whatever Debian's libblas.so.3 alternative points at), with OpenBLAS's own
    configuration string and thread count when it is OpenBLAS."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if re.search(r"/lib(open)?blas[^/]*\.so", path):
                paths.add(os.path.realpath(path))
    info = {"loaded": sorted(paths)}
    for path in sorted(paths):
        if "openblas" in path:
            import ctypes
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            info["openblas_config"] = lib.openblas_get_config().decode()
            info["openblas_threads"] = lib.openblas_get_num_threads()
            break
    return info


def build_facts():
    """What torch.__config__.show() says about BLAS, MKL, oneDNN and the ATen CPU kernels."""
    shown = torch.__config__.show()
    facts = {}
    for key, pattern in (("onednn", r"(?:Intel\(R\) )?MKL-DNN v([\w.]+)"),
                         ("cpu_capability", r"CPU capability usage: (\w+)"),
                         ("blas_info", r"BLAS_INFO=([\w-]+)"),
                         ("lapack_info", r"LAPACK_INFO=([\w-]+)"),
                         ("use_mkldnn", r"USE_MKLDNN=(\w+)"),
                         ("parallel_backend", r"ATen parallel backend: (\w+)")):
        m = re.search(pattern, shown + torch.__config__.parallel_info())
        facts[key] = m.group(1) if m else None
    facts["mkl"] = torch.backends.mkl.is_available()
    facts["mkldnn_available"] = torch.backends.mkldnn.is_available()
    facts["blas_library"] = blas_library()
    return facts


def bf16_probe():
    """How this torch runs an autocast bfloat16 linear layer on this CPU: oneDNN's verbose lines
    from a child process name the matmul implementation and its ISA (e.g. brg:avx512_core_bf16,
    native bf16 dot products, against a conversion-based path on CPUs without them)."""
    code = ("import torch\n"
            "x = torch.randn(64, 128); w = torch.randn(256, 128)\n"
            "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
            "    y = torch.nn.functional.linear(x, w)\n"
            "print('dtype', y.dtype)\n")
    env = dict(os.environ, DNNL_VERBOSE="1", ONEDNN_VERBOSE="1", OMP_NUM_THREADS="1")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             timeout=120).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": str(e)}
    isa = re.search(r"onednn_verbose,info,cpu,isa:(.*)", out)
    impl = re.search(r"onednn_verbose,exec,cpu,(?:matmul|inner_product|gemm),([^,]+),", out)
    dtype = re.search(r"dtype (\S+)", out)
    implementation = impl.group(1) if impl else None
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    return {
        "autocast_dtype": dtype.group(1) if dtype else None,
        "onednn_isa": isa.group(1).strip() if isa else None,
        "matmul_implementation": implementation,
        # Native: oneDNN ran the bf16 product with bf16 dot-product instructions (AVX512_BF16 or
        # AMX) rather than through conversions to float32.
        "native": bool(implementation and re.search(r"bf16|amx", implementation)),
        "cpu_flags": [f for f in flags if "bf16" in f or f.startswith("amx")],
    }


def batch_shares(batch, ranks):
    """The rows of a global batch each rank takes: as even as it goes, the first ranks one more."""
    base, extra = divmod(batch, ranks)
    return [base + (1 if r < extra else 0) for r in range(ranks)]


def train_and_time(a, rank=0, ranks=0):
    """Builds the model and times its steps. ranks 0: one process, no DDP; otherwise this is rank
    `rank` of `ranks` in an initialized gloo group. Returns (step seconds, losses, model) of this
    process; with DDP the losses are this rank's rows' mean loss, before the scaling for uneven
    shares."""
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = Gpt(a)
    model.train()
    # DDP broadcasts rank 0's parameters at construction (they are equal anyway: same seed).
    net = model
    if ranks:
        ddp = torch.nn.parallel.DistributedDataParallel
        # The causal mask is a constant bool buffer, the same on every rank; gloo cannot broadcast
        # bool tensors, and DDP would broadcast it at construction and before every forward
        # (broadcast_buffers). Ignored, the model has no buffer DDP syncs.
        ddp._set_params_and_buffers_to_ignore_for_model(model, ["causal_mask"])
        net = ddp(model, bucket_cap_mb=a.bucket_cap_mb)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=a.weight_decay)
    # A few distinct batches, made before timing (sparsetrain's step includes cutting its batch
    # from the corpus, which takes well under 1 ms). With DDP every rank makes the same global
    # batches and takes its rows of them.
    gen = torch.Generator().manual_seed(a.seed)
    batches = [torch.randint(a.vocab, (a.batch, a.context + 1), generator=gen) for _ in range(4)]
    # DDP averages the ranks' gradients; a rank with a larger share of the batch weighs more in the
    # global mean loss, by share * ranks / batch (1 when the split is even).
    loss_scale = 1.0
    if ranks:
        shares = batch_shares(a.batch, ranks)
        first = sum(shares[:rank])
        batches = [b[first:first + shares[rank]] for b in batches]
        loss_scale = shares[rank] * ranks / a.batch

    def step(i):
        tokens = batches[i % len(batches)]
        ids, targets = tokens[:, :-1], tokens[:, 1:]
        if a.precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = net(ids, targets)
        else:
            loss = net(ids, targets)
        (loss * loss_scale if loss_scale != 1.0 else loss).backward()
        opt.step()
        # set_to_none: torch 2's default and the faster form (no memset before backward).
        opt.zero_grad(set_to_none=True)
        return loss

    if ranks:
        import torch.distributed as dist
    times, losses = [], []
    for i in range(a.warmup + a.steps):
        if ranks:
            dist.barrier()  # untimed: every rank starts the step together
        start = time.perf_counter()
        loss = step(i)
        elapsed = time.perf_counter() - start
        losses.append(loss.item())  # outside the timed region; the step above already ran it
        if i >= a.warmup:
            times.append(elapsed)
    if a.profile:
        profile_steps(a, step)
    return times, losses, model


# The aten ops that run the dense products; their self time is the product itself (oneDNN or
# BLAS is called inside them, not as an op of its own).
PRODUCT_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


def profile_steps(a, step):
    """Runs a.steps more steps under torch.profiler (CPU) and prints, to stderr, the ops by self
    time per step and how much of the step the dense products take. The profiler adds its own
    cost per op, so the profiled steps run somewhat slower than the timed ones."""
    from torch.profiler import ProfilerActivity, profile
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(a.steps):
            step(i)
    per_step_ms = (time.perf_counter() - start) * 1e3 / a.steps
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    print(f"torch_gpt --profile ({a.precision}): {a.steps} steps, {per_step_ms:.1f} ms per step "
          "under the profiler; self time per step:", file=sys.stderr)
    products = 0.0
    for e in events:
        ms = e.self_cpu_time_total / 1e3 / a.steps
        if e.key in PRODUCT_OPS:
            products += ms
        if ms >= 1.0:
            print(f"  {ms:9.1f} ms  {e.count // a.steps:6d} calls  {e.key}", file=sys.stderr)
    print(f"dense products ({', '.join(PRODUCT_OPS)}): {products:.1f} ms per step, "
          f"{products / per_step_ms:.0%} of the profiled step", file=sys.stderr)


def report(a, times, losses, model, ddp=None):
    """Prints the result: one JSON object with --json, else one line. `ddp`: the fields the DDP
    mode adds."""
    if not all(math.isfinite(v) for v in losses):
        sys.exit(f"torch_gpt: non-finite loss {losses}")
    step_s = statistics.median(times)
    tokens = a.batch * a.context
    result = {
        "peer": "pytorch",
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "precision": a.precision,
        "autocast": "torch.autocast('cpu', dtype=torch.bfloat16)" if a.precision == "bf16" else None,
        # With --ddp: each process's torch.get_num_threads(), as threads_per_rank.
        "threads": torch.get_num_threads(),
        "tokens_per_s": tokens / step_s,
        "step_ms_median": step_s * 1e3,
        "step_ms": [t * 1e3 for t in times],
        "steps": a.steps,
        "warmup": a.warmup,
        "layers": a.layers,
        "embed": a.embed,
        "heads": a.heads,
        "context": a.context,
        "vocab": a.vocab,
        "batch": a.batch,  # with --ddp the global batch, over every rank
        "tokens_per_step": tokens,
        "parameters": sum(p.numel() for p in model.parameters()),
        "optimizer": "torch.optim.AdamW (1.13's default single-tensor loop), zero_grad(set_to_none=True)",
        # What changes how this torch runs on a CPU besides the arguments.
        "env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY",
                                          "ATEN_CPU_CAPABILITY", "LD_LIBRARY_PATH", "LD_PRELOAD",
                                          "GLOO_SOCKET_IFNAME")
                if k in os.environ},
        "first_loss": losses[0],
        "last_loss": losses[-1],
        **(ddp or {}),
        "blas": build_facts(),
        "bf16": bf16_probe(),
    }
    if a.json:
        print(json.dumps(result), flush=True)
    elif ddp:
        per_rank = f"{ddp['threads_per_rank']} thread{'s' if ddp['threads_per_rank'] != 1 else ''}"
        print(f"pytorch {torch.__version__} {a.precision}, DDP {ddp['ddp_backend']} {ddp['ranks']} ranks x "
              f"{per_rank} (batch {'+'.join(map(str, ddp['batch_per_rank']))}): "
              f"{step_s * 1e3:.1f} ms per step (median of {a.steps}), {result['tokens_per_s']:.0f} tokens/s",
              flush=True)
    else:
        print(f"pytorch {torch.__version__} {a.precision}, {result['threads']} threads: "
              f"{step_s * 1e3:.1f} ms per step (median of {a.steps}), {result['tokens_per_s']:.0f} tokens/s")


def ddp_worker(rank, a, port):
    """One process of --ddp: joins the gloo group, trains and times; rank 0 reports the whole group."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=a.ddp)
    try:
        times, losses, model = train_and_time(a, rank, a.ddp)
        # Outside the timed steps: every rank's step times and losses to every rank.
        gathered = [None] * a.ddp
        dist.all_gather_object(gathered, (times, losses))
    finally:
        dist.destroy_process_group()
    if rank != 0:
        return
    shares = batch_shares(a.batch, a.ddp)
    # A step of the group ends when its slowest rank's does.
    step_times = [max(rank_times[i] for rank_times, _ in gathered) for i in range(a.steps)]
    # The global batch's mean loss: the ranks' means weighted by their rows.
    global_losses = [sum(rank_losses[i] * share for (_, rank_losses), share in zip(gathered, shares)) / a.batch
                     for i in range(a.warmup + a.steps)]
    report(a, step_times, global_losses, model, ddp={
        "ranks": a.ddp,
        "threads_per_rank": torch.get_num_threads(),
        "ddp_backend": "gloo",
        "ddp_bucket_cap_mb": a.bucket_cap_mb,
        "ddp_options": ("torch.nn.parallel.DistributedDataParallel, defaults but bucket_cap_mb "
                "(broadcast_buffers=True, gradient_as_bucket_view=False, find_unused_parameters=False); "
                "the constant causal-mask buffer ignored (gloo has no bool broadcast): no buffer synced; "
                "gloo TCP over 127.0.0.1; processes from torch.multiprocessing.spawn"),
        "batch_per_rank": shares,
        "step_timing": "untimed barrier before each step; a step's time is its slowest rank's",
        "step_ms_per_rank": [[t * 1e3 for t in rank_times] for rank_times, _ in gathered],
        "loss_per_rank": {"first": [rl[0] for _, rl in gathered], "last": [rl[-1] for _, rl in gathered]},
    })


def main():
    a = args
    if a.profile and a.ddp:
        sys.exit("torch_gpt: --profile profiles one process; it cannot be combined with --ddp")
    if not a.ddp:
        times, losses, model = train_and_time(a)
        report(a, times, losses, model)
        return
    import socket
    import torch.multiprocessing as mp
    # The processes talk over the loopback interface (gloo otherwise picks the interface the host
    # name resolves to).
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        mp.spawn(ddp_worker, args=(a, port), nprocs=a.ddp, join=True)
    except Exception as e:  # a rank failed: its traceback is in the message
        sys.exit(f"torch_gpt: --ddp {a.ddp}: {e}")


if __name__ == "__main__":
    main()
