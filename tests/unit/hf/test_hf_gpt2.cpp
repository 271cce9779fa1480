// Hugging Face GPT-2 directories: the committed fixture (make_hf_gpt2_fixture.py, an independent
// float64 PyTorch GPT-2 in HF's layout) imports and gives its logits; a model written and read
// back is bit-identical; and every way a directory can be wrong is refused naming the file, the
// tensor and both shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "error_of.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/hf/pretrained_dir.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/models/gpt.h"
#include "sparsetrain/text/byte_tokenizer.h"
#include "temp_dir.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::error_of;

const std::string kFixture = std::string(SPARSETRAIN_GOLDEN_DIR) + "/hf_gpt2_tiny";

TEST(HfGpt2, FixtureImportsAndReproducesItsLogits) {
  const GptConfig config = read_hf_gpt2_config(kFixture);
  EXPECT_EQ(config.vocab_size, 260);
  EXPECT_EQ(config.embed, 16);
  Gpt gpt(config);
  gpt.load_state_dict(read_hf_gpt2_weights(kFixture), /*strict=*/true);

  const SafetensorsFile expected =
      read_safetensors(std::string(SPARSETRAIN_GOLDEN_DIR) + "/hf_gpt2_tiny_expected.safetensors");
  const StateTensor& ids_f = *expected.tensors.find("inputs.ids");
  const StateTensor& want = *expected.tensors.find("expected.logits");
  std::vector<int32_t> ids(ids_f.values.begin(), ids_f.values.end());
  const int64_t rows = std::stoll(expected.metadata.at("rows")), seq = std::stoll(expected.metadata.at("seq"));
  const Matrix& got = gpt.logits(ids, rows, seq);
  ASSERT_EQ(static_cast<std::size_t>(got.size()), want.values.size());
  double scale = 0.0;
  for (float v : want.values) scale = std::max(scale, std::abs(static_cast<double>(v)));
  // Float32 against float64 (stored rounded to float32), as the golden tests compare.
  for (std::size_t i = 0; i < want.values.size(); ++i)
    ASSERT_LE(std::abs(got.data()[i] - want.values[i]), 1e-5 * scale) << "logit " << i;
}

// A small GPT with random weights, two of its linear weights sparse.
std::unique_ptr<Gpt> sparse_gpt() {
  GptConfig c;
  c.vocab_size = 257;
  c.context = 8;
  c.layers = 2;
  c.heads = 2;
  c.embed = 8;
  auto gpt = std::make_unique<Gpt>(c);
  gpt->init_weights(7);
  for (const char* name : {"transformer.h.0.mlp.c_fc.weight", "transformer.h.1.attn.c_attn.weight"}) {
    Parameter& p = gpt->parameter(name);
    Mask mask(p.rows(), p.cols());
    for (int64_t i = 0; i < p.rows() * p.cols(); ++i) mask.data()[i] = i % 3 == 0;
    p.sparsify(mask, std::nullopt);
  }
  return gpt;
}

// Bit for bit; no memcmp, which must not see the null data() of an empty vector.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
  return std::ranges::equal(a, b, {}, bits, bits);
}

