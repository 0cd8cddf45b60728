// The zonal-only variant of reseact's transport_3d document that bench/bench_grid.cpp (BM_PpmLon)
// and tests/kernel/test_ppm_handwritten.cpp run: one tracer state q (with an initial value rough
// enough that every limiter branch is taken) whose tendency is only the zonal PPM term
// -D(Mx*q, qbc_w, qbc_e, wrt: lon); the observeds that term reads (Mx, phie, dphi_lat, dS_lat,
// dlon_deg, qbc_w/e) are kept as the document defines them. The probe variant adds states whose
// initial values are those observeds (Mx at each cell's west and east face, the template's
// metric factor dphi_lat[j] / (dlam dS_lat[j])), so a hand-written loop can read exactly the
// values the region program reads.
#pragma once

#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/esm/system.hpp"
#include "ppm_lon_handwritten.hpp"

namespace esi::ppm {

namespace detail {

inline nlohmann::json op(const char* name, nlohmann::json args) { return {{"op", name}, {"args", std::move(args)}}; }

inline nlohmann::json aggregate3(nlohmann::json args, nlohmann::json expr) {
  return {{"op", "aggregate"},
          {"output_idx", {"i", "j", "k"}},
          {"ranges", {{"i", {{"from", "lon"}}}, {"j", {{"from", "lat"}}}, {"k", {{"from", "lev"}}}}},
          {"args", std::move(args)},
          {"expr", std::move(expr)}};
}

}  // namespace detail

/// Rewrites transport_3d.esm (already rebound to its grid) into the zonal-only document.
/// The lateral halo data qbc_* are written with one index per axis of their shape: the
/// document's ["gl", "gl"] over lev ties NLAT (and NLON for qbc_s/n) to NLEV.
inline void make_zonal_only(nlohmann::json& doc, bool probe) {
  using detail::aggregate3;
  using detail::op;
  auto& model = doc["models"]["Transport3D"];
  for (const char* v : {"m", "mq", "dev"}) model["variables"].erase(v);
  model.erase("tests");
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& eq : model["equations"]) {
    const auto& lhs = eq["lhs"];
    if (lhs.is_object()) continue;  // ic(...) and D(...) of m, mq, dev
    if (lhs == "q") continue;       // q = mq / m
    if (lhs == "qbc_w" || lhs == "qbc_e" || lhs == "qbc_s" || lhs == "qbc_n") {
      const auto& shape = model["variables"][lhs.get<std::string>()]["shape"];
      nlohmann::json e = eq;
      e["rhs"] = {{"op", "aggregate"},
                  {"output_idx", {"ga", "gb"}},
                  {"ranges", {{"ga", {{"from", shape.at(0)}}}, {"gb", {{"from", shape.at(1)}}}}},
                  {"args", nlohmann::json::array()},
                  {"expr", 1.0}};
      kept.push_back(e);
      continue;
    }
    kept.push_back(eq);
  }
  // q0 = 1 + 0.4 sin(1.3 i + 0.7 j + 0.3 k)
  const nlohmann::json q0 = op(
      "+", {1.0, op("*", {0.4, op("sin", {op("+", {op("*", {1.3, "i"}), op("*", {0.7, "j"}), op("*", {0.3, "k"})})})})});
  kept.push_back({{"lhs", op("ic", {"q"})}, {"rhs", aggregate3(nlohmann::json::array(), q0)}});
  kept.push_back(
      {{"lhs", {{"op", "D"}, {"args", {"q"}}, {"wrt", "t"}}},
       {"rhs", op("-", {{{"op", "D"}, {"args", {op("*", {"Mx", "q"}), "qbc_w", "qbc_e"}}, {"wrt", "lon"}}})}});
  if (probe) {
    const nlohmann::json metric =
        op("/", {op("index", {"dphi_lat", "j"}),
                 op("*", {op("*", {"dlon_deg", op("/", {3.141592653589793, 180})}), op("index", {"dS_lat", "j"})})});
    const std::map<std::string, nlohmann::json> probes{
        {"probe_mx_w", aggregate3({"Mx"}, op("index", {"Mx", "i", "j", "k"}))},
        {"probe_mx_e", aggregate3({"Mx"}, op("index", {"Mx", op("+", {"i", 1}), "j", "k"}))},
        {"probe_metric", aggregate3({"dphi_lat", "dS_lat"}, metric)}};
    for (const auto& [name, init] : probes) {
      model["variables"][name] = {{"type", "unknown"}, {"units", "1"}, {"shape", {"lon", "lat", "lev"}}};
      kept.push_back({{"lhs", op("ic", {name})}, {"rhs", init}});
      kept.push_back({{"lhs", {{"op", "D"}, {"args", {name}}, {"wrt", "t"}}},
                      {"rhs", aggregate3(nlohmann::json::array(), 0.0)}});
    }
  }
  model["equations"] = kept;
}

/// The hand loop's inputs from the probe document's initial state `y` (System::states order).
inline LonGrid lon_grid_from_probe(const esm::System& probe, std::span<const double> y, int nlon, int nlat,
                                   int nlev, double dlon_deg) {
  const std::size_t cells = static_cast<std::size_t>(nlon) * nlat * nlev;
  auto array = [&](const std::string& name) {
    for (const auto& a : probe.arrays)
      if (a.name == "Transport3D." + name && a.first_state >= 0)
        return std::vector<double>(y.begin() + a.first_state, y.begin() + a.first_state + static_cast<std::ptrdiff_t>(cells));
    throw std::runtime_error("the probe document has no state array " + name);
  };
  LonGrid g;
  g.nlon = nlon, g.nlat = nlat, g.nlev = nlev;
  g.dlon_deg = dlon_deg;
  g.q = array("q");
  const std::vector<double> west = array("probe_mx_w"), east = array("probe_mx_e"), metric = array("probe_metric");
  // Mx on lon_nodes x lat x lev: the west face of every cell, then the east face of the last.
  g.mx.assign(static_cast<std::size_t>(nlon + 1) * nlat * nlev, 0.0);
  for (int k = 0; k < nlev; ++k)
    for (int j = 0; j < nlat; ++j) {
      const std::size_t cell = static_cast<std::size_t>(nlon) * (static_cast<std::size_t>(j) + std::size_t(nlat) * k);
      const std::size_t node = static_cast<std::size_t>(nlon + 1) * (static_cast<std::size_t>(j) + std::size_t(nlat) * k);
      for (int i = 0; i < nlon; ++i) g.mx[node + i] = west[cell + i];
      g.mx[node + nlon] = east[cell + nlon - 1];
    }
  g.metric.resize(static_cast<std::size_t>(nlat));
  for (int j = 0; j < nlat; ++j) g.metric[j] = metric[static_cast<std::size_t>(nlon) * j];
  return g;
}

}  // namespace esi::ppm
