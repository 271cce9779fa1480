#!/usr/bin/python3
"""Golden fixtures for tests/golden/test_golden.cpp, computed by an independent reference.

Each fixture is a tiny model written here in plain PyTorch, from the architecture's definition
and not from sparsetrain's code, evaluated in float64 on float32-representable weights and
inputs:

  gpt_dense       GPT-2 (Hugging Face layout), 2 layers, 3 heads, width 12, vocabulary 37,
                  context 9, a batch of 3 sequences of 7 tokens, softmax cross-entropy
  gpt_sparse      the same with masked linear weights: CSR, 4x4 blocks, 1:4 and masked-dense
  bert_dense      BERT (Hugging Face BertForPreTraining layout, post-LayerNorm, erf GELU), 2
                  layers, 2 heads, width 8, intermediate 12, vocabulary 23, 9 positions; 3 rows
                  of 7 tokens with padding, masked tokens (ignore_index -100 elsewhere), two
                  token types, next-sentence labels; loss = MLM mean + NSP mean
  bert_sparse     the same with masked encoder weights: CSR, 4x4 blocks, 1:4 and masked-dense
  mlp_relu_ce     MLP 11-7-5-4, ReLU hidden, softmax cross-entropy
  mlp_set_mse     MLP 11-7-5-4, tanh hidden, sigmoid output, MSE against one-hot (the SET
                  paper's setup), CSR-sparse hidden layers

Every weight, bias and LayerNorm gain is random and nonzero, so every gradient path carries
signal. A fixture is a safetensors file holding

  <name>, <name>_mask   every parameter under sparsetrain's name (zeros at pruned positions),
                        and the BOOL mask of each sparse one
  inputs.ids | inputs.features, inputs.targets
                        the batch (token ids and labels as F32 integers); a BERT's also
                        inputs.token_types, inputs.lengths and inputs.nsp_labels
  expected.outputs      logits (or the output activation's values) [rows * seq x classes]; a
                        BERT's MLM logits on the masked positions [masked x vocabulary]
  expected.loss         the batch's mean loss, one element
  grad.<name>           d loss / d <name>; zero at pruned positions (a pruned weight does not
                        reach the loss)

and metadata: the model's config under the Model Zoo YAML keys (as strings, hidden_sizes
comma-separated), and `format.<name>` (csr, bcsr4, 1:4, masked_dense, ...) for each sparse
parameter.

Run with Debian's torch (apt install python3-torch), which belongs to the system Python the
first line names, from anywhere:

    /usr/bin/python3 tests/golden/make_fixtures.py

It rewrites tests/golden/fixtures/*.safetensors deterministically (fixed seeds, CPU); the C++
test reads the committed files and does not need torch.
"""

import json
import math
import struct
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Pre-activations closer to a ReLU's kink than this would let float32 and float64 disagree on
# its side, and so on the gradient; the generator refuses such a draw rather than hope.
KINK_MARGIN = 1e-3


# --- safetensors, written by hand (no safetensors package in Debian) -------------------------


