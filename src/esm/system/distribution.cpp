// Distributions of parameters, univariate and multivariate (distribution.hpp).
#include "esi/esm/distribution.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"

namespace esi::esm {
namespace {

using nlohmann::json;

std::string count_text(std::size_t n) { return std::to_string(n); }

/// A number, or an array of numbers (one per component), of field `key`.
struct Field {
  std::vector<double> values;
  bool array = false;
};

Field read_field(const json& d, const char* key, const std::string& file, const std::string& at) {
  const auto it = d.find(key);
  if (it == d.end()) throw Error("invalid_distribution", file, at, std::string("the distribution has no '") + key + "'");
  const std::string where = pointer_join(at, key);
  Field f;
  if (it->is_number()) {
    f.values.push_back(it->get<double>());
  } else if (it->is_array() && !it->empty()) {
    f.array = true;
    for (const json& x : *it) {
      if (!x.is_number())
        throw Error("invalid_distribution", file, where, std::string("'") + key + "' must hold numbers only");
      f.values.push_back(x.get<double>());
    }
  } else {
    throw Error("invalid_distribution", file, where,
                std::string("'") + key + "' must be a number or a non-empty array of numbers (one per component)");
  }
  for (double x : f.values)
    if (!std::isfinite(x)) throw Error("invalid_distribution", file, where, std::string("'") + key + "' must be finite");
  return f;
}

}  // namespace

std::vector<double> covariance_factor(const json& cov, std::size_t order, const std::string& file,
                                      const std::string& pointer) {
  auto invalid = [&](const std::string& where, const std::string& why) -> Error {
    return Error("distribution_covariance_invalid", file, where, "the covariance matrix " + why);
  };
  const std::string k_text = count_text(order);
  if (!cov.is_array() || cov.size() != order)
    throw invalid(pointer, "must be a " + k_text + " x " + k_text + " array of rows (one per component of the " +
                               k_text + "-component distribution); it has " +
                               (cov.is_array() ? count_text(cov.size()) + " rows" : std::string("no rows")));
  std::vector<double> c(order * order);
  for (std::size_t i = 0; i < order; ++i) {
    const std::string row = pointer_join(pointer, std::to_string(i));
    if (!cov[i].is_array() || cov[i].size() != order)
      throw invalid(row, "must be square: row " + count_text(i + 1) + " must have " + k_text + " entries");
    for (std::size_t j = 0; j < order; ++j) {
      if (!cov[i][j].is_number() || !std::isfinite(cov[i][j].get<double>()))
        throw invalid(pointer_join(row, std::to_string(j)), "must hold finite numbers only");
      c[i * order + j] = cov[i][j].get<double>();
    }
  }
  double largest_variance = 0;
  for (std::size_t i = 0; i < order; ++i) {
    const double v = c[i * order + i];
    if (v < 0)
      throw invalid(pointer_join(pointer_join(pointer, std::to_string(i)), std::to_string(i)),
                    "has a negative variance on its diagonal (entry [" + count_text(i + 1) + "][" + count_text(i + 1) +
                        "]); a variance cannot be negative");
    largest_variance = std::max(largest_variance, v);
    for (std::size_t j = 0; j < i; ++j) {
      const double a = c[i * order + j], b = c[j * order + i];
      if (std::abs(a - b) > kCovarianceSymmetryTolerance * std::max(std::abs(a), std::abs(b)))
        throw invalid(pointer_join(pointer_join(pointer, std::to_string(i)), std::to_string(j)),
                      "is not symmetric: entry [" + count_text(i + 1) + "][" + count_text(j + 1) + "] differs from [" +
                          count_text(j + 1) + "][" + count_text(i + 1) + "] (cov(a, b) and cov(b, a) are one number)");
    }
  }
  // Cholesky from the lower triangle; a (numerically) zero pivot is accepted when the rest of
  // its column vanishes with it: that is a semidefinite matrix, e.g. perfectly correlated
  // components, and the component is then a combination of the ones before it.
  const double tolerance = 1e-10 * largest_variance * static_cast<double>(order);
  std::vector<double> L(order * order, 0.0);
  for (std::size_t j = 0; j < order; ++j) {
    double d = c[j * order + j];
    for (std::size_t p = 0; p < j; ++p) d -= L[j * order + p] * L[j * order + p];
    const bool zero_pivot = d <= tolerance;
    if (zero_pivot && d < -tolerance)
      throw invalid(pointer, "is not positive semidefinite (no random vector has it: typically a correlation "
                             "above 1 in absolute value, here involving component " + count_text(j + 1) +
                             " and the ones before it)");
    L[j * order + j] = zero_pivot ? 0.0 : std::sqrt(d);
    for (std::size_t i = j + 1; i < order; ++i) {
      double r = c[i * order + j];
      for (std::size_t p = 0; p < j; ++p) r -= L[i * order + p] * L[j * order + p];
      if (!zero_pivot) {
        L[i * order + j] = r / L[j * order + j];
      } else if (std::abs(r) > tolerance) {
        throw invalid(pointer, "is not positive semidefinite (no random vector has it: components " +
                                   count_text(j + 1) + " and " + count_text(i + 1) +
                                   " are correlated beyond what their variances allow)");
      }
    }
  }
  return L;
}

namespace {

/// read_distribution without factoring `cov` (left in *cov): callers check the component
/// count against the parameter's shape first, so a huge matrix of the wrong order is refused
/// before an O(K^3) factorization.
DistributionSpec read_fields(const json& declaration, const std::string& file, const std::string& pointer,
                             const json** cov) {
  DistributionSpec out;
  out.pointer = pointer_join(pointer, "distribution");
  const std::string& at = out.pointer;
  const auto it = declaration.find("distribution");
  if (it == declaration.end() || !it->is_object())
    throw Error("invalid_distribution", file, at, "the distribution must be an object with a 'kind'");
  const json& d = *it;
  const std::string kind = d.contains("kind") && d["kind"].is_string() ? d["kind"].get<std::string>() : std::string();
  const char *location_key = nullptr, *spread_key = nullptr;
  if (kind == "normal") {
    out.kind = DistributionSpec::Kind::Normal;
    location_key = "mean";
    spread_key = "std";
  } else if (kind == "lognormal") {
    out.kind = DistributionSpec::Kind::LogNormal;
    location_key = "mu";
    spread_key = "sigma";
  } else if (kind == "uniform") {
    out.kind = DistributionSpec::Kind::Uniform;
    location_key = "low";
    spread_key = "high";
  } else {
    throw Error("unknown_distribution", file, pointer_join(at, "kind"),
                "unknown distribution kind '" + kind + "'; the closed set is normal, lognormal and uniform");
  }
  const bool has_cov = d.contains("cov");
  if (has_cov && out.kind == DistributionSpec::Kind::Uniform)
    throw Error("invalid_distribution", file, pointer_join(at, "cov"),
                "a uniform distribution has independent components and no covariance matrix");
  if (has_cov && d.contains(spread_key))
    throw Error("invalid_distribution", file, at,
                std::string("give either '") + spread_key + "' (independent components) or 'cov', not both");

  const Field location = read_field(d, location_key, file, at);
  Field spread;
  if (!has_cov) spread = read_field(d, spread_key, file, at);
  // The component count: the common length of the array fields (numbers apply to every component).
  out.multivariate = location.array || spread.array || has_cov;
  std::size_t n = 0;
  for (const Field* f : {&location, static_cast<const Field*>(&spread)})
    if (f->array) {
      if (n != 0 && f->values.size() != n)
        throw Error("invalid_distribution", file, pointer_join(at, f == &location ? location_key : spread_key),
                    std::string("'") + location_key + "' and '" + spread_key + "' have different lengths (" +
                        count_text(n) + " and " + count_text(f->values.size()) + ")");
      n = f->values.size();
    }
  if (has_cov && n == 0) n = d["cov"].is_array() ? d["cov"].size() : 0;
  out.components = std::max<std::size_t>(n, 1);
  out.location.assign(out.components, location.values[0]);
  if (location.array) out.location = location.values;
  if (!has_cov) {
    out.spread.assign(out.components, spread.values[0]);
    if (spread.array) out.spread = spread.values;
    for (std::size_t c = 0; c < out.components; ++c) {
      if (out.kind == DistributionSpec::Kind::Uniform ? !(out.location[c] < out.spread[c]) : !(out.spread[c] > 0))
        throw Error("invalid_distribution", file, pointer_join(at, spread_key),
                    out.kind == DistributionSpec::Kind::Uniform
                        ? std::string("'low' must be below 'high'") +
                              (out.multivariate ? " (component " + count_text(c + 1) + ")" : "")
                        : std::string("'") + spread_key + "' must be positive" +
                              (out.multivariate ? " (component " + count_text(c + 1) + ")" : ""));
    }
  } else {
    *cov = &d["cov"];
  }
  return out;
}

}  // namespace

DistributionSpec read_distribution(const json& declaration, const std::string& file, const std::string& pointer) {
  const json* cov = nullptr;
  DistributionSpec out = read_fields(declaration, file, pointer, &cov);
  if (cov != nullptr) out.factor = covariance_factor(*cov, out.components, file, pointer_join(out.pointer, "cov"));
  return out;
}

DistributionSpec parameter_distribution(const System& system, std::size_t parameter, const json& document) {
  const FlatVariable& v = system.parameters[parameter];
  const json* decl = json_at(document, v.pointer);
  if (decl == nullptr || !decl->is_object() || !decl->contains("distribution")) {
    DistributionSpec standard;  // a Wiener parameter without a distribution: standard white noise
    standard.location = {0.0};
    standard.spread = {1.0};
    return standard;
  }
  const json* cov = nullptr;
  DistributionSpec spec = read_fields(*decl, v.file, v.pointer, &cov);
  if (!spec.multivariate) return spec;
  const System::Array* array = nullptr;
  for (const System::Array& a : system.arrays)
    if (a.name == v.array) array = &a;
  const std::string name = v.array.empty() ? v.name : v.array;
  if (array == nullptr && spec.components == 1) {  // a scalar with a 1 x 1 `cov` or 1-entry arrays
    spec.multivariate = false;
    if (cov != nullptr) spec.factor = covariance_factor(*cov, 1, v.file, pointer_join(spec.pointer, "cov"));
    return spec;
  }
  if (array == nullptr)
    throw Error("invalid_distribution", v.file, spec.pointer,
                "'" + name + "' is a scalar but its distribution has " + count_text(spec.components) +
                    " components; give it a shape over an index set of that size, or numbers instead of arrays");
  if (array->extents.size() != 1)
    throw Error("unsupported_distribution", v.file, spec.pointer,
                "a multivariate distribution of a parameter with " + count_text(array->extents.size()) +
                    " axes is not supported (the order of its components is not defined); use one axis");
  const auto extent = static_cast<std::size_t>(array->extents[0]);
  if (extent != spec.components)
    throw Error(cov != nullptr ? "distribution_covariance_invalid" : "invalid_distribution", v.file,
                cov != nullptr ? pointer_join(spec.pointer, "cov") : spec.pointer,
                "'" + name + "' has " + count_text(extent) + " cells (shape [" + array->axes[0] +
                    "]) but its distribution has " + count_text(spec.components) + " components");
  if (cov != nullptr) spec.factor = covariance_factor(*cov, spec.components, v.file, pointer_join(spec.pointer, "cov"));
  return spec;
}

void check_distributions(const System& system, const json& document) {
  std::set<std::string> seen;  // one check per declaration, not per cell
  for (std::size_t i = 0; i < system.parameters.size(); ++i) {
    const FlatVariable& v = system.parameters[i];
    const bool drawn = v.cadence == Cadence::Brownian || (v.cadence == Cadence::Sampled && !v.default_value);
    if (drawn && seen.insert(v.file + "#" + v.pointer).second) parameter_distribution(system, i, document);
  }
}

}  // namespace esi::esm
