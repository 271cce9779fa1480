// Hugging Face BERT directories as `model.init_from: hf:DIR` reads them: the tensor list is the
// model's; an export reads back bit for bit; a file in transformers' and TensorFlow's spellings
// (LayerNorm gamma/beta, the tied decoder stored, the int64 position table) loads the same
// weights; the golden fixture's independent PyTorch BERT reads as a file; config.json round-trips;
// and everything sparsetrain's BERT does not compute is refused naming the file and the field.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "error_of.h"
#include "sparsetrain/hf/bert_config.h"
#include "sparsetrain/hf/bert_tensors.h"
#include "sparsetrain/hf/pretrained_dir.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/models/bert.h"
#include "sparsetrain/text/byte_tokenizer.h"
#include "temp_dir.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::error_of;

BertConfig tiny_config(bool next_sentence) {
  BertConfig c;
  c.vocab_size = 261;
  c.hidden = 8;
  c.layers = 2;
  c.heads = 2;
  c.intermediate = 12;
  c.max_positions = 10;
  c.type_vocab_size = 3;
  c.next_sentence = next_sentence;
  return c;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
  return std::ranges::equal(a, b, {}, bits, bits);
}

// Every tensor of `want` in `got` with its shape and bits, and nothing else.
void expect_same_state(const StateDict& got, const StateDict& want) {
  EXPECT_EQ(got.tensors.size(), want.tensors.size());
  for (const StateTensor& t : want.tensors) {
    const StateTensor* g = got.find(t.name);
    ASSERT_NE(g, nullptr) << t.name;
    EXPECT_EQ(g->shape, t.shape) << t.name;
    EXPECT_TRUE(same_bits(g->values, t.values)) << t.name;
  }
}

// A safetensors file with an int64 tensor beside the F32 ones, as transformers before 4.31 wrote
// bert.embeddings.position_ids; sparsetrain's writer writes F32 and BOOL only.
void write_with_position_ids(const std::string& path, const StateDict& state, int64_t positions) {
  json header = json::object();
  std::string data;
  for (int64_t i = 0; i < positions; ++i) data.append(reinterpret_cast<const char*>(&i), sizeof i);
  header["bert.embeddings.position_ids"] = {
      {"dtype", "I64"}, {"shape", {1, positions}}, {"data_offsets", {0, data.size()}}};
  for (const StateTensor& t : state.tensors) {
    const std::size_t begin = data.size();
    data.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(float));
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  const std::string text = header.dump();
  const uint64_t n = text.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), sizeof n);
  out << text << data;
}

// A model directory for `state` (no masks) and `config`, edited before it is written.
void write_dir(const fs::path& d, StateDict state, const BertConfig& config,
               const std::function<void(StateDict&, json&)>& edit = {}) {
  fs::create_directories(d);
  json cfg = hf_bert_config_json(config, 0);
  if (edit) edit(state, cfg);
  write_safetensors((d / "model.safetensors").string(), state, {{"format", "pt"}});
  std::ofstream(d / "config.json") << cfg.dump(2);
}

StateDict random_state(const BertConfig& c) {
  Bert bert(c);
  bert.init_weights(11);
  return bert.state_dict();
}

TEST(HfBert, TensorListIsTheModels) {
  for (const bool nsp : {true, false}) {
    const BertConfig c = tiny_config(nsp);
    const StateDict state = Bert(c).state_dict();
    const std::vector<HfBertTensor> specs = hf_bert_tensors(c);
    ASSERT_EQ(specs.size(), state.tensors.size()) << nsp;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(specs[i].name, state.tensors[i].name) << i;
      EXPECT_EQ(specs[i].shape, state.tensors[i].shape) << specs[i].name;
    }
  }
}

