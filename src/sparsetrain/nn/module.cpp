#include "sparsetrain/nn/module.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

// A module-local name: one path segment, so dotted names stay unambiguous.
void check_local_name(std::string_view kind, const std::string& name) {
  if (name.empty() || name.find('.') != std::string::npos)
    fail("{} name '{}' must be non-empty and contain no '.'", kind, name);
}

}  // namespace

Parameter& Module::add_tensor(NamedTensors& list, std::string local_name, Shape shape) {
  check_local_name("parameter or buffer", local_name);
  for (const auto* existing : {&params_, &buffers_})
    for (const auto& [name, p] : *existing)
      if (name == local_name) fail("'{}{}' registered twice", prefix_, local_name);
  auto tensor = std::make_unique<Parameter>(prefix_ + local_name, std::move(shape));
  Parameter& ref = *tensor;
  list.emplace_back(std::move(local_name), std::move(tensor));
  return ref;
}

Parameter& Module::register_parameter(std::string local_name, Shape shape) {
  return add_tensor(params_, std::move(local_name), std::move(shape));
}

Parameter& Module::register_buffer(std::string local_name, Shape shape) {
  return add_tensor(buffers_, std::move(local_name), std::move(shape));
}

void Module::collect_buffers(std::vector<Parameter*>& out) const {
  for (const auto& [name, b] : buffers_) out.push_back(b.get());
  for (const auto& [name, m] : children_) m->collect_buffers(out);
}

std::vector<Parameter*> Module::buffers() {
  std::vector<Parameter*> out;
  collect_buffers(out);
  return out;
}

void Module::attach(std::string local_name, std::unique_ptr<Module> child) {
  check_local_name("module", local_name);
  for (const auto& [name, m] : children_)
    if (name == local_name) fail("module '{}{}' registered twice", prefix_, local_name);
  child->set_prefix(prefix_ + local_name + ".");
  children_.emplace_back(std::move(local_name), std::move(child));
}

void Module::set_prefix(const std::string& prefix) {
  prefix_ = prefix;
  for (auto* list : {&params_, &buffers_})
    for (auto& [name, p] : *list) p->name_ = prefix_ + name;
  for (auto& [name, m] : children_) m->set_prefix(prefix_ + name + ".");
}

void Module::collect(std::vector<Entry>& out, bool dense_above) const {
  const bool dense = dense_above || requires_dense;
  for (const auto& [name, p] : params_) out.push_back({p.get(), this, dense || p->requires_dense});
  for (const auto& [name, m] : children_) m->collect(out, dense);
}

std::vector<Module::Entry> Module::named_parameters() {
  std::vector<Entry> out;
  collect(out, false);
  return out;
}

std::vector<Parameter*> Module::parameters() {
  std::vector<Parameter*> out;
  for (const Entry& e : named_parameters()) out.push_back(e.param);
  return out;
}

Parameter& Module::parameter(std::string_view name) {
  std::vector<std::string> names;
  for (const Entry& e : named_parameters()) {
    if (e.param->name() == name) return *e.param;
    names.push_back(e.param->name());
  }
  fail("no parameter named '{}'; the model has: {}", name, fmt::join(names, ", "));
}

StateDict Module::state_dict() const {
  std::vector<Entry> entries;
  collect(entries, false);
  StateDict state;
  for (const Entry& e : entries) {
    const Parameter& p = *e.param;
    const Matrix values = p.to_dense();
    state.add({p.name(), p.shape(), false, std::vector<float>(values.data(), values.data() + values.size()), {}});
    if (p.is_sparse()) {
      const Mask mask = p.mask();
      state.add({p.name() + "_mask", p.shape(), true, {}, std::vector<uint8_t>(mask.data(), mask.data() + p.numel())});
    }
  }
  std::vector<Parameter*> buffers;
  collect_buffers(buffers);
  for (const Parameter* b : buffers)
    state.add({b->name(), b->shape(), false, std::vector<float>(b->values().begin(), b->values().end()), {}});
  return state;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  std::set<std::string> used;
  for (const Entry& e : named_parameters()) {
    Parameter& p = *e.param;
    const StateTensor* values = state.find(p.name());
    if (!values) fail("state dict: missing tensor '{}'", p.name());
    auto check_shape = [&](const StateTensor& t) {
      if (t.shape != p.shape())
        fail("state dict: tensor '{}' has shape [{}], the model's parameter has [{}]", t.name, fmt::join(t.shape, ", "),
             fmt::join(p.shape(), ", "));
    };
    check_shape(*values);
    if (values->is_mask) fail("state dict: tensor '{}' is a mask, expected float values", p.name());
    used.insert(p.name());
    if (const StateTensor* mask = state.find(p.name() + "_mask")) {
      check_shape(*mask);
      if (!mask->is_mask) fail("state dict: tensor '{}' should be a mask", mask->name);
      if (!p.is_sparse()) fail("state dict: '{}' has a mask but the parameter is dense", mask->name);
      Mask m(p.rows(), p.cols());
      std::copy(mask->keep.begin(), mask->keep.end(), m.data());
      p.set_mask(m);
      used.insert(mask->name);
    } else if (p.is_sparse()) {
      fail("state dict: no mask '{}_mask' for the sparse parameter '{}'", p.name(), p.name());
    }
    p.assign_dense(ConstMatrixView{values->values.data(), p.rows(), p.cols(), p.cols()});
  }
  for (Parameter* b : buffers()) {
    const StateTensor* t = state.find(b->name());
    if (!t) fail("state dict: missing buffer '{}'", b->name());
    if (t->shape != b->shape() || t->is_mask)
      fail("state dict: buffer '{}' has shape [{}]{}, the model's buffer is float [{}]", t->name,
           fmt::join(t->shape, ", "), t->is_mask ? " (a mask)" : "", fmt::join(b->shape(), ", "));
    std::copy(t->values.begin(), t->values.end(), b->values().begin());
    used.insert(b->name());
  }
  if (strict)
    for (const StateTensor& t : state.tensors)
      if (!used.contains(t.name)) fail("state dict: unexpected tensor '{}' (no such parameter in the model)", t.name);
}

}  // namespace sparsetrain
