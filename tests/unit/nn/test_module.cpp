// The module tree: dotted names, requires_dense inheritance, state dicts with masks, and the
// errors of loading a state that does not fit.
#include <gtest/gtest.h>

#include "error_of.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/nn/module.h"
#include "toy_modules.h"

namespace sparsetrain {
namespace {

using Linear = testing::ToyLinear;

struct Block : Module {
  Block() : Module("Block") {
    ln = &register_module("ln_1", std::make_unique<Linear>(4, 4));
    fc = &register_module("c_fc", std::make_unique<Linear>(4, 8));
  }
  Linear* ln;
  Linear* fc;
};

struct Net : Module {
  Net() : Module("Net") {
    for (int i = 0; i < 2; ++i) blocks.push_back(&register_module(std::to_string(i), std::make_unique<Block>()));
    head = &register_module("head", std::make_unique<Linear>(8, 3));
  }
  std::vector<Block*> blocks;
  Linear* head;
};

std::vector<std::string> names(Module& m) {
  std::vector<std::string> out;
  for (const auto& e : m.named_parameters()) out.push_back(e.param->name());
  return out;
}

using testing::error_of;

TEST(Module, NamesAreDottedPathsInRegistrationOrder) {
  Net net;
  EXPECT_EQ(names(net),
            (std::vector<std::string>{"0.ln_1.weight", "0.ln_1.bias", "0.c_fc.weight", "0.c_fc.bias", "1.ln_1.weight",
                                      "1.ln_1.bias", "1.c_fc.weight", "1.c_fc.bias", "head.weight", "head.bias"}));
  EXPECT_EQ(&net.parameter("1.c_fc.weight"), net.blocks[1]->fc->weight);
  EXPECT_EQ(net.named_parameters()[2].owner->type(), "Linear");
}

TEST(Module, AttachingATreeUnderAParentRenamesEveryDescendant) {
  struct Wrapper : Module {
    Wrapper() : Module("Wrapper") { register_module("transformer", std::make_unique<Net>()); }
  } w;
  EXPECT_EQ(names(w).front(), "transformer.0.ln_1.weight");
  EXPECT_EQ(names(w).back(), "transformer.head.bias");
}

TEST(Module, RequiresDenseIsInheritedFromAnyAncestor) {
  Net net;
  net.blocks[0]->requires_dense = true;
  net.head->bias->requires_dense = true;
  int dense = 0;
  for (const auto& e : net.named_parameters()) {
    const bool expected = e.param->name().starts_with("0.") || e.param->name() == "head.bias";
    EXPECT_EQ(e.requires_dense, expected) << e.param->name();
    dense += e.requires_dense;
  }
  EXPECT_EQ(dense, 5);
}

TEST(Module, StateDictHoldsZerosAtPrunedPositionsAndMasksForSparseParameters) {
  Net net;
  for (Parameter* p : net.parameters())
    for (std::size_t i = 0; i < p->values().size(); ++i) p->values()[i] = 1.0f + static_cast<float>(i);
  const Mask mask = random_mask(FormatSpec::csr(), 8, 4, 0.5, Philox(1, "m"));
  net.blocks[1]->fc->weight->sparsify(mask, FormatSpec::csr());
  const StateDict state = net.state_dict();
  EXPECT_EQ(state.tensors.size(), 11u);
  const StateTensor* m = state.find("1.c_fc.weight_mask");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->is_mask);
  EXPECT_EQ(m->shape, (std::vector<int64_t>{8, 4}));
  const StateTensor* w = state.find("1.c_fc.weight");
  for (int64_t i = 0; i < 32; ++i) {
    EXPECT_EQ(m->keep[i], mask.data()[i]);
    EXPECT_EQ(w->values[i], mask.data()[i] ? 1.0f + static_cast<float>(i) : 0.0f);
  }
  EXPECT_EQ(state.find("0.c_fc.weight_mask"), nullptr);

