#!/usr/bin/python3
"""Seed corpora for the fuzz targets: fuzz/corpus/<target>/<name>, small valid inputs and a few
slightly broken ones, so the fuzzer starts from files that reach deep into each reader.

  safetensors   F32 and BOOL tensors, metadata, an empty tensor; a gap, a BOOL byte 2, an F16
                tensor, a header length past the end
  yaml_config   sparsity sections in every Cerebras form (sideband, 2.0-2.1, 2.2+ mapping, list,
                {groups}, a bare number, trainer.init) and whole training configs (GPT, MLP)
  idx           images (2x3x3) and labels (2), plain and gzip (also stored, level 0); truncated,
                trailing, int32 type
  gpt2_bpe      encoder.json, a NUL byte, vocab.bpe (the pair in one input); a bad merge
  text_corpus   tagged Brown lines, plain UTF-8 text; a token without a tag, invalid UTF-8
  event_file    a step byte, then TensorBoard events (TFRecord frames of Event protos); cut short,
                a bad CRC, a record that is not an Event
  hf_config     Hugging Face GPT-2 config.json files as sparsetrain exports them and as the hub
                has them; the erf GELU, another n_inner, a missing field

Inputs that once failed are kept next to these as regression-<what> files; those longer than a few
KB go to fuzz/regression/<target>/ instead (a long seed sets libFuzzer's length limit and slows the
whole run; scripts/fuzz.sh runs them once before fuzzing). This script leaves both alone. Run it
from anywhere: python3 fuzz/make_corpus.py
"""
import gzip
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- safetensors ---------------------------------------------------------------------------------

def safetensors(entries, data, metadata=None, pad=True):
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    header.update(entries)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


w = struct.pack("<6f", 0.5, -1.0, 0.0, 2.25, 1e-3, 3.0)
mask = bytes([1, 0, 1, 1, 0, 1])
write("safetensors", "f32_and_bool", safetensors(
    {"fc.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
     "fc.weight_mask": {"dtype": "BOOL", "shape": [2, 3], "data_offsets": [24, 30]}},
    w + mask, {"step": "10", "format.fc.weight": "csr"}))
write("safetensors", "scalar_and_empty", safetensors(
    {"loss": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},
     "none": {"dtype": "F32", "shape": [0, 4], "data_offsets": [4, 4]}},
    struct.pack("<f", 1.5)))
write("safetensors", "gap", safetensors(
    {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
     "b": {"dtype": "BOOL", "shape": [2], "data_offsets": [6, 8]}},
    struct.pack("<f", 1.0) + bytes([0, 0, 1, 0])))
write("safetensors", "bool_two", safetensors(
    {"m": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}}, bytes([0, 2, 1])))
write("safetensors", "f16", safetensors(
    {"h": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}}, bytes([0, 60, 0, 188])))
write("safetensors", "header_past_end", struct.pack("<Q", 4096) + b'{"a":{}}')

# ---- YAML configs --------------------------------------------------------------------------------