TEST(HfGpt2, WrittenDirectoryReadsBackBitIdentical) {
  const testing::TempDir tmp;
  const auto gpt = sparse_gpt();
  const StateDict state = gpt->state_dict();
  const std::string out = (tmp.path() / "hf").string();
  write_hf_gpt2_dir(out, state, gpt->config(), ByteTokenizer(true));

  const StateDict back = read_hf_gpt2_weights(out);
  for (const StateTensor& t : state.tensors) {
    if (t.is_mask) continue;
    const StateTensor* b = back.find(t.name);
    ASSERT_NE(b, nullptr) << t.name;
    EXPECT_EQ(b->shape, t.shape) << t.name;
    EXPECT_TRUE(same_bits(b->values, t.values)) << t.name;
  }
  EXPECT_EQ(back.tensors.size(), gpt->named_parameters().size());

  // HF layout: c_fc is [in, out]; pruned weights are zeros; masks beside, in the same layout.
  const SafetensorsFile model = read_safetensors(out + "/model.safetensors");
  const SafetensorsFile masks = read_safetensors(out + "/masks.safetensors");
  EXPECT_EQ(model.metadata.at("format"), "pt");
  EXPECT_EQ(model.tensors.find("lm_head.weight"), nullptr);
  const StateTensor& fc = *model.tensors.find("transformer.h.0.mlp.c_fc.weight");
  EXPECT_EQ(fc.shape, (std::vector<int64_t>{8, 32}));
  const StateTensor& fc_mask = *masks.tensors.find("transformer.h.0.mlp.c_fc.weight_mask");
  ASSERT_EQ(masks.tensors.tensors.size(), 2u);
  const Mask own = gpt->parameter("transformer.h.0.mlp.c_fc.weight").mask();
  for (int64_t out_row = 0; out_row < 32; ++out_row)
    for (int64_t in_col = 0; in_col < 8; ++in_col) {
      const auto hf = static_cast<std::size_t>(in_col * 32 + out_row);
      EXPECT_EQ(fc_mask.keep[hf], own.data()[out_row * 8 + in_col]);
      if (fc_mask.keep[hf] == 0) {
        EXPECT_EQ(fc.values[hf], 0.0f);
      }
    }

  const json config = json::parse(read_file(out + "/config.json"));
  EXPECT_EQ(config.at("model_type"), "gpt2");
  EXPECT_EQ(config.at("architectures"), json({"GPT2LMHeadModel"}));
  EXPECT_EQ(config.at("activation_function"), "gelu_new");
  EXPECT_EQ(config.at("n_embd"), 8);
  EXPECT_EQ(config.at("vocab_size"), 257);
  EXPECT_EQ(config.at("layer_norm_epsilon"), 1e-5);
  EXPECT_EQ(config.at("eos_token_id"), 256);
  EXPECT_EQ(config.at("tie_word_embeddings"), true);
  const json bytes = json::parse(read_file(out + "/byte_tokenizer.json"));
  EXPECT_EQ(bytes.at("end_of_text_id"), 256);

  EXPECT_EQ(error_of([&] { write_hf_gpt2_dir(out, state, gpt->config(), ByteTokenizer(true)); }),
            "--out " + out + ": the directory holds files; give a new or empty directory for the export");
}

// A copy of the fixture in `dir`, its tensors and config.json changed by `edit`.
void edited_fixture(const fs::path& dir, const std::function<void(StateDict&, json&)>& edit) {
  fs::create_directories(dir);
  SafetensorsFile file = read_safetensors(kFixture + "/model.safetensors");
  json config = json::parse(read_file(kFixture + "/config.json"));
  edit(file.tensors, config);
  write_safetensors((dir / "model.safetensors").string(), file.tensors, file.metadata);
  std::ofstream(dir / "config.json") << config.dump();
}

TEST(HfGpt2, RefusesWhatItCannotLoadNamingTheTensor) {
  const testing::TempDir tmp;
  const fs::path d = tmp.path() / "m";
  const std::string file = (d / "model.safetensors").string(), config = (d / "config.json").string();
  auto refused = [&](const std::function<void(StateDict&, json&)>& edit) {
    fs::remove_all(d);
    edited_fixture(d, edit);
    return error_of([&] { read_hf_gpt2_weights(d.string()); });
  };
  const std::string dims = "(vocab_size 260, n_positions 16, n_embd 16, n_layer 2)";

  EXPECT_EQ(refused([](StateDict& t, json&) {
              std::erase_if(t.tensors, [](auto& x) { return x.name == "h.1.mlp.c_fc.bias"; });
            }),
            file +
                ": no tensor 'transformer.h.1.mlp.c_fc.bias' (or 'h.1.mlp.c_fc.bias'), [4 * n_embd] = [64], which the "
                "GPT-2 of " +
                config + " has " + dims);
  EXPECT_EQ(
      refused([](StateDict& t, json&) {
        t.add({"h.2.ln_1.weight", {16}, false, std::vector<float>(16, 1.0f), {}});
      }),
      file + ": unexpected tensor 'h.2.ln_1.weight' [16]: not part of the GPT-2 that " + config + " describes " + dims);
  EXPECT_EQ(refused([](StateDict& t, json&) {
              StateTensor& w = *t.find("h.0.attn.c_attn.weight");
              w.shape = {48, 16};  // sparsetrain's [out, in], not Conv1D's
            }),
            file + ": tensor 'h.0.attn.c_attn.weight' has shape [48, 16], but " + config +
                " makes it [n_embd, 3 * n_embd] = [16, 48] " + dims);
  EXPECT_EQ(refused([](StateDict&, json& c) { c["n_embd"] = 32; }),
            file + ": tensor 'wte.weight' has shape [260, 16], but " + config +
                " makes it [vocab_size, n_embd] = [260, 32] (vocab_size 260, n_positions 16, n_embd 32, n_layer 2)");
  EXPECT_EQ(refused([](StateDict&, json& c) { c["activation_function"] = "gelu"; }),
            config +
                ": 'activation_function' is 'gelu'; sparsetrain's GPT computes GELU's tanh form ('gelu_new'), so "
                "this model's outputs would differ ('gelu' is the erf form)");
  EXPECT_EQ(refused([](StateDict&, json& c) { c["model_type"] = "bert"; }),
            config + ": 'model_type' is 'bert'; sparsetrain imports Hugging Face GPT-2 models ('gpt2')");
  EXPECT_EQ(refused([](StateDict&, json& c) { c["n_inner"] = 32; }),
            config + ": 'n_inner' is 32; sparsetrain's GPT has an MLP of 4 * n_embd = 64 units");
  // Computed in float32: an epsilon float cannot hold is refused, not cast (a cast would be
  // undefined behaviour, or 0).
  for (const double eps : {1e300, 1e-60})
    EXPECT_EQ(refused([eps](StateDict&, json& c) { c["layer_norm_epsilon"] = eps; }),
              fmt::format("{}: 'layer_norm_epsilon' is {}; expected a number float32 holds above 0", config,
                          json(eps).dump()));
  // A value nested deeper than a message quotes is named, not dumped (which would recurse per level).
  EXPECT_EQ(refused([](StateDict&, json& c) {
              json deep = json::array();
              for (int i = 0; i < 100; ++i) deep = json::array({std::move(deep)});
              c["n_inner"] = std::move(deep);
            }),
            config +
                ": 'n_inner' is a JSON array nested more than 16 deep; sparsetrain's GPT has an MLP of 4 * n_embd "
                "= 64 units");
  EXPECT_EQ(refused([](StateDict& t, json&) {
              StateTensor head = *t.find("wte.weight");
              head.name = "lm_head.weight";
              head.values[0] += 1.0f;
              t.add(std::move(head));
            }),
            file +
                ": tensor 'lm_head.weight' differs from 'wte.weight': the output head is not tied to the token "
                "embedding, which sparsetrain's GPT (and GPT-2) requires");
  // A tied head stored anyway, and the attention buffers, are accepted.
  EXPECT_EQ(refused([](StateDict& t, json&) {
              StateTensor head = *t.find("wte.weight");
              head.name = "lm_head.weight";
              t.add(std::move(head));
            }),
            "no error");
}

