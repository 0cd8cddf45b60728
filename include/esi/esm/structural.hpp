// Structural validation of a document (spec §4.9, §5, §6, §7, §10) and the classification
// functions of §6.3.1.
//
// Runs on the JSON of a document whose `ref`s are resolved (components inlined by the loader)
// and that passed the schema layer. Every finding carries the spec's error code and the JSON
// pointer of the offending node, so it is testable against the conformance suite's
// expected_errors.json.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "esi/core/error.hpp"

namespace esi::esm {

/// All structural findings (empty = structurally valid). Never throws on bad input.
std::vector<Diagnostic> check_structure(const nlohmann::json& document, const std::string& file);

/// The derived classification of one model (spec §6.3.1). All lists sorted by code point,
/// names local to the model.
struct Classification {
  std::vector<std::string> ode_states;
  std::vector<std::string> observed_unknowns;
  std::vector<std::string> algebraic_unknowns;
  std::vector<std::string> brownian_parameters;
  std::vector<std::string> discrete_parameters;
  std::vector<std::string> sampled_parameters;
  std::vector<std::string> constant_parameters;
  std::string system_kind;           ///< "ode" | "pde" | "nonlinear" | "sde"
  std::string declared_system_kind;  ///< "" when the model has no `system_kind` field
};

/// Classifies one model object (`variables`, `equations`, ...).
Classification classify_model(const nlohmann::json& model);

}  // namespace esi::esm