TEST(HfBert, ExportReadsBackBitIdentical) {
  const testing::TempDir tmp;
  for (const bool nsp : {true, false}) {
    Bert bert(tiny_config(nsp));
    bert.init_weights(5);
    Parameter& up = bert.parameter("bert.encoder.layer.1.intermediate.dense.weight");
    Mask mask(up.rows(), up.cols());
    for (int64_t i = 0; i < up.rows() * up.cols(); ++i) mask.data()[i] = i % 3 != 0;
    up.sparsify(mask, std::nullopt);
    const StateDict state = bert.state_dict();
    const std::string out = (tmp.path() / (nsp ? "nsp" : "mlm")).string();
    write_hf_bert_dir(out, state, bert.config(), ByteTokenizer(true));

    const BertConfig read = read_hf_bert_config(out);
    EXPECT_EQ(read.hidden, 8);
    EXPECT_EQ(read.type_vocab_size, 3);
    StateDict values;
    for (const StateTensor& t : state.tensors)
      if (!t.is_mask) values.add(t);
    expect_same_state(read_hf_bert_weights(out, nsp), values);
    // Masked LM only from a pre-training export: the next-sentence head is left out.
    if (nsp) {
      EXPECT_EQ(read_hf_bert_weights(out, false).tensors.size(), values.tensors.size() - 4);
    }
  }
}

TEST(HfBert, TransformersAndTensorFlowSpellingsLoadTheSameWeights) {
  const testing::TempDir tmp;
  const BertConfig c = tiny_config(true);
  const StateDict state = random_state(c);
  StateDict spelled;
  for (StateTensor t : state.tensors) {
    if (t.name.ends_with("LayerNorm.weight")) t.name.replace(t.name.size() - 6, 6, "gamma");
    if (t.name.ends_with("LayerNorm.bias")) t.name.replace(t.name.size() - 4, 4, "beta");
    spelled.add(std::move(t));
  }
  StateTensor decoder = *state.find("bert.embeddings.word_embeddings.weight");
  decoder.name = "cls.predictions.decoder.weight";
  spelled.add(decoder);
  StateTensor decoder_bias = *state.find("cls.predictions.bias");
  decoder_bias.name = "cls.predictions.decoder.bias";
  spelled.add(decoder_bias);
  ASSERT_NE(spelled.find("bert.encoder.layer.1.output.LayerNorm.gamma"), nullptr);

  const fs::path d = tmp.path() / "tf";
  write_dir(d, {}, c);
  write_with_position_ids((d / "model.safetensors").string(), spelled, c.max_positions);
  expect_same_state(read_hf_bert_weights(d.string(), true), state);
}

// The golden fixture's weights come from an independent PyTorch BERT (tests/golden/
// make_fixtures.py) under BertForPreTraining's names: read as a Hugging Face file, every tensor
// lands where the model expects it.
TEST(HfBert, GoldenFixtureReadsAsAHuggingFaceFile) {
  const SafetensorsFile fixture = read_safetensors(std::string(SPARSETRAIN_GOLDEN_DIR) + "/bert_dense.safetensors");
  StateDict weights;
  for (const StateTensor& t : fixture.tensors.tensors)
    if (!t.name.starts_with("inputs.") && !t.name.starts_with("expected.") && !t.name.starts_with("grad."))
      weights.add(t);
  json cfg = {{"model_type", "bert"}};
  for (const char* key : {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                          "max_position_embeddings", "type_vocab_size"})
    cfg[key] = std::stoll(fixture.metadata.at(key));
  cfg["layer_norm_eps"] = std::stod(fixture.metadata.at("layer_norm_eps"));
  const BertConfig c = hf_bert_config_from_json(cfg, "fixture config");
  const StateDict read = from_hf_bert(weights, c, "bert_dense.safetensors", "fixture config");
  Bert bert(c);
  bert.load_state_dict(read, /*strict=*/true);
  expect_same_state(bert.state_dict(), weights);
}

