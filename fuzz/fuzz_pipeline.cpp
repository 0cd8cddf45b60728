// libFuzzer target for the whole pipeline behind `esi simulate`: load_checked (parse, schema,
// resolve, structure, units) -> flatten -> compile -> a few integrator steps.
//
// Contract under test: any bytes end in findings, an esi::Error, or a Trajectory whose return
// code says how the solve ended; never a crash, a sanitizer report, a hang or another exception
// type (those escape and libFuzzer reports them). The run is bounded (t in [0, 1], at most 200
// attempted steps, the automatic method), so a stiff or exploding input ends by return code.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/exec/simulate.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = esi::fuzz::scratch_path("pipeline");
  esi::fuzz::write_input(path, data, size);

  esi::esm::CheckedDocument checked = esi::esm::load_checked(path);
  if (!checked.doc || checked.doc->library_only) return 0;
  try {
    const esi::esm::System system = esi::esm::flatten(*checked.doc);
    esi::exec::SimulateOptions options;
    options.t0 = 0;
    options.t1 = 1;
    options.saveat = 0.25;
    options.document = &*checked.doc;
    options.integrator.max_steps = 200;
    const esi::exec::Trajectory traj = esi::exec::simulate(system, options);
    if (traj.times.empty() && traj.ok()) std::abort();  // success must report t0 at least
  } catch (const esi::Error&) {
    // A located refusal is the contract for input the engine cannot run.
  }
  return 0;
}
