// The sparsity API in a few lines: Static on a whole model, then a Group that gives attention
// weights to Static and the MLP to SET, each parameter to the first group that matches.
//
//   build/examples/example_static_and_group
#include <cstdio>
#include <memory>

#include <sparsetrain/optim/sgd.h>
#include <sparsetrain/sparsity/algorithms.h>
#include <sparsetrain/sparsity/group.h>

using namespace sparsetrain;

struct Projection : Module {
  Projection(int64_t in, int64_t out) : Module("Linear") {
    weight = &register_parameter("weight", {out, in});
    bias = &register_parameter("bias", {out});
  }
  Parameter* weight;
  Parameter* bias;
};

struct Block : Module {
  Block() : Module("Block") {
    register_module("c_attn", std::make_unique<Projection>(64, 192));
    register_module("c_fc", std::make_unique<Projection>(64, 256));
    register_module("c_proj", std::make_unique<Projection>(256, 64));
  }
};

struct Net : Module {
  Net() : Module("Net") {
    for (const char* name : {"h0", "h1"}) register_module(name, std::make_unique<Block>());
  }
};

void report(const char* title, Module& model) {
  std::printf("%s\n", title);
  for (const Module::Entry& e : model.named_parameters())
    std::printf("  %-18s %-12s sparsity %.2f\n", e.param->name().c_str(), storage_name(e.param->storage()),
                e.param->sparsity());
}

int main() {
  {
    Net model;
    Sgd optimizer(model.parameters(), 0.1, {.momentum = 0.9});
    Static s(0.3);
    s.apply(model);      // every weight matrix (the default filter), 30% pruned at random
    s.apply(optimizer);  // masks re-applied after every step
    optimizer.step();
    report("Static(0.3):", model);
  }
  {
    Net model;
    Sgd optimizer(model.parameters(), 0.1, {.momentum = 0.9});
    SparsityOptions attention;
    attention.filter = ParamFilter::globs({"*.c_attn.weight"});
    SparsityOptions mlp;
    mlp.filter = ParamFilter::globs({"*.c_fc.weight", "*.c_proj.weight"});
    mlp.format = FormatSpec::csr();  // compressed: the sparse kernels run these layers
    Group group;
    group.add(std::make_unique<Static>(0.5, attention));
    group.add(std::make_unique<SET>(LevelSchedule::constant(0.9), UpdateSchedule::every(100),
                                    LevelSchedule::constant(0.3), mlp));
    group.apply(model);
    group.apply(optimizer);
    report("Group(Static(0.5) on attention, SET(0.9) on the MLP):", model);
  }
  return 0;
}
