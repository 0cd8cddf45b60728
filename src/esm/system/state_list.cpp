// StateList: the states of a System with per-region state arrays kept as lazy runs (see
// system.hpp). Lookups are a binary search over the runs (a handful: one per state array).
#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
#include <stdexcept>

#include "esi/esm/system.hpp"

namespace esi::esm {

struct StateList::LazyCells {
  FlatVariable cell;  ///< every cell's entry but its name and position (`array` is set)
  std::vector<std::int64_t> extents;
  std::size_t count = 0;  ///< cells: the product of the extents
  std::once_flag once;
  std::atomic<bool> made{false};
  std::vector<FlatVariable> entries;

  const std::vector<FlatVariable>& get() {
    std::call_once(once, [this] {
      entries.reserve(count);
      std::vector<std::int64_t> at(extents.size(), 1);
      for (std::size_t k = 0; k < count; ++k) {
        FlatVariable& v = entries.emplace_back(cell);  // copied with an empty name
        assign_cell_name(v.name, cell.array, at);
        v.cell = at;
        for (std::size_t ax = 0; ax < at.size() && ++at[ax] > extents[ax]; ++ax) at[ax] = 1;
      }
      made.store(true, std::memory_order_release);
    });
    return entries;
  }
};

StateList::Position StateList::locate(std::size_t i) const {
  // The last run that starts at or before i.
  const auto r = std::upper_bound(runs_.begin(), runs_.end(), i,
                                  [](std::size_t x, const Run& run) { return x < run.first; });
  if (r == runs_.begin()) return {runs_.size(), i};
  const Run& run = *(r - 1);
  if (i < run.first + run.count)
    return {static_cast<std::size_t>(r - 1 - runs_.begin()), i - run.first};
  return {runs_.size(), i - run.lazy_before - run.count};
}

const FlatVariable& StateList::lookup(std::size_t i) const {
  const Position at = locate(i);
  return at.run < runs_.size() ? runs_[at.run].cells->get()[at.offset] : entries_[at.offset];
}

const FlatVariable& StateList::lazy_cell(const Run& run) {
  return run.cells->cell;
}

std::string StateList::name(std::size_t i) const {
  const Position where = locate(i);
  if (where.run == runs_.size()) return entries_[where.offset].name;
  const LazyCells& c = *runs_[where.run].cells;
  if (c.made.load(std::memory_order_acquire)) return c.entries[where.offset].name;
  std::vector<std::int64_t> at(c.extents.size());
  std::size_t k = where.offset;
  for (std::size_t ax = 0; ax < at.size(); ++ax) {
    const auto e = static_cast<std::size_t>(c.extents[ax]);
    at[ax] = static_cast<std::int64_t>(k % e) + 1;
    k /= e;
  }
  return cell_name(c.cell.array, at);
}

const FlatVariable& StateList::at(std::size_t i) const {
  if (i >= size_) throw std::out_of_range("StateList::at");
  return (*this)[i];
}

void StateList::push_back(FlatVariable v) {
  entries_.push_back(std::move(v));
  ++size_;
}

void StateList::clear() {
  entries_.clear();
  runs_.clear();
  size_ = 0;
}

void StateList::append_cells(FlatVariable cell, const std::string& array,
                             std::vector<std::int64_t> extents) {
  auto lazy = std::make_shared<LazyCells>();
  lazy->count = 1;
  for (auto e : extents) lazy->count *= static_cast<std::size_t>(e);
  cell.name.clear();
  cell.array = array;
  cell.cell.clear();
  lazy->cell = std::move(cell);
  lazy->extents = std::move(extents);
  const std::size_t n = lazy->count;
  const std::size_t before = runs_.empty() ? 0 : runs_.back().lazy_before + runs_.back().count;
  runs_.push_back({size_, n, before, std::move(lazy)});
  size_ += n;
}

FlatVariable& StateList::mutable_entry(std::size_t i) {
  const Position where = locate(i);
  if (where.run == runs_.size()) return entries_[where.offset];
  // Store the run's cells in place of the run; the runs after it have that many fewer lazy
  // cells before them.
  const auto r = runs_.begin() + static_cast<std::ptrdiff_t>(where.run);
  const std::size_t at = r->first - r->lazy_before, n = r->count;
  const auto& cells = r->cells->get();
  entries_.insert(entries_.begin() + static_cast<std::ptrdiff_t>(at), cells.begin(), cells.end());
  for (auto later = r + 1; later != runs_.end(); ++later) later->lazy_before -= n;
  runs_.erase(r);
  return entries_[at + where.offset];
}

std::int64_t StateList::find(const std::string& name) const {
  if (const std::int64_t cell = find_lazy_cell(name); cell >= 0) return cell;
  std::int64_t found = -1;
  for_each_stored([&](std::size_t i, const FlatVariable& v) {
    if (found < 0 && v.name == name) found = static_cast<std::int64_t>(i);
  });
  return found;
}

std::int64_t StateList::find_lazy_cell(std::string_view name) const {
  if (!name.empty() && name.back() == ']') {
    const std::size_t open = name.find('[');
    for (const Run& run : runs_) {
      const LazyCells& c = *run.cells;
      const std::string& array = c.cell.array;
      if (open != array.size() || name.compare(0, open, array) != 0) continue;
      std::vector<std::int64_t> at;
      const char* p = name.data() + open + 1;
      const char* end = name.data() + name.size() - 1;
      std::size_t linear = 0, stride = 1;
      bool ok = true;
      for (std::size_t ax = 0; ax < c.extents.size() && ok; ++ax) {
        std::int64_t k = 0;
        const auto res = std::from_chars(p, end, k);
        ok = res.ec == std::errc() && k >= 1 && k <= c.extents[ax];
        p = res.ptr;
        if (ok && ax + 1 < c.extents.size()) ok = p < end && *p++ == ',';
        at.push_back(k);
        linear += static_cast<std::size_t>(k - 1) * stride;
        stride *= static_cast<std::size_t>(c.extents[ax]);
      }
      // The name must be the one the cell is given (no spaces, signs or leading zeros).
      if (!ok || p != end || cell_name(array, at) != name) continue;
      return static_cast<std::int64_t>(run.first + linear);
    }
  }
  return -1;
}

std::size_t StateList::materialized_runs() const {
  std::size_t n = 0;
  for (const Run& run : runs_) n += run.cells->made.load(std::memory_order_acquire) ? 1 : 0;
  return n;
}

}  // namespace esi::esm
