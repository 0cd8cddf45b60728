// The method catalogue: names, orders and properties (OrdinaryDiffEq's alg_order and
// alg_adaptive_order; SSP coefficients from lib/OrdinaryDiffEqSSPRK/src/alg_utils.jl).
#include <array>

#include "esi/core/error.hpp"
#include "esi/method/integrator.hpp"
#include "method/tableau.hpp"

namespace esi::method {
namespace {

constexpr std::array<MethodInfo, 24> kMethods{{
    {MethodId::Euler, "Euler", 1, 0, false, 1.0},
    {MethodId::Heun, "Heun", 2, 1, false, 1.0},
    {MethodId::RK4, "RK4", 4, 0, false, 0.0},
    {MethodId::SSPRK33, "SSPRK33", 3, 0, false, 1.0},
    {MethodId::SSPRK43, "SSPRK43", 3, 2, false, 2.0},
    {MethodId::SSPRK104, "SSPRK104", 4, 0, false, 6.0},
    {MethodId::BS3, "BS3", 3, 2, false, 0.0},
    {MethodId::Tsit5, "Tsit5", 5, 4, false, 0.0},
    {MethodId::DP5, "DP5", 5, 4, false, 0.0},
    {MethodId::Rosenbrock23, "Rosenbrock23", 2, 3, true, 0.0},
    {MethodId::Rosenbrock32, "Rosenbrock32", 3, 2, true, 0.0},
    {MethodId::ROS3P, "ROS3P", 3, 2, true, 0.0},
    {MethodId::Rodas3, "Rodas3", 3, 2, true, 0.0},
    {MethodId::Rodas4, "Rodas4", 4, 3, true, 0.0},
    {MethodId::Rodas5P, "Rodas5P", 5, 4, true, 0.0},
    {MethodId::ROS34PW2, "ROS34PW2", 3, 2, true, 0.0},
    {MethodId::ImplicitEuler, "ImplicitEuler", 1, 1, true, 0.0},
    {MethodId::Trapezoid, "Trapezoid", 2, 1, true, 0.0},
    {MethodId::TRBDF2, "TRBDF2", 2, 3, true, 0.0},
    {MethodId::Kvaerno3, "Kvaerno3", 3, 2, true, 0.0},
    {MethodId::IMEXEuler, "IMEXEuler", 1, 0, true, 0.0},
    {MethodId::KenCarp3, "KenCarp3", 3, 2, true, 0.0},
    {MethodId::KenCarp4, "KenCarp4", 4, 3, true, 0.0},
    // Sundials.jl's name; BDF orders 1 to 5, the local error estimated at the current order.
    {MethodId::CVODE_BDF, "CVODE_BDF", 5, 5, true, 0.0},
}};

#if ESI_HAVE_SUNDIALS
constexpr bool kHaveSundials = true;
#else
constexpr bool kHaveSundials = false;
#endif

// Every method but those this build lacks.
constexpr std::size_t kIdCount = kMethods.size() - (kHaveSundials ? 0 : 1);
constexpr std::array<MethodId, kIdCount> kIds = [] {
  std::array<MethodId, kIdCount> ids{};
  std::size_t k = 0;
  for (const MethodInfo& m : kMethods)
    if (m.id != MethodId::CVODE_BDF || kHaveSundials) ids[k++] = m.id;
  return ids;
}();

}  // namespace

const MethodInfo& method_info(MethodId id) {
  const auto index = static_cast<std::size_t>(id);
  ESI_ASSERT(index < kMethods.size() && "method_info(Auto): resolve the method first");
  return kMethods[index];
}

std::string_view method_label(MethodId id) {
  return id == MethodId::Auto ? std::string_view("auto") : method_info(id).name;
}

std::optional<MethodId> method_from_name(std::string_view name) {
  for (const MethodInfo& m : kMethods)
    if (m.name == name) return m.id;
  return std::nullopt;
}

std::span<const MethodId> all_methods() { return kIds; }

bool method_available(MethodId id) { return id != MethodId::CVODE_BDF || kHaveSundials; }

bool is_rosenbrock(MethodId id) {
  return id != MethodId::Auto && detail::family_of(id) == detail::Family::Rosenbrock;
}

bool is_imex(MethodId id) {
  return id != MethodId::Auto && detail::family_of(id) == detail::Family::Imex;
}

std::string_view return_code_name(ReturnCode code) {
  switch (code) {
    case ReturnCode::Success: return "Success";
    case ReturnCode::DtBelowMin: return "DtBelowMin";
    case ReturnCode::MaxSteps: return "MaxSteps";
    case ReturnCode::NonFinite: return "NonFinite";
    case ReturnCode::LinearSolveFailed: return "LinearSolveFailed";
    case ReturnCode::InvalidOptions: return "InvalidOptions";
    case ReturnCode::Interrupted: return "Interrupted";
  }
  return "Unknown";
}

namespace detail {

Family family_of(MethodId id) {
  if (id <= MethodId::DP5) return Family::Explicit;
  if (id <= MethodId::ROS34PW2) return Family::Rosenbrock;
  if (id <= MethodId::Kvaerno3) return Family::Sdirk;
  if (id <= MethodId::KenCarp4) return Family::Imex;
  return Family::Sundials;
}

}  // namespace detail
}  // namespace esi::method