TEST(HfGpt2, RefusesDirectoriesWithoutOneSafetensorsFile) {
  const testing::TempDir tmp;
  const std::string pickle = (tmp.path() / "pickle").string();
  fs::create_directories(pickle);
  std::ofstream(pickle + "/pytorch_model.bin") << "PK";
  std::ofstream(pickle + "/config.json") << "{}";
  EXPECT_EQ(
      error_of([&] { read_hf_gpt2_config(pickle); }),
      "hf:" + pickle +
          ": has its weights only as pytorch_model.bin, a Python pickle, which sparsetrain does not read (loading "
          "a pickle runs code); convert it to model.safetensors with transformers: python3 -c \"from "
          "transformers import AutoModelForCausalLM as M; M.from_pretrained('" +
          pickle + "').save_pretrained('" + pickle + "', safe_serialization=True)\"");
  const std::string sharded = (tmp.path() / "sharded").string();
  fs::create_directories(sharded);
  std::ofstream(sharded + "/model.safetensors.index.json") << "{}";
  EXPECT_EQ(error_of([&] { read_hf_gpt2_config(sharded); }),
            "hf:" + sharded +
                ": the weights are sharded (model.safetensors.index.json); sparsetrain reads one model.safetensors: "
                "save the model again with save_pretrained(DIR, max_shard_size=\"100GB\")");
  EXPECT_EQ(error_of([&] { read_hf_gpt2_config((tmp.path() / "none").string()); }),
            "hf:" + (tmp.path() / "none").string() + ": no such directory");
  const std::string no_config = (tmp.path() / "no_config").string();
  fs::create_directories(no_config);
  fs::copy_file(kFixture + "/model.safetensors", no_config + "/model.safetensors");
  EXPECT_EQ(error_of([&] { read_hf_gpt2_config(no_config); }),
            "hf:" + no_config + ": no config.json beside model.safetensors");
  // A syntax error, and a number beyond a double's range, which nlohmann reports as another kind
  // of exception (out_of_range): both are the file's fault, named as such.
  std::ofstream(no_config + "/config.json") << R"({"n_embd": 16,})";
  EXPECT_EQ(error_of([&] { read_hf_gpt2_config(no_config); }),
            no_config +
                "/config.json: not valid JSON: syntax error while parsing object key - unexpected '}'; expected "
                "string literal");
  std::ofstream(no_config + "/config.json") << R"({"n_embd": 1e400})";
  EXPECT_EQ(error_of([&] { read_hf_gpt2_config(no_config); }),
            no_config + "/config.json: not valid JSON: number overflow parsing '1e400'");
}

}  // namespace
}  // namespace sparsetrain
