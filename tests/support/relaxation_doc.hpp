// A small stiff model several suites run: x' = -k (x - 1), y' = -y, stiff at k = 1000 (the
// automatic method picks Rodas5P), with the exact solution x(t) = 1 + (x0 - 1) exp(-k t); y
// keeps a second state in the Jacobian.
#pragma once

namespace esi::testing {

inline constexpr const char* kRelaxationDoc =
    R"({"esm": "1.0.0", "metadata": {"name": "t"}, "models": {"M": {
  "variables": {"x": {"type": "unknown", "default": 3.0}, "y": {"type": "unknown", "default": 1.0},
                "k": {"type": "parameter", "default": 1000.0}},
  "equations": [
    {"lhs": {"op": "D", "args": ["x"], "wrt": "t"},
     "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, {"op": "-", "args": ["x", 1]}]}},
    {"lhs": {"op": "D", "args": ["y"], "wrt": "t"}, "rhs": {"op": "-", "args": ["y"]}}]}}})";

}  // namespace esi::testing
