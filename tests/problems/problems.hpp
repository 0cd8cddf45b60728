// The five stiff problems of the Test Set for IVP Solvers (Mazzia, Magherini et al., Bari,
// release 2.4) that tests/problems/*.esm encode: their published data (reference.json) and an
// independent hand-coded right-hand side of each, transcribed from the test set's Fortran
// `feval` (the URLs are in reference.json). Shared by the problem tests and bench/bench_stiff.cpp.
//
// The hand-coded right-hand sides are templates so one transcription serves three number types:
// double (the value), std::complex<double> (complex-step derivatives: an independent Jacobian
// exact to rounding) and Magnitude (the sum of the absolute values of every term, which bounds
// the rounding error of any evaluation order and so sets a fair tolerance where terms cancel).
// Component order is the test set's y1..yn throughout.
#pragma once

#include <cmath>
#include <complex>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace esi::problems {

/// One problem's published data, as in reference.json.
struct Reference {
  std::string key;                  ///< "rober", "hires", "pollu", "orego", "e5"
  std::filesystem::path file;       ///< the .esm document
  std::vector<std::string> states;  ///< flattened names in the test set's order y1..yn
  double t0 = 0, t_end = 0;
  std::vector<double> y0, reference;  ///< initial value and reference solution at t_end
};

/// Every problem in reference.json (in `dir`, the tests/problems folder), keyed by its key.
inline std::map<std::string, Reference> load_references(const std::filesystem::path& dir) {
  std::ifstream in(dir / "reference.json");
  if (!in) throw std::runtime_error("cannot read " + (dir / "reference.json").string());
  const nlohmann::json j = nlohmann::json::parse(in);
  std::map<std::string, Reference> out;
  for (const auto& [key, p] : j.at("problems").items()) {
    Reference r;
    r.key = key;
    r.file = dir / p.at("file").get<std::string>();
    r.states = p.at("states").get<std::vector<std::string>>();
    r.t0 = p.at("t0").get<double>();
    r.t_end = p.at("t_end").get<double>();
    r.y0 = p.at("y0").get<std::vector<double>>();
    r.reference = p.at("reference").get<std::vector<double>>();
    out.emplace(key, std::move(r));
  }
  return out;
}

/// Sum-of-magnitudes arithmetic: every operation combines absolute values, so evaluating a
/// right-hand side in it gives sum |term| per component, the scale its rounding error lives on.
struct Magnitude {
  double v = 0;
  Magnitude(double x = 0) : v(std::fabs(x)) {}  // NOLINT: literals convert implicitly
  friend Magnitude operator+(Magnitude a, Magnitude b) { return Magnitude(a.v + b.v); }
  friend Magnitude operator-(Magnitude a, Magnitude b) { return Magnitude(a.v + b.v); }
  friend Magnitude operator*(Magnitude a, Magnitude b) { return Magnitude(a.v * b.v); }
  friend Magnitude operator/(Magnitude a, Magnitude b) { return Magnitude(a.v / b.v); }
  friend Magnitude operator-(Magnitude a) { return a; }
};

// ---- hand-coded right-hand sides, transcribed from the test set's Fortran feval ------------

/// rober.f: f(1) = -0.04 y1 + 1e4 y2 y3, f(2) = 0.04 y1 - 1e4 y2 y3 - 3e7 y2^2, f(3) = 3e7 y2^2.
template <class T>
void rober_rhs(const T* y, T* f) {
  f[0] = -T(0.04) * y[0] + T(1.0e4) * y[1] * y[2];
  f[1] = T(0.04) * y[0] - T(1.0e4) * y[1] * y[2] - T(3.0e7) * (y[1] * y[1]);
  f[2] = T(3.0e7) * (y[1] * y[1]);
}

/// hires.f, with its literal coefficients.
template <class T>
void hires_rhs(const T* y, T* f) {
  f[0] = -T(1.71) * y[0] + T(0.43) * y[1] + T(8.32) * y[2] + T(0.0007);
  f[1] = T(1.71) * y[0] - T(8.75) * y[1];
  f[2] = -T(10.03) * y[2] + T(0.43) * y[3] + T(0.035) * y[4];
  f[3] = T(8.32) * y[1] + T(1.71) * y[2] - T(1.12) * y[3];
  f[4] = -T(1.745) * y[4] + T(0.43) * (y[5] + y[6]);
  f[5] = -T(280.0) * y[5] * y[7] + T(0.69) * y[3] + T(1.71) * y[4] - T(0.43) * y[5] +
         T(0.69) * y[6];
  f[6] = T(280.0) * y[5] * y[7] - T(1.81) * y[6];
  f[7] = -f[6];
}

