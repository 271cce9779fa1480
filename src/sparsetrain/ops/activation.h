#pragma once
// Element-wise activations and their derivatives, for the MLP's hidden layers and the GPT's MLP.
// GELU is GPT-2's tanh approximation (Hugging Face `gelu_new`, PyTorch gelu(approximate='tanh')):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// and GeluErf the exact form BERT uses (Hugging Face `gelu`, PyTorch gelu()):
//   gelu_erf(x) = x Phi(x) = 0.5 x erfc(-x / sqrt(2))
#include <cstdint>
#include <string>

namespace sparsetrain {

enum class Activation { None, ReLU, Sigmoid, Tanh, Gelu, GeluErf };
// "none", "relu", "sigmoid", "tanh", "gelu", "gelu_erf"; an unknown name is an Error naming `source` and the choices.
Activation parse_activation(const std::string& text, const std::string& source);
const char* activation_name(Activation a);

// y[i] = f(x[i]) for i < n; y may alias x.
void activation_forward(Activation a, const float* x, float* y, int64_t n);
// dx[i] = dy[i] * f'(x[i]), given the forward input x and output y (whichever the derivative
// needs: sigmoid and tanh use y, relu and gelu use x). dx may alias dy.
void activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx, int64_t n);
// Whether activation_backward reads y (sigmoid, tanh) rather than only x.
bool derivative_needs_output(Activation a);

// The element loops alone, over [begin, end), on the calling thread and outside the "activation"
// phase of the profile: for passes that fuse an activation into their own parallel loop (the
// packing of a linear layer's operand). Same bits as the calls above.
void activation_forward_range(Activation a, const float* x, float* y, int64_t begin, int64_t end);
void activation_backward_range(Activation a, const float* x, const float* y, const float* dy, float* dx, int64_t begin,
                               int64_t end);

}  // namespace sparsetrain
