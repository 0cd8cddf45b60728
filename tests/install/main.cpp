// Uses an installed esi the way a downstream program would: esm::load_checked, esm::flatten,
// exec::simulate. Exits 0 when x(2) of x' = -k x (x0 = 2, k = 0.5) matches 2 e^-1, 1 otherwise.
#include <cmath>
#include <cstdio>
#include <string>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/simulate.hpp"
#include "esi/method/integrator.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: downstream FILE.esm\n");
    return 2;
  }
  const esi::esm::CheckedDocument checked = esi::esm::load_checked(argv[1]);
  if (!checked.report.valid()) {
    for (const auto& e : checked.report.errors) std::fprintf(stderr, "%s\n", e.code.c_str());
    return 1;
  }
  const esi::esm::System system = esi::esm::flatten(*checked.doc);
  esi::exec::SimulateOptions options;
  options.t1 = 2;
  options.document = &*checked.doc;
  options.integrator.rtol = 1e-10;
  options.integrator.atol = 1e-12;
  // The package says whether this build has SUNDIALS; then run CVODE_BDF through it.
  if (ESI_DOWNSTREAM_HAVE_SUNDIALS) options.integrator.method = esi::method::MethodId::CVODE_BDF;
  const esi::exec::Trajectory run = esi::exec::simulate(system, options);
  if (!run.ok() || run.times.empty()) {
    std::fprintf(stderr, "simulate failed: %s\n", run.message.c_str());
    return 1;
  }
  const double x = run.at(run.times.size() - 1, 0), exact = 2 * std::exp(-1.0);
  std::printf("%s x(2) = %.12g (exact %.12g)\n",
              std::string(esi::method::method_info(run.method).name).c_str(), x, exact);
  return std::abs(x - exact) < 1e-8 ? 0 : 1;
}