yaml = {
    "v22_rigl": """\
sparsity:
  algorithm: rigl
  sparsity: 0.9
  format: csr
  distribution: erk
  update: {freq: 50, start: 0, stop: 450}
  drop_fraction: {type: cosine, init: 0.3, half_period: 450}
  param_filter: ["*.weight", "h.*.attn.c_attn.weight"]
  overrides: {lm_head.weight: 0.5}
""",
    "v22_groups_list": """\
sparsity:
  - algorithm: RigL
    param_filter: ["fc?.weight", "blocks.*.mlp.*"]
    sparsity: 0.95
    drop_fraction: {type: power, init: 0.5, beta: 2}
    update: {freq: 20, start: 10, stop: 900}
  - algorithm: gmp
    param_filter: "head.*"
    sparsity: {type: polynomial, init: 0.0, final: 0.8, begin: 0, end: 5000, power: 3}
    update: {freq: 500}
  - algorithm: set
    schedule: [0.5, 0.7]
    update: {steps: [0, 10, 20]}
    balance_out_groups: 4
    format: "2:4"
""",
    "v22_groups_params": """\
sparsity:
  groups:
    - params:
        algorithm: gmp
        sparsity: {type: exp, init: 0.2, gamma: 0.01, final: 0.6}
        update: {freq: 3}
        param_filter: "*"
        init_method: checkerboard
    - algorithm: Static
      sparsity: 0.5
      seed: 3
      format: bcsr16
""",
    "v22_number": "sparsity: 0.75\n",
    "v22_schedules": """\
sparsity:
  algorithm: gmp
  sparsity: {type: graphcore_cosine, init: 0.1, total_steps: 100, zero_steps: 10, phase_delay: 0.0, period: 0.5}
  update: {freq: 10, start: 5}
""",
    "v22_type_alias": """\
sparsity:
  type: gmp
  schedule: {type: linear, init: 0.0, slope: 0.001}
  update: {freq: 1}
  format: auto
""",
    "v21_rigl": """\
sparsity:
  param_name_patterns: ['.*proj_[qkv]_dense_layer\\.weight', '.*linear_layer\\.weight']
  type: rigl
  schedule: {freq: 64, start: 8, stop: 2048}
  sparsity: 0.8
  drop_fraction: {type: cosine, init: 0.25, half_period: 2048}
""",
    "sideband_dict": """\
sparsity:
  type: sideband
  init_method: random
  seed: 7
  param_name_patterns:
    "fc_layers.*weight": {sparsity: 0.5}
    "final_layer.*weight": {sparsity: 0.8, init_method: topk, out_groups: 2}
""",
    "sideband_list": """\
sparsity:
  type: sideband
  sparsity: 0.3
  dump_masks: false
  in_groups: 2
  param_name_patterns: ["weight$", "^h\\\\."]
""",
    "trainer_init": """\
trainer:
  init:
    sparsity:
      algorithm: gmp
      sparsity: {type: cycling, values: [0.1, 0.2]}
      update: {steps: [1, 5]}
""",
    "null_section": "sparsity: null\nother: [1, 2, {a: b}]\n",
    "bad_key": """\
sparsity:
  algorithm: rigl
  sparsty: 0.9
  update: {freq: ten}
  - 
""",
    "bad_merge_and_anchor": "base: &b {sparsity: 0.5}\nsparsity:\n  <<: *b\n  algorithm: static\n",
    "train_gpt": """\
model:
  name: gpt
  n_positions: 16
  n_layer: 1
  n_head: 2
  n_embd: 8
  vocab_size: 300
  layer_norm_epsilon: 1.0e-5
  initializer_range: 0.02
  sparse_init: scaled
train_input: {data: brown, tokenizer: byte, batch_size: 2, validation_fraction: 0.05, split_seed: 3}
eval_input: {data: brown, tokenizer: byte, batch_size: 2, eval_batches: 2, max_sequence_length: 8}
optimizer:
  optimizer_type: adamw
  learning_rate: {scheduler: cosine, initial_learning_rate: 3.0e-3, warmup_steps: 5, total_iters: 50, end_learning_rate: 3.0e-4}
  weight_decay: 0.01
  betas: [0.9, 0.999]
  eps: 1.0e-8
  max_gradient_norm: 1.0
sparsity:
  algorithm: rigl
  sparsity: 0.9
  update: {freq: 5, stop: 40}
runconfig: {max_steps: 60, log_steps: 5, checkpoint_steps: 20, eval_frequency: 20, seed: 1, num_threads: 1, nonfinite_policy: stop, loss_spike_factor: 4}
""",
    "train_mlp": """\
model:
  name: mlp
  input_size: 784
  hidden_sizes: [32, 16]
  num_classes: 10
  activation: relu
  output_activation: sigmoid
  loss: mse
  dropout: 0.1
train_input: {data: fashion_mnist, batch_size: 8, num_examples: 100}
optimizer:
  optimizer_type: sgd
  learning_rate: {scheduler: step, initial_learning_rate: 0.1, step_size: 10, gamma: 0.5}
  momentum: 0.9
  nesterov: true
  dampening: 0
runconfig: {num_epochs: 2, keep_checkpoints: 1}
sparsity: {algorithm: set, sparsity: 0.8, update: {freq: 10}, drop_fraction: 0.3}
""",
    "train_text_file": """\
model: {name: gpt, n_positions: 8, n_layer: 1, n_head: 1, n_embd: 4}
train_input: {data: text_file, path: corpus.txt, tokenizer: gpt2}
optimizer: {learning_rate: 0.001}
runconfig: {max_steps: 1}
""",
}
for name, text in yaml.items():
    write("yaml_config", name, text)

# ---- IDX -----------------------------------------------------------------------------------------

