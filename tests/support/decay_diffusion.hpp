// A small gridded model with a pointwise and a stencil part, shared by the split and schedule
// tests: du_i/dt = -rate i u_i + K (u_i+1 - 2 u_i + u_i-1) with closed ends, six cells, u = 1
// at the start.
#pragma once

#include <string>

namespace esi::testing {

inline std::string decay_diffusion_model(const std::string& rate) {
  return R"({"esm": "1.0.0", "metadata": {"name": "t"}, "index_sets": {"x": {"kind": "interval", "size": 6}},
 "models": {"M": {"variables": {
   "u": {"type": "unknown", "shape": ["x"], "default": 1.0},
   "k": {"type": "unknown", "shape": ["x"]},
   "K": {"type": "parameter", "default": 0.002}},
  "equations": [
   {"lhs": "k", "rhs": {"op": "aggregate", "output_idx": ["i"], "args": [], "ranges": {"i": [1, 6]},
                        "expr": {"op": "*", "args": [)" + rate + R"(, "i"]}}},
   {"lhs": {"op": "D", "args": ["u"], "wrt": "t"}, "rhs": {"op": "+", "args": [
     {"op": "makearray", "args": [], "regions": [[[2, 5]], [[1, 1]], [[6, 6]]], "values": [
       {"op": "aggregate", "output_idx": ["i"], "args": ["u"], "ranges": {"i": [2, 5]},
        "expr": {"op": "*", "args": ["K", {"op": "+", "args": [
          {"op": "index", "args": ["u", {"op": "+", "args": ["i", 1]}]},
          {"op": "*", "args": [-2, {"op": "index", "args": ["u", "i"]}]},
          {"op": "index", "args": ["u", {"op": "-", "args": ["i", 1]}]}]}]}},
       {"op": "*", "args": ["K", {"op": "-", "args": [{"op": "index", "args": ["u", 2]}, {"op": "index", "args": ["u", 1]}]}]},
       {"op": "*", "args": ["K", {"op": "-", "args": [{"op": "index", "args": ["u", 5]}, {"op": "index", "args": ["u", 6]}]}]}]},
     {"op": "*", "args": [{"op": "-", "args": ["k"]}, "u"]}]}}]}}})";
}

}  // namespace esi::testing
