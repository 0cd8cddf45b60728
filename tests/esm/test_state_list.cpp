// StateList: a System's states with per-region state arrays kept as lazy runs. The oracle is
// the list as flatten used to build it: one stored entry per cell, named by cell_name.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "esi/esm/flatten.hpp"
#include "esi/esm/load.hpp"
#include "esi/esm/system.hpp"
#include "support/temp_dir.hpp"

namespace {

using esi::esm::FlatVariable;
using esi::esm::StateList;

FlatVariable scalar(const std::string& name, double value) {
  FlatVariable v;
  v.name = name;
  v.units = "mol/mol";
  v.default_value = value;
  v.file = "f.esm";
  v.pointer = "/models/C/variables/" + name;
  return v;
}

/// The same states both ways: `lazy` with two lazy runs between stored entries, `stored`
/// with one entry per cell.
struct Lists {
  StateList lazy;
  std::vector<FlatVariable> stored;
};

Lists mixed() {
  Lists l;
  auto add_scalar = [&](const std::string& name, double value) {
    l.lazy.push_back(scalar(name, value));
    l.stored.push_back(scalar(name, value));
  };
  auto add_array = [&](const std::string& name, std::vector<std::int64_t> extents) {
    FlatVariable cell = scalar("", 0.5);
    l.lazy.append_cells(cell, name, extents);
    std::vector<std::int64_t> at(extents.size(), 1);
    std::size_t n = 1;
    for (auto e : extents) n *= static_cast<std::size_t>(e);
    for (std::size_t k = 0; k < n; ++k) {
      FlatVariable v = cell;
      v.name = esi::esm::cell_name(name, at);
      v.array = name;
      v.cell = at;
      l.stored.push_back(v);
      for (std::size_t ax = 0; ax < at.size() && ++at[ax] > extents[ax]; ++ax) at[ax] = 1;
    }
  };
  add_scalar("C.a", 1);
  add_array("C.x", {3, 2, 4});
  add_scalar("C.b", 2);
  add_scalar("C.c", 3);
  add_array("C.y", {12});
  add_scalar("C.d", 4);
  return l;
}

void expect_same(const FlatVariable& a, const FlatVariable& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.array, b.array);
  EXPECT_EQ(a.cell, b.cell);
  EXPECT_EQ(a.units, b.units);
  EXPECT_EQ(a.default_value, b.default_value);
  EXPECT_EQ(a.pointer, b.pointer);
}

TEST(StateList, ReadsLikeOneEntryPerCell) {
  const Lists l = mixed();
  ASSERT_EQ(l.lazy.size(), l.stored.size());
  ASSERT_EQ(l.lazy.size(), 4u + 24u + 12u);
  // Found by name before any entry is made: cells by position, the rest by a scan.
  for (std::size_t i = 0; i < l.stored.size(); ++i)
    EXPECT_EQ(l.lazy.find(l.stored[i].name), static_cast<std::int64_t>(i)) << l.stored[i].name;
  EXPECT_EQ(l.lazy.materialized_runs(), 0u);
  for (std::size_t i = 0; i < l.stored.size(); ++i) expect_same(l.lazy[i], l.stored[i]);
  EXPECT_EQ(l.lazy.materialized_runs(), 2u);
  std::size_t i = 0;
  for (const FlatVariable& v : l.lazy) expect_same(v, l.stored[i++]);
  EXPECT_EQ(i, l.stored.size());
  expect_same(l.lazy.back(), l.stored.back());
  EXPECT_THROW((void)l.lazy.at(l.stored.size()), std::out_of_range);
}

TEST(StateList, NamesThatAreNotACellsNameAreNotFound) {
  const Lists l = mixed();
  for (const char* name :
       {"C.x[01,1,1]", "C.x[4,1,1]", "C.x[0,1,1]", "C.x[1,1]", "C.x[1,1,1,1]", "C.x[1, 1,1]",
        "C.x[+1,1,1]", "C.x[1,1,1", "C.x", "C.z[1]", "C.y[13]", "C.y[-1]", "x[1,1,1]", "C.e", ""})
    EXPECT_EQ(l.lazy.find(name), -1) << name;
  EXPECT_EQ(l.lazy.materialized_runs(), 0u);
}

