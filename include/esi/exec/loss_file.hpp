// A loss as a sum of terms, written as JSON (`esi simulate --loss-file LOSS.json`, or a dict
// given to the Python module's Model.gradient):
//
//   {"terms": [
//     {"variable": "C.x", "at": [3600, 7200], "weight": 1},   values at output times
//     {"variable": "C.x", "integral": [0, 86400]},            the time integral over [a, b]
//     {"variable": "C.x", "mean": [0, 86400]},                its mean over [a, b]
//     {"observations": "obs.csv", "weight": 1}                 1/2 sum ((x - value) / sigma)^2
//   ]}
//
// An observations CSV has rows time,name,value,sigma (an optional header row with those words;
// blank lines and # comments skipped); each name becomes one misfit term. Malformed input throws
// esi::Error `invalid_loss_file` naming the file and the JSON pointer or the CSV line.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/exec/gradient.hpp"

namespace esi::exec {

/// The terms of the loss file at `path` (observation files relative to its folder).
std::vector<LossTerm> read_loss_file(const std::string& path);

/// The terms of a loss already parsed: `file` names it in messages, observation files are read
/// relative to `folder`.
std::vector<LossTerm> loss_terms(const nlohmann::json& loss, const std::string& file,
                                 const std::filesystem::path& folder);

}  // namespace esi::exec