def write_safetensors(path, tensors, metadata):
    """8-byte little-endian header length, JSON header padded with spaces so that the data
    starts 8-byte aligned, then the tensors back to back in the given order."""
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().flatten()
        if t.dtype == torch.bool:
            dtype, blob = "BOOL", bytes(int(v) for v in t.tolist())
        else:
            dtype, blob = "F32", struct.pack(f"<{t.numel()}f", *t.tolist())
        shape = list(tensors[name].shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# --- random values that float32 holds exactly ---------------------------------------------


class Draw:
    """Deterministic float64 tensors rounded to float32, so that the weights the reference
    computes with are exactly the ones the fixture stores."""

    def __init__(self, seed):
        self.gen = torch.Generator().manual_seed(seed)

    def normal(self, shape, std=1.0, mean=0.0):
        t = mean + std * torch.randn(shape, generator=self.gen, dtype=torch.float64)
        return t.float().double()

    def integers(self, shape, high):
        return torch.randint(0, high, shape, generator=self.gen)

    def keep(self, shape, sparsity):
        """Exactly round((1 - sparsity) * n) kept elements, at random."""
        n = math.prod(shape)
        kept = torch.randperm(n, generator=self.gen)[: round((1 - sparsity) * n)]
        mask = torch.zeros(n, dtype=torch.bool)
        mask[kept] = True
        return mask.view(shape)

    def keep_blocks(self, shape, block, sparsity):
        """Whole block x block tiles kept or pruned."""
        tiles = self.keep((shape[0] // block, shape[1] // block), sparsity)
        return tiles.repeat_interleave(block, 0).repeat_interleave(block, 1)

    def keep_n_of_m(self, shape, n, m):
        """Exactly n kept in every m consecutive inputs (columns) of each row."""
        groups = torch.rand((shape[0], shape[1] // m, m), generator=self.gen).argsort(dim=-1) < n
        return groups.view(shape)


def parameter_makers(draw, params, width):
    """norm(name) and linear(name, inputs, outputs), each drawing its tensors into `params` in
    order: LayerNorm gains around 1 and biases [width]; linear weights [out x in] and biases."""

    def norm(name):
        params[f"{name}.weight"] = draw.normal((width,), 0.2, mean=1.0)
        params[f"{name}.bias"] = draw.normal((width,), 0.2)

    def linear(name, inputs, outputs):
        params[f"{name}.weight"] = draw.normal((outputs, inputs), 0.3)
        params[f"{name}.bias"] = draw.normal((outputs,), 0.2)

    return norm, linear


# --- GPT-2 -------------------------------------------------------------------------------

GPT = {
    "vocab_size": 37,
    "n_positions": 9,
    "n_layer": 2,
    "n_head": 3,
    "n_embd": 12,
    "layer_norm_epsilon": 1e-5,
}
GPT_ROWS, GPT_SEQ = 3, 7  # seq < n_positions: the position table is only partly used


def gpt_parameters(draw, cfg):
    """Every parameter in sparsetrain's (= Hugging Face's) order; linear weights [out x in]."""
    v, p, c = cfg["vocab_size"], cfg["n_positions"], cfg["n_embd"]
    params = {"transformer.wte.weight": draw.normal((v, c), 0.3), "transformer.wpe.weight": draw.normal((p, c), 0.3)}
    norm, linear = parameter_makers(draw, params, c)

    for layer in range(cfg["n_layer"]):
        h = f"transformer.h.{layer}"
        norm(f"{h}.ln_1")
        linear(f"{h}.attn.c_attn", c, 3 * c)
        linear(f"{h}.attn.c_proj", c, c)
        norm(f"{h}.ln_2")
        linear(f"{h}.mlp.c_fc", c, 4 * c)
        linear(f"{h}.mlp.c_proj", 4 * c, c)
    norm("transformer.ln_f")
    return params


def causal_self_attention(qkv, heads):
    """Hugging Face GPT2Attention: q, k, v are consecutive C-wide column ranges of c_attn's
    output, each split into heads of C / heads columns; softmax(q k^T / sqrt(d)) over keys at or
    before the query."""
    rows, seq, c3 = qkv.shape
    c = c3 // 3
    d = c // heads
    q, k, v = (t.view(rows, seq, heads, d).transpose(1, 2) for t in qkv.split(c, dim=2))
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    att = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    return (att @ v).transpose(1, 2).reshape(rows, seq, c)


def gpt_forward(w, cfg, ids):
    """Logits [rows x seq x vocab] of GPT2LMHeadModel with the head tied to wte, no dropout."""
    c, eps = cfg["n_embd"], cfg["layer_norm_epsilon"]

    def ln(name, x):
        return F.layer_norm(x, (c,), w[f"{name}.weight"], w[f"{name}.bias"], eps)

    def linear(name, x):
        return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][: ids.shape[1]]
    for layer in range(cfg["n_layer"]):
        h = f"transformer.h.{layer}"
        qkv = linear(f"{h}.attn.c_attn", ln(f"{h}.ln_1", x))
        x = x + linear(f"{h}.attn.c_proj", causal_self_attention(qkv, cfg["n_head"]))
        fc = linear(f"{h}.mlp.c_fc", ln(f"{h}.ln_2", x))
        x = x + linear(f"{h}.mlp.c_proj", F.gelu(fc, approximate="tanh"))
    return ln("transformer.ln_f", x) @ w["transformer.wte.weight"].t()


# Sparse case: one weight per compressed format the GPT's shapes allow, and one masked-dense.
def gpt_sparse_masks(draw, params):
    w = lambda name: params[f"transformer.{name}.weight"].shape
    return {
        "transformer.h.0.attn.c_attn.weight": ("csr", draw.keep(w("h.0.attn.c_attn"), 0.65)),
        "transformer.h.0.mlp.c_fc.weight": ("bcsr4", draw.keep_blocks(w("h.0.mlp.c_fc"), 4, 0.6)),
        "transformer.h.1.attn.c_attn.weight": ("1:4", draw.keep_n_of_m(w("h.1.attn.c_attn"), 1, 4)),
        "transformer.h.1.mlp.c_fc.weight": ("csr", draw.keep(w("h.1.mlp.c_fc"), 0.7)),
        "transformer.h.1.attn.c_proj.weight": ("masked_dense", draw.keep(w("h.1.attn.c_proj"), 0.5)),
    }


def gpt_fixture(seed, sparse):
    draw = Draw(seed)
    params = gpt_parameters(draw, GPT)
    masks = gpt_sparse_masks(draw, params) if sparse else {}
    ids = draw.integers((GPT_ROWS, GPT_SEQ), GPT["vocab_size"])
    targets = draw.integers((GPT_ROWS, GPT_SEQ), GPT["vocab_size"])

    def model(w):
        logits = gpt_forward(w, GPT, ids).reshape(GPT_ROWS * GPT_SEQ, -1)
        return logits, F.cross_entropy(logits, targets.flatten())

    config = {"name": "gpt", **{k: str(v) for k, v in GPT.items()}}
    return evaluate(params, masks, model, config, {"inputs.ids": ids, "inputs.targets": targets})


# --- BERT --------------------------------------------------------------------------------

BERT = {
    "vocab_size": 23,
    "hidden_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 12,
    "max_position_embeddings": 9,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
}
BERT_ROWS, BERT_SEQ = 3, 7
BERT_LENGTHS = [7, 5, 3]  # real tokens per row; the rest is padding (id 0)


def bert_parameters(draw, cfg):
    """Every parameter in sparsetrain's (= torch's state_dict) order; linear weights [out x in]."""
    v, c, i = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]
    params = {}
    norm, linear = parameter_makers(draw, params, c)

    e = "bert.embeddings"
    params[f"{e}.word_embeddings.weight"] = draw.normal((v, c), 0.5)
    params[f"{e}.position_embeddings.weight"] = draw.normal((cfg["max_position_embeddings"], c), 0.5)
    params[f"{e}.token_type_embeddings.weight"] = draw.normal((cfg["type_vocab_size"], c), 0.5)
    norm(f"{e}.LayerNorm")
    for layer in range(cfg["num_hidden_layers"]):
        y = f"bert.encoder.layer.{layer}"
        for part in ("query", "key", "value"):
            linear(f"{y}.attention.self.{part}", c, c)
        linear(f"{y}.attention.output.dense", c, c)
        norm(f"{y}.attention.output.LayerNorm")
        linear(f"{y}.intermediate.dense", c, i)
        linear(f"{y}.output.dense", i, c)
        norm(f"{y}.output.LayerNorm")
    linear("bert.pooler.dense", c, c)
    params["cls.predictions.bias"] = draw.normal((v,), 0.2)
    linear("cls.predictions.transform.dense", c, c)
    norm("cls.predictions.transform.LayerNorm")
    linear("cls.seq_relationship", c, 2)
    return params


def bert_forward(w, cfg, ids, types, lengths, masked):
    """MLM logits on the `masked` positions [masked x vocab] and NSP logits [rows x 2] of
    BertForPreTraining without dropout: post-LayerNorm layers, bidirectional attention whose
    padded keys get -inf scores (HF's extended attention mask adds a large negative), erf GELU,
    the decoder tied to the word embeddings."""
    c, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    rows, seq = ids.shape
    d = c // heads

    def ln(name, x):
        return F.layer_norm(x, (c,), w[f"{name}.weight"], w[f"{name}.bias"], eps)

    def linear(name, x):
        return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

    e = "bert.embeddings"
    positions = torch.arange(seq)
    x = w[f"{e}.word_embeddings.weight"][ids] + w[f"{e}.position_embeddings.weight"][positions]
    x = ln(f"{e}.LayerNorm", x + w[f"{e}.token_type_embeddings.weight"][types])
    padded = positions[None, :] >= torch.tensor(lengths)[:, None]  # [rows x seq] keys
    for layer in range(cfg["num_hidden_layers"]):
        y = f"bert.encoder.layer.{layer}"
        q, k, v = (
            linear(f"{y}.attention.self.{p}", x).view(rows, seq, heads, d).transpose(1, 2) for p in ("query", "key", "value")
        )
        scores = (q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(padded[:, None, None, :], float("-inf"))
        att = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(rows, seq, c)
        x = ln(f"{y}.attention.output.LayerNorm", x + linear(f"{y}.attention.output.dense", att))
        inner = F.gelu(linear(f"{y}.intermediate.dense", x))
        x = ln(f"{y}.output.LayerNorm", x + linear(f"{y}.output.dense", inner))
    hidden = x.reshape(rows * seq, c)[masked]
    hidden = ln("cls.predictions.transform.LayerNorm", F.gelu(linear("cls.predictions.transform.dense", hidden)))
    mlm = hidden @ w[f"{e}.word_embeddings.weight"].t() + w["cls.predictions.bias"]
    nsp = linear("cls.seq_relationship", torch.tanh(linear("bert.pooler.dense", x[:, 0])))
    return mlm, nsp


def bert_sparse_masks(draw, params):
    w = lambda name: params[f"bert.encoder.layer.{name}.weight"].shape
    return {
        "bert.encoder.layer.0.attention.self.query.weight": ("csr", draw.keep(w("0.attention.self.query"), 0.6)),
        "bert.encoder.layer.0.intermediate.dense.weight": (
            "bcsr4",
            draw.keep_blocks(w("0.intermediate.dense"), 4, 0.5),
        ),
        "bert.encoder.layer.1.attention.self.value.weight": (
            "1:4",
            draw.keep_n_of_m(w("1.attention.self.value"), 1, 4),
        ),
        "bert.encoder.layer.1.output.dense.weight": ("csr", draw.keep(w("1.output.dense"), 0.7)),
        "bert.encoder.layer.1.attention.output.dense.weight": (
            "masked_dense",
            draw.keep(w("1.attention.output.dense"), 0.5),
        ),
    }


def bert_fixture(seed, sparse):
    draw = Draw(seed)
    params = bert_parameters(draw, BERT)
    masks = bert_sparse_masks(draw, params) if sparse else {}
    v = BERT["vocab_size"]
    ids = draw.integers((BERT_ROWS, BERT_SEQ), v)
    types = torch.zeros((BERT_ROWS, BERT_SEQ), dtype=torch.long)
    targets = torch.full((BERT_ROWS, BERT_SEQ), -100, dtype=torch.long)
    picks = draw.integers((BERT_ROWS, BERT_SEQ), 3)
    for r, length in enumerate(BERT_LENGTHS):
        ids[r, length:] = 0
        types[r, (length + 1) // 2 : length] = 1
        for t in range(1, length):
            if t == 1 or picks[r, t] == 0:  # at least one masked token per row, never [CLS]
                targets[r, t] = draw.integers((1,), v).item()
    nsp_labels = draw.integers((BERT_ROWS,), 2)
    masked = (targets.flatten() != -100).nonzero().flatten()

    def model(w):
        mlm, nsp = bert_forward(w, BERT, ids, types, BERT_LENGTHS, masked)
        loss = F.cross_entropy(mlm, targets.flatten()[masked]) + F.cross_entropy(nsp, nsp_labels)
        return mlm, loss

    config = {"name": "bert", **{k: str(v) for k, v in BERT.items()}}
    inputs = {
        "inputs.ids": ids,
        "inputs.token_types": types,
        "inputs.lengths": torch.tensor(BERT_LENGTHS),
        "inputs.targets": targets,
        "inputs.nsp_labels": nsp_labels,
    }
    return evaluate(params, masks, model, config, inputs)


# --- MLP ---------------------------------------------------------------------------------

MLP_SIZES = [11, 7, 5, 4]  # inputs, hidden..., classes
MLP_ROWS = 6

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "none": lambda x: x}


def mlp_forward(w, x, hidden, output, kinks):
    """layers.i: Linear [out x in]; `hidden` after every hidden layer, `output` after the last.
    Appends each hidden pre-activation to `kinks` for the ReLU margin check."""
    layers = len(MLP_SIZES) - 1
    for i in range(layers):
        x = F.linear(x, w[f"layers.{i}.weight"], w[f"layers.{i}.bias"])
        if i + 1 < layers:
            kinks.append(x)
        x = ACTIVATIONS[hidden if i + 1 < layers else output](x)
    return x


def mlp_fixture(seed, hidden, output, loss, sparse):
    draw = Draw(seed)
    params = {}
    for i, (inputs, outputs) in enumerate(zip(MLP_SIZES, MLP_SIZES[1:])):
        params[f"layers.{i}.weight"] = draw.normal((outputs, inputs), 0.6)
        params[f"layers.{i}.bias"] = draw.normal((outputs,), 0.3)
    # SET: the hidden layers sparse, the small output layer dense.
    masks = {}
    for i in (0, 1) if sparse else ():
        masks[f"layers.{i}.weight"] = ("csr", draw.keep(params[f"layers.{i}.weight"].shape, 0.5))
    features = draw.normal((MLP_ROWS, MLP_SIZES[0]))
    targets = draw.integers((MLP_ROWS,), MLP_SIZES[-1])
    kinks = []

    def model(w):
        out = mlp_forward(w, features, hidden, output, kinks)
        if loss == "cross_entropy":
            return out, F.cross_entropy(out, targets)
        return out, F.mse_loss(out, F.one_hot(targets, MLP_SIZES[-1]).double())

    config = {
        "name": "mlp",
        "input_size": str(MLP_SIZES[0]),
        "hidden_sizes": ",".join(map(str, MLP_SIZES[1:-1])),
        "num_classes": str(MLP_SIZES[-1]),
        "activation": hidden,
        "output_activation": output,
        "loss": loss,
    }
    fixture = evaluate(params, masks, model, config, {"inputs.features": features, "inputs.targets": targets})
    if hidden == "relu":
        closest = min(k.abs().min().item() for k in kinks)
        if closest < KINK_MARGIN:
            sys.exit(f"mlp seed {seed}: a pre-activation {closest:.2e} from ReLU's kink; choose another seed")
    return fixture


# --- shared --------------------------------------------------------------------------------


def evaluate(params, masks, model, config, inputs):
    """Runs `model` on the masked weights in float64 and collects the fixture's tensors.
    A masked weight enters the model as weight * mask, so its gradient is zero where pruned."""
    leaves = {name: p.clone().requires_grad_(True) for name, p in params.items()}
    effective = {name: p * masks[name][1] if name in masks else p for name, p in leaves.items()}
    outputs, loss = model(effective)
    loss.backward()

    tensors = {name: effective[name].detach() for name in params}
    tensors.update({f"{name}_mask": mask for name, (_, mask) in masks.items()})
    tensors.update({name: t.double() for name, t in inputs.items()})
    tensors["expected.outputs"] = outputs.detach()
    tensors["expected.loss"] = loss.detach().reshape(1)
    tensors.update({f"grad.{name}": leaf.grad for name, leaf in leaves.items()})
    metadata = {**config, **{f"format.{name}": fmt for name, (fmt, _) in masks.items()}}
    metadata["generator"] = f"tests/golden/make_fixtures.py, torch {torch.__version__}, float64"
    return tensors, metadata


def main():
    torch.use_deterministic_algorithms(True)
    fixtures = {
        "gpt_dense": gpt_fixture(1, sparse=False),
        "gpt_sparse": gpt_fixture(2, sparse=True),
        "bert_dense": bert_fixture(6, sparse=False),
        "bert_sparse": bert_fixture(7, sparse=True),
        "mlp_relu_ce": mlp_fixture(4, "relu", "none", "cross_entropy", sparse=False),
        "mlp_set_mse": mlp_fixture(5, "tanh", "sigmoid", "mse", sparse=True),
    }
    FIXTURES.mkdir(exist_ok=True)
    for name, (tensors, metadata) in fixtures.items():
        path = FIXTURES / f"{name}.safetensors"
        write_safetensors(path, tensors, metadata)
        print(f"{path}: {len(tensors)} tensors, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