/// pollu.f: 25 rates r(1..25), then f(1..20) as sums of them.
template <class T>
void pollu_rhs(const T* y, T* f) {
  static const double k[25] = {.35,    .266e2, .123e5, .86e-3, .82e-3, .15e5,  .13e-3,
                               .24e5,  .165e5, .9e4,   .22e-1, .12e5,  .188e1, .163e5,
                               .48e7,  .35e-3, .175e-1, .1e9,  .444e12, .124e4, .21e1,
                               .578e1, .474e-1, .178e4, .312e1};
  auto K = [](int i) { return T(k[i - 1]); };
  auto Y = [y](int i) { return y[i - 1]; };
  T r[26];
  r[1] = K(1) * Y(1);
  r[2] = K(2) * Y(2) * Y(4);
  r[3] = K(3) * Y(5) * Y(2);
  r[4] = K(4) * Y(7);
  r[5] = K(5) * Y(7);
  r[6] = K(6) * Y(7) * Y(6);
  r[7] = K(7) * Y(9);
  r[8] = K(8) * Y(9) * Y(6);
  r[9] = K(9) * Y(11) * Y(2);
  r[10] = K(10) * Y(11) * Y(1);
  r[11] = K(11) * Y(13);
  r[12] = K(12) * Y(10) * Y(2);
  r[13] = K(13) * Y(14);
  r[14] = K(14) * Y(1) * Y(6);
  r[15] = K(15) * Y(3);
  r[16] = K(16) * Y(4);
  r[17] = K(17) * Y(4);
  r[18] = K(18) * Y(16);
  r[19] = K(19) * Y(16);
  r[20] = K(20) * Y(17) * Y(6);
  r[21] = K(21) * Y(19);
  r[22] = K(22) * Y(19);
  r[23] = K(23) * Y(1) * Y(4);
  r[24] = K(24) * Y(19) * Y(1);
  r[25] = K(25) * Y(20);
  f[0] = -r[1] - r[10] - r[14] - r[23] - r[24] + r[2] + r[3] + r[9] + r[11] + r[12] + r[22] + r[25];
  f[1] = -r[2] - r[3] - r[9] - r[12] + r[1] + r[21];
  f[2] = -r[15] + r[1] + r[17] + r[19] + r[22];
  f[3] = -r[2] - r[16] - r[17] - r[23] + r[15];
  f[4] = -r[3] + r[4] + r[4] + r[6] + r[7] + r[13] + r[20];
  f[5] = -r[6] - r[8] - r[14] - r[20] + r[3] + r[18] + r[18];
  f[6] = -r[4] - r[5] - r[6] + r[13];
  f[7] = r[4] + r[5] + r[6] + r[7];
  f[8] = -r[7] - r[8];
  f[9] = -r[12] + r[7] + r[9];
  f[10] = -r[9] - r[10] + r[8] + r[11];
  f[11] = r[9];
  f[12] = -r[11] + r[10];
  f[13] = -r[13] + r[12];
  f[14] = r[14];
  f[15] = -r[18] - r[19] + r[16];
  f[16] = -r[20];
  f[17] = r[20];
  f[18] = -r[21] - r[22] - r[24] + r[23] + r[25];
  f[19] = -r[25] + r[24];
}

/// orego.f: f(1) = 77.27 (y2 + y1 (1 - 8.375e-6 y1 - y2)), f(2) = (y3 - (1 + y1) y2) / 77.27,
/// f(3) = 0.161 (y1 - y3).
template <class T>
void orego_rhs(const T* y, T* f) {
  f[0] = T(77.27) * (y[1] + y[0] * (T(1.0) - T(8.375e-6) * y[0] - y[1]));
  f[1] = (y[2] - (T(1.0) + y[0]) * y[1]) / T(77.27);
  f[2] = T(0.161) * (y[0] - y[2]);
}

/// e5.f: prod1 = 7.89e-10 y1, prod2 = 1.1e7 y1 y3, prod3 = 1.13e9 y2 y3, prod4 = 1.13e3 y4;
/// f(1) = -prod1 - prod2, f(2) = prod1 - prod3, f(4) = prod2 - prod4, f(3) = f(2) - f(4).
template <class T>
void e5_rhs(const T* y, T* f) {
  const T prod1 = T(7.89e-10) * y[0];
  const T prod2 = T(1.1e7) * y[0] * y[2];
  const T prod3 = T(1.13e9) * y[1] * y[2];
  const T prod4 = T(1.13e3) * y[3];
  f[0] = -prod1 - prod2;
  f[1] = prod1 - prod3;
  f[3] = prod2 - prod4;
  f[2] = f[1] - f[3];
}

/// The hand-coded right-hand side of `key` for number type T; nullptr for an unknown key.
template <class T>
using HandRhs = void (*)(const T* y, T* f);

template <class T>
HandRhs<T> hand_rhs(const std::string& key) {
  if (key == "rober") return &rober_rhs<T>;
  if (key == "hires") return &hires_rhs<T>;
  if (key == "pollu") return &pollu_rhs<T>;
  if (key == "orego") return &orego_rhs<T>;
  if (key == "e5") return &e5_rhs<T>;
  return nullptr;
}

}  // namespace esi::problems