TEST(HfBert, ConfigRoundTrips) {
  BertConfig c = tiny_config(true);
  c.hidden_dropout = 0.25f;
  c.attention_dropout = 0.0f;
  c.layer_norm_eps = 1e-7f;
  c.init_std = 0.05;
  for (const Activation act : {Activation::GeluErf, Activation::Gelu, Activation::ReLU}) {
    c.act = act;
    const BertConfig back = hf_bert_config_from_json(hf_bert_config_json(c, 3), "written");
    EXPECT_EQ(back.vocab_size, c.vocab_size);
    EXPECT_EQ(back.hidden, c.hidden);
    EXPECT_EQ(back.layers, c.layers);
    EXPECT_EQ(back.heads, c.heads);
    EXPECT_EQ(back.intermediate, c.intermediate);
    EXPECT_EQ(back.max_positions, c.max_positions);
    EXPECT_EQ(back.type_vocab_size, c.type_vocab_size);
    EXPECT_EQ(back.act, c.act);
    EXPECT_EQ(back.hidden_dropout, c.hidden_dropout);
    EXPECT_EQ(back.attention_dropout, c.attention_dropout);
    EXPECT_EQ(back.layer_norm_eps, c.layer_norm_eps);
    EXPECT_EQ(back.init_std, c.init_std);
  }
  // BertConfig's defaults for what bert-base-uncased's config.json leaves out or spells otherwise.
  const BertConfig minimal = hf_bert_config_from_json({{"model_type", "bert"},
                                                       {"vocab_size", 30522},
                                                       {"hidden_size", 768},
                                                       {"num_hidden_layers", 12},
                                                       {"num_attention_heads", 12},
                                                       {"intermediate_size", 3072},
                                                       {"hidden_act", "gelu_pytorch_tanh"}},
                                                      "c");
  EXPECT_EQ(minimal.max_positions, 512);
  EXPECT_EQ(minimal.type_vocab_size, 2);
  EXPECT_EQ(minimal.act, Activation::Gelu);
  EXPECT_EQ(minimal.hidden_dropout, 0.1f);
  EXPECT_EQ(minimal.layer_norm_eps, 1e-12f);
}