  // Loading into a fresh model with the same sparsity applied reproduces every tensor.
  Net fresh;
  fresh.blocks[1]->fc->weight->sparsify(Mask(8, 4, true), FormatSpec::csr());
  fresh.load_state_dict(state);
  const StateDict again = fresh.state_dict();
  ASSERT_EQ(again.tensors.size(), state.tensors.size());
  for (std::size_t i = 0; i < state.tensors.size(); ++i) {
    EXPECT_EQ(again.tensors[i].name, state.tensors[i].name);
    EXPECT_EQ(again.tensors[i].values, state.tensors[i].values) << state.tensors[i].name;
    EXPECT_EQ(again.tensors[i].keep, state.tensors[i].keep) << state.tensors[i].name;
  }
}

TEST(Module, BuffersAreSavedAndLoadedButNeverTrainedOrSparsified) {
  struct Norm : Module {
    Norm() : Module("BatchNorm") {
      weight = &register_parameter("weight", {3});
      mean = &register_buffer("running_mean", {3});
    }
    using Module::register_buffer;
    Parameter *weight, *mean;
  };
  struct Holder : Module {
    Holder() : Module("Holder") { norm = &register_module("bn", std::make_unique<Norm>()); }
    Norm* norm;
  } model;
  EXPECT_EQ(model.parameters().size(), 1u);
  ASSERT_EQ(model.buffers().size(), 1u);
  EXPECT_EQ(model.buffers()[0]->name(), "bn.running_mean");
  for (std::size_t i = 0; i < 3; ++i) model.norm->mean->values()[i] = 0.5f + static_cast<float>(i);
  const StateDict state = model.state_dict();
  ASSERT_EQ(state.tensors.size(), 2u);
  EXPECT_EQ(state.tensors[1].name, "bn.running_mean");
  Holder fresh;
  fresh.load_state_dict(state);
  EXPECT_EQ(fresh.norm->mean->values()[2], 2.5f);
  StateDict missing = state;
  missing.tensors.pop_back();
  EXPECT_EQ(error_of([&] { fresh.load_state_dict(missing); }), "state dict: missing buffer 'bn.running_mean'");
  EXPECT_EQ(error_of([&] { model.norm->register_buffer("weight", {1}); }), "'bn.weight' registered twice");
}

TEST(Module, LoadingAStateThatDoesNotFitNamesTheTensor) {
  Net sparse;
  sparse.head->weight->sparsify(Mask(3, 8, true));
  const StateDict state = sparse.state_dict();
  Net dense;
  EXPECT_EQ(error_of([&] { dense.load_state_dict(state); }),
            "state dict: 'head.weight_mask' has a mask but the parameter is dense");
  Net masked;
  masked.head->weight->sparsify(Mask(3, 8, true));
  masked.blocks[0]->fc->weight->sparsify(Mask(8, 4, true));
  EXPECT_EQ(error_of([&] { masked.load_state_dict(state); }),
            "state dict: no mask '0.c_fc.weight_mask' for the sparse parameter '0.c_fc.weight'");
  StateDict missing = state;
  missing.tensors.erase(missing.tensors.begin());
  EXPECT_EQ(error_of([&] { sparse.load_state_dict(missing); }), "state dict: missing tensor '0.ln_1.weight'");
  StateDict reshaped = state;
  reshaped.tensors[0].shape = {2, 8};
  EXPECT_EQ(error_of([&] { sparse.load_state_dict(reshaped); }),
            "state dict: tensor '0.ln_1.weight' has shape [2, 8], the model's parameter has [4, 4]");
  StateDict extra = state;
  extra.add({"decoder.weight", {1}, false, {0.0f}, {}});
  EXPECT_EQ(error_of([&] { sparse.load_state_dict(extra); }),
            "state dict: unexpected tensor 'decoder.weight' (no such parameter in the model)");
  EXPECT_NO_THROW(sparse.load_state_dict(extra, /*strict=*/false));
  EXPECT_EQ(error_of([&] { sparse.parameter("head.wieght"); }).substr(0, 40),
            "no parameter named 'head.wieght'; the mo");
}

}  // namespace
}  // namespace sparsetrain
