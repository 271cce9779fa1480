#pragma once
// Module: a node of the model tree, owning parameters and child modules under dotted names
// (libtorch / Hugging Face style: "transformer.h.0.attn.c_attn.weight"). The names are what
// configs filter on, what sparsity groups and optimizers key state by, and what checkpoints store.
//
// A module's type ("Linear", "Embedding", "LayerNorm", ...) is what the default sparsity filter
// asks — names such as `wte` or `ln_1` do not say what a module is.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sparsetrain/nn/parameter.h"
#include "sparsetrain/nn/state_dict.h"

namespace sparsetrain {

class Module {
 public:
  explicit Module(std::string type) : type_(std::move(type)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& type() const { return type_; }
  // Never sparsified by algorithms: this module's parameters and those of its descendants.
  bool requires_dense = false;

  struct Entry {
    Parameter* param;
    const Module* owner;
    bool requires_dense;  // the parameter's flag, or that of its owner or any ancestor
  };
  // Every parameter, depth first in registration order; param->name() is the full dotted name.
  std::vector<Entry> named_parameters();
  std::vector<Parameter*> parameters();
  // The parameter with this full name; the error lists the names that exist.
  Parameter& parameter(std::string_view name);

  // Buffers: named tensors that are saved and loaded with the model but never trained or
  // sparsified (running statistics, fixed tables). Dense parameters underneath, kept apart.
  std::vector<Parameter*> buffers();

  // `<name>` for every parameter (zeros at pruned positions), `<name>_mask` for sparse ones, then
  // every buffer.
  StateDict state_dict() const;
  // Loads values, and masks into sparse parameters. A `<name>_mask` for a dense parameter, a
  // missing tensor, a shape mismatch or (strict) an unknown tensor is an error naming it.
  void load_state_dict(const StateDict& state, bool strict = true);

 protected:
  Parameter& register_parameter(std::string local_name, Shape shape);
  Parameter& register_buffer(std::string local_name, Shape shape);
  template <typename M>
  M& register_module(std::string local_name, std::unique_ptr<M> child) {
    M& ref = *child;
    attach(std::move(local_name), std::move(child));
    return ref;
  }

 private:
  void attach(std::string local_name, std::unique_ptr<Module> child);
  void set_prefix(const std::string& prefix);
  void collect(std::vector<Entry>& out, bool dense_above) const;
  void collect_buffers(std::vector<Parameter*>& out) const;
  using NamedTensors = std::vector<std::pair<std::string, std::unique_ptr<Parameter>>>;  // local name, tensor
  Parameter& add_tensor(NamedTensors& list, std::string local_name, Shape shape);

  std::string type_;
  std::string prefix_;  // this module's dotted path plus ".", empty at the root
  NamedTensors params_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
};

}  // namespace sparsetrain