TEST(HfBert, RefusesWhatItCannotLoadNamingTheTensorOrField) {
  const testing::TempDir tmp;
  const BertConfig c = tiny_config(true);
  const StateDict state = random_state(c);
  const fs::path d = tmp.path() / "m";
  const std::string file = (d / "model.safetensors").string(), config = (d / "config.json").string();
  auto refused = [&](const std::function<void(StateDict&, json&)>& edit, bool nsp = true) {
    fs::remove_all(d);
    write_dir(d, state, c, edit);
    return error_of([&] { read_hf_bert_weights(d.string(), nsp); });
  };
  const std::string dims = "(vocab_size 261, hidden_size 8, num_hidden_layers 2, intermediate_size 12";
  const auto drop = [](const char* name) {
    return [name](StateDict& t, json&) { std::erase_if(t.tensors, [&](auto& x) { return x.name == name; }); };
  };

  EXPECT_EQ(refused(drop("bert.encoder.layer.1.intermediate.dense.bias")),
            file +
                ": no tensor 'bert.encoder.layer.1.intermediate.dense.bias', [intermediate_size] = [12], which the "
                "BERT of " +
                config + " has " + dims + ")");
  EXPECT_EQ(refused(drop("cls.seq_relationship.weight")),
            file + ": no tensor 'cls.seq_relationship.weight', [2, hidden_size] = [2, 8], which the BERT of " + config +
                " has " + dims +
                "); the file has no next-sentence head: set model.disable_nsp: true to train masked LM only");
  EXPECT_EQ(refused(drop("cls.seq_relationship.weight"), /*nsp=*/false), "no error");
  EXPECT_EQ(refused([](StateDict& t, json&) {
              t.add({"bert.encoder.layer.2.output.dense.bias", {8}, false, std::vector<float>(8), {}});
            }),
            file + ": unexpected tensor 'bert.encoder.layer.2.output.dense.bias' [8]: not part of the BERT that " +
                config + " describes " + dims + ", next-sentence head on)");
  EXPECT_EQ(refused([](StateDict& t, json&) {
              for (StateTensor& x : t.tensors)
                if (x.name.starts_with("bert.")) x.name = x.name.substr(5);
            }),
            file + ": unexpected tensor 'embeddings.word_embeddings.weight' [261, 8]: not part of the BERT that " +
                config + " describes " + dims +
                ", next-sentence head on); sparsetrain starts from BertForPreTraining or BertForMaskedLM weights "
                "(names 'bert.' and 'cls.'), not a BertModel without the pre-training heads");
  EXPECT_EQ(refused([](StateDict& t, json&) {
              StateTensor& w = *t.find("bert.encoder.layer.0.intermediate.dense.weight");
              w.shape = {8, 12};
            }),
            file + ": tensor 'bert.encoder.layer.0.intermediate.dense.weight' has shape [8, 12], but " + config +
                " makes it [intermediate_size, hidden_size] = [12, 8] " + dims + ")");
  EXPECT_EQ(refused([](StateDict& t, json&) { t.find("bert.pooler.dense.bias")->values[3] = std::nanf(""); }),
            file + ": tensor 'bert.pooler.dense.bias' holds the non-finite value nan (element 3)");
  EXPECT_EQ(refused([](StateDict& t, json&) {
              StateTensor gamma = *t.find("bert.embeddings.LayerNorm.weight");
              gamma.name = "bert.embeddings.LayerNorm.gamma";
              t.add(std::move(gamma));
            }),
            file +
                ": tensor 'bert.embeddings.LayerNorm.weight' is there twice, as 'bert.embeddings.LayerNorm.weight' "
                "and 'bert.embeddings.LayerNorm.gamma'");
  EXPECT_EQ(refused([](StateDict& t, json&) {
              StateTensor decoder = *t.find("bert.embeddings.word_embeddings.weight");
              decoder.name = "cls.predictions.decoder.weight";
              decoder.values[7] += 1.0f;
              t.add(std::move(decoder));
            }),
            file +
                ": tensor 'cls.predictions.decoder.weight' differs from 'bert.embeddings.word_embeddings.weight': the "
                "decoder is not tied to the word embedding, which sparsetrain's BERT (and BERT) requires");

  // config.json
  const auto field = [&](const char* key, json value) { return refused([&](StateDict&, json& j) { j[key] = value; }); };
  EXPECT_EQ(field("model_type", "gpt2"),
            config + ": 'model_type' is 'gpt2'; sparsetrain's bert model imports Hugging Face BERT models ('bert')");
  EXPECT_EQ(field("hidden_act", "silu"),
            config +
                ": 'hidden_act' is 'silu'; sparsetrain's BERT computes 'gelu' (the erf form; also 'gelu_python'), "
                "'gelu_new' (the tanh form; also 'gelu_pytorch_tanh', 'gelu_fast') or 'relu'");
  EXPECT_EQ(field("position_embedding_type", "relative_key"),
            config +
                ": 'position_embedding_type' is 'relative_key'; sparsetrain's BERT has learned absolute positions "
                "('absolute')");
  EXPECT_EQ(field("is_decoder", true),
            config + ": 'is_decoder' is true: the model is a causal decoder; sparsetrain's BERT cannot load it");
  EXPECT_EQ(field("add_cross_attention", true),
            config +
                ": 'add_cross_attention' is true: the layers have cross-attention; sparsetrain's BERT cannot "
                "load it");
  EXPECT_EQ(field("tie_word_embeddings", false),
            config +
                ": 'tie_word_embeddings' is false: the decoder is not the word embedding; sparsetrain's BERT "
                "cannot load it");
  EXPECT_EQ(field("num_attention_heads", 3),
            config + ": 'hidden_size' (8) is not a multiple of 'num_attention_heads' (3)");
  EXPECT_EQ(field("hidden_size", "8"), config + ": 'hidden_size' is '8'; expected an integer >= 1");
  // Below 1, but 1 in float32, which dropout is computed in.
  EXPECT_EQ(field("hidden_dropout_prob", 0.99999999),
            config + ": 'hidden_dropout_prob' is 0.99999999; expected a number in [0, 1)");
  EXPECT_EQ(field("attention_probs_dropout_prob", -0.1),
            config + ": 'attention_probs_dropout_prob' is -0.1; expected a number in [0, 1)");
  EXPECT_EQ(field("layer_norm_eps", 1e-60),
            config + ": 'layer_norm_eps' is 1e-60; expected a number float32 holds above 0");
  EXPECT_EQ(refused([](StateDict&, json& j) { j.erase("intermediate_size"); }),
            config + ": missing 'intermediate_size'");
}

TEST(HfBert, RefusesAPickleWithTheCommandThatConvertsIt) {
  const testing::TempDir tmp;
  const std::string pickle = (tmp.path() / "pickle").string();
  fs::create_directories(pickle);
  std::ofstream(pickle + "/pytorch_model.bin") << "PK";
  EXPECT_EQ(error_of([&] { read_hf_bert_config(pickle); }),
            "hf:" + pickle +
                ": has its weights only as pytorch_model.bin, a Python pickle, which sparsetrain does not read "
                "(loading a pickle runs code); convert it to model.safetensors with transformers: python3 -c \"from "
                "transformers import AutoModelForPreTraining as M; M.from_pretrained('" +
                pickle + "').save_pretrained('" + pickle + "', safe_serialization=True)\"");
}

}  // namespace
}  // namespace sparsetrain