def idx(dims, data, type_byte=0x08):
    return bytes([0, 0, type_byte, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)


images = idx([2, 3, 3], range(0, 180, 10))
labels = idx([2], [3, 7])
write("idx", "images", images)
write("idx", "labels", labels)
write("idx", "images.gz", gzip.compress(images, mtime=0))
write("idx", "labels.gz", gzip.compress(labels, mtime=0))
write("idx", "truncated", images[:-3])
write("idx", "trailing", labels + b"\x00")
write("idx", "int32", idx([1], [0, 0, 0, 5], type_byte=0x0C))
write("idx", "truncated.gz", gzip.compress(images, mtime=0)[:-6])
# Level 0 stores the IDX bytes as they are inside the gzip stream, so mutations reach the header.
write("idx", "images.stored.gz", gzip.compress(images, compresslevel=0, mtime=0))

# ---- GPT-2 BPE -----------------------------------------------------------------------------------

def byte_symbols():
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    symbols, n = {}, 0
    for b in range(256):
        if b in printable:
            symbols[b] = chr(b)
        else:
            symbols[b] = chr(256 + n)
            n += 1
    return symbols


def encoder(extra):
    vocab = {s: b for b, s in byte_symbols().items()}
    for t in extra:
        vocab[t] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return json.dumps(vocab, ensure_ascii=False, separators=(",", ":"))


def pair(encoder_json, vocab_bpe):
    return encoder_json.encode("utf-8") + b"\0" + vocab_bpe.encode("utf-8")


write("gpt2_bpe", "small", pair(encoder(["he", "ll", "hell", "Ġw", "Ġwo"]),
                                "#version: 0.2\nh e\nl l\nhe ll\nĠ w\nĠw o\n"))
write("gpt2_bpe", "crlf_no_final_newline", pair(encoder(["aa", "aaaa"]), "#version\r\na a\r\naa aa"))
write("gpt2_bpe", "merge_not_in_vocab", pair(encoder(["ab"]), "#version: 0.2\na b\nb c\n"))
write("gpt2_bpe", "duplicate_id", pair('{"a": 0, "b": 0, "<|endoftext|>": 1}', "#version: 0.2\n"))

# ---- text corpora --------------------------------------------------------------------------------

write("text_corpus", "brown", """\


\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd Friday/nr an/at investigation/nn
of/in Atlanta's/np$ recent/jj primary/nn election/nn produced/vbd ``/`` no/at evidence/nn ''/'' that/cs
any/dti irregularities/nns took/vbd place/nn ./.


\tThe/at jury/nn further/rbr said/vbd in/in term-end/nn presentments/nns that/cs the/at City/nn-tl
(/( Executive/jj-tl Committee/nn-tl )/) ,/, which/wdt had/hvd over-all/jj charge/nn ;/. '/' yes/rb '/' !/.
""")
write("text_corpus", "plain_utf8", "Grüße aus Köln.\nΚαλημέρα κόσμε\n日本語のテキスト\n\nA second paragraph.\n")
write("text_corpus", "token_without_tag", "The/at jury said/vbd ./.\n")
write("text_corpus", "invalid_utf8", b"caf\xc3 /nn \xed\xa0\x80/x \xf4\x90\x80\x80/y\n")

# ---- TensorBoard event files ---------------------------------------------------------------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, wire, payload):
    return varint(number << 3 | wire) + payload


def length_delimited(number, data):
    return field(number, 2, varint(len(data)) + data)


def event(step, scalars=(), version=None):
    e = field(1, 1, struct.pack("<d", 1.7e9 + step)) + field(2, 0, varint(step))
    if version:
        e += length_delimited(3, version.encode())
    values = b"".join(length_delimited(1, length_delimited(1, tag.encode()) + field(2, 5, struct.pack("<f", v)))
                      for tag, v in scalars)
    if scalars:
        e += length_delimited(5, values)
    return e


events = frame(event(0, version="brain.Event:2")) + b"".join(
    frame(event(step, [("loss", 3.0 / step), ("lr.0", 0.001)])) for step in (1, 2, 3))
write("event_file", "three_steps", bytes([2]) + events)
write("event_file", "cut_short", bytes([9]) + events[:-7])
write("event_file", "bad_crc", bytes([9]) + events[:-1] + bytes([events[-1] ^ 1]))
write("event_file", "not_an_event", bytes([9]) + frame(event(0, version="brain.Event:2")) + frame(b"\xff\xff\xff"))

# ---- Hugging Face config.json --------------------------------------------------------------------

exported = {
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 257, "n_positions": 128,
    "n_ctx": 128, "n_embd": 256, "n_layer": 4, "n_head": 4, "n_inner": None, "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-05, "initializer_range": 0.02, "resid_pdrop": 0.0, "embd_pdrop": 0.0,
    "attn_pdrop": 0.0, "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
    "reorder_and_upcast_attn": False, "tie_word_embeddings": True, "use_cache": True, "torch_dtype": "float32",
}
write("hf_config", "exported", json.dumps(exported, indent=2))
hub = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": 50256,
       "eos_token_id": 50256, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
       "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257}
write("hf_config", "hub_gpt2", json.dumps(hub))
write("hf_config", "erf_gelu", json.dumps(dict(exported, activation_function="gelu")))
write("hf_config", "other_inner", json.dumps(dict(exported, n_inner=1000)))
write("hf_config", "missing_heads", json.dumps({k: v for k, v in exported.items() if k != "n_head"}))