TEST(StateList, WritingACellStoresItsRunAndKeepsEveryIndex) {
  Lists l = mixed();
  const StateList before = l.lazy;  // a copy shares the runs, not the writes
  const std::size_t cell = 1 + 5;   // C.x[3,2,1]
  l.lazy.mutable_entry(cell).default_value = 42;
  l.stored[cell].default_value = 42;
  l.lazy.mutable_entry(l.stored.size() - 1).default_value = 7;  // a stored entry after both runs
  l.stored.back().default_value = 7;
  ASSERT_EQ(l.lazy.size(), l.stored.size());
  for (std::size_t i = 0; i < l.stored.size(); ++i) {
    expect_same(l.lazy[i], l.stored[i]);
    EXPECT_EQ(l.lazy.find(l.stored[i].name), static_cast<std::int64_t>(i));
  }
  EXPECT_EQ(before[cell].default_value, 0.5);
  EXPECT_EQ(before.back().default_value, 4);
  l.lazy.push_back(scalar("C.e", 5));  // appending after the runs
  EXPECT_EQ(l.lazy.find("C.e"), static_cast<std::int64_t>(l.stored.size()));
  EXPECT_EQ(l.lazy.back().name, "C.e");
}

TEST(StateList, ConcurrentFirstReadsSeeTheSameEntries) {
  const Lists l = mixed();
  std::vector<std::string> seen[4];
  std::vector<std::thread> threads;
  for (auto& out : seen)
    threads.emplace_back([&] {
      for (std::size_t i = l.lazy.size(); i-- > 0;) out.push_back(l.lazy[i].name);
    });
  for (auto& t : threads) t.join();
  for (const auto& out : seen) {
    ASSERT_EQ(out.size(), l.stored.size());
    for (std::size_t i = 0; i < out.size(); ++i)
      EXPECT_EQ(out[i], l.stored[l.stored.size() - 1 - i].name);
  }
}

// Flatten in per-region form makes no per-cell entry: a 72 x 46 x 72 grid's states are three
// runs, and a cell is found by name where flatten says its array starts.
TEST(StateList, FlattenInRegionFormMakesNoEntryPerCell) {
  const std::filesystem::path corpus = esi::testing::corpus_dir();
  const auto file = corpus / "reseact/prototypes/transport_3d/transport_3d.esm";
  if (corpus.empty() || !std::filesystem::exists(file))
    GTEST_SKIP() << "corpus not found: set ESI_CORPUS";
  nlohmann::json raw;
  std::ifstream(file) >> raw;
  for (auto& imp : raw["models"]["Transport3D"]["expression_template_imports"])
    imp["bindings"] = {{"NLON", 72}, {"NLAT", 46}, {"NLEV", 72}};
  const auto doc = esi::esm::load_resolved(file, raw);
  esi::esm::FlattenOptions o;
  o.grid = true;
  const esi::esm::System s = esi::esm::flatten(doc, o);
  ASSERT_FALSE(s.grid.empty());
  EXPECT_EQ(s.states.size(), 3u * 72 * 46 * 72);
  EXPECT_EQ(s.states.materialized_runs(), 0u);
  for (const auto& a : s.arrays) {
    if (a.first_state < 0) continue;
    const std::int64_t linear = (5 - 1) + 72 * ((46 - 1) + 46 * (7 - 1));  // [5,46,7]
    EXPECT_EQ(s.state_index(a.name + "[5,46,7]"), a.first_state + linear) << a.name;
    EXPECT_EQ(s.state_index(a.name + "[73,1,1]"), -1) << a.name;
  }
  EXPECT_EQ(s.states.materialized_runs(), 0u);
  // Reading an entry makes its run's entries, with the names the index gave.
  const auto it = std::find_if(s.arrays.begin(), s.arrays.end(),
                               [](const auto& x) { return x.first_state >= 0; });
  ASSERT_NE(it, s.arrays.end());
  const auto& a = *it;
  const FlatVariable& v = s.states[static_cast<std::size_t>(a.first_state + 1000)];
  EXPECT_EQ(s.state_index(v.name), a.first_state + 1000);
  EXPECT_EQ(v.array, a.name);
  EXPECT_EQ(v.cell,
            (std::vector<std::int64_t>{1000 % 72 + 1, 1000 / 72 % 46 + 1, 1000 / 72 / 46 + 1}));
}

}  // namespace
