#!/usr/bin/python3
"""A tiny GPT-2 in Hugging Face's layout, for the import test in tests/unit/hf/test_hf_gpt2.cpp.

Writes, deterministically (fixed seed, CPU):

  fixtures/hf_gpt2_tiny/config.json        GPT2Config's fields: 2 layers, 2 heads, width 16,
                                           context 16, vocabulary 260 (room for the byte
                                           tokenizer's 257 ids), gelu_new
  fixtures/hf_gpt2_tiny/model.safetensors  the weights as GPT2Model.save_pretrained names them
                                           (no `transformer.` prefix, like the hub's gpt2), Conv1D
                                           weights [in, out], no lm_head (tied), and the
                                           h.N.attn.bias / h.N.attn.masked_bias buffers that
                                           older transformers saved, which an importer must skip
  fixtures/hf_gpt2_tiny_expected.safetensors
                                           inputs.ids (F32 integers), a batch of 2 x 11 tokens,
                                           and expected.logits [22 x 260]

The forward pass below is written from transformers' GPT2 definition (Conv1D: y = x W + b;
q, k, v split from c_attn's output in that order; softmax(q k^T / sqrt(d)) over earlier positions;
gelu_new; logits = ln_f(x) wte^T), not from sparsetrain's code, and computed in float64 on
float32-representable weights. transformers itself is not needed (nor in Debian).

Run with Debian's torch (apt install python3-torch):

    /usr/bin/python3 tests/golden/make_hf_gpt2_fixture.py
"""

import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import Draw, write_safetensors  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CONFIG = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "vocab_size": 260,
    "n_positions": 16,
    "n_ctx": 16,
    "n_embd": 16,
    "n_layer": 2,
    "n_head": 2,
    "n_inner": None,
    "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-05,
    "initializer_range": 0.02,
    "resid_pdrop": 0.1,
    "embd_pdrop": 0.1,
    "attn_pdrop": 0.1,
    "bos_token_id": 256,
    "eos_token_id": 256,
    "tie_word_embeddings": True,
    "torch_dtype": "float32",
}
ROWS, SEQ = 2, 11


def weights(draw, cfg):
    v, p, c = cfg["vocab_size"], cfg["n_positions"], cfg["n_embd"]
    w = {"wte.weight": draw.normal((v, c), 0.3), "wpe.weight": draw.normal((p, c), 0.3)}

    def norm(name):
        w[f"{name}.weight"] = draw.normal((c,), 0.2, mean=1.0)
        w[f"{name}.bias"] = draw.normal((c,), 0.2)

    def conv1d(name, inputs, outputs):
        w[f"{name}.weight"] = draw.normal((inputs, outputs), 0.3)  # Conv1D: [in, out]
        w[f"{name}.bias"] = draw.normal((outputs,), 0.2)

    for layer in range(cfg["n_layer"]):
        h = f"h.{layer}"
        norm(f"{h}.ln_1")
        conv1d(f"{h}.attn.c_attn", c, 3 * c)
        conv1d(f"{h}.attn.c_proj", c, c)
        norm(f"{h}.ln_2")
        conv1d(f"{h}.mlp.c_fc", c, 4 * c)
        conv1d(f"{h}.mlp.c_proj", 4 * c, c)
    norm("ln_f")
    return w


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def forward(w, cfg, ids):
    """GPT2LMHeadModel's logits for ids [rows x seq], in float64."""
    c, heads, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    rows, seq = ids.shape
    d = c // heads

    def ln(name, x):
        return torch.nn.functional.layer_norm(x, (c,), w[f"{name}.weight"], w[f"{name}.bias"], eps)

    def conv1d(name, x):
        return x @ w[f"{name}.weight"] + w[f"{name}.bias"]

    x = w["wte.weight"][ids] + w["wpe.weight"][torch.arange(seq)]
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()
    for layer in range(cfg["n_layer"]):
        h = f"h.{layer}"
        q, k, v = conv1d(f"{h}.attn.c_attn", ln(f"{h}.ln_1", x)).split(c, dim=-1)
        q, k, v = (t.view(rows, seq, heads, d).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
        att = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(rows, seq, c)
        x = x + conv1d(f"{h}.attn.c_proj", y)
        x = x + conv1d(f"{h}.mlp.c_proj", gelu_new(conv1d(f"{h}.mlp.c_fc", ln(f"{h}.ln_2", x))))
    return ln("ln_f", x) @ w["wte.weight"].T


def main():
    draw = Draw(20261201)
    w = weights(draw, CONFIG)
    ids = draw.integers((ROWS, SEQ), CONFIG["vocab_size"])
    logits = forward(w, CONFIG, ids).reshape(ROWS * SEQ, CONFIG["vocab_size"])

    out = FIXTURES / "hf_gpt2_tiny"
    out.mkdir(parents=True, exist_ok=True)
    tensors = dict(w)
    p = CONFIG["n_positions"]
    for layer in range(CONFIG["n_layer"]):  # what transformers before 4.31 saved as well
        tensors[f"h.{layer}.attn.bias"] = torch.ones(p, p).tril().view(1, 1, p, p)
        tensors[f"h.{layer}.attn.masked_bias"] = torch.tensor(-1e4)
    write_safetensors(out / "model.safetensors", tensors, {"format": "pt"})
    (out / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    expected = {"inputs.ids": ids.double().flatten(), "expected.logits": logits}
    write_safetensors(FIXTURES / "hf_gpt2_tiny_expected.safetensors", expected, {"rows": str(ROWS), "seq": str(SEQ)})


if __name__ == "__main__":
    main()
