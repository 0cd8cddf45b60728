// The flattened system: one set of equations over fully-qualified names (spec §10.7).
//
// Produced by `flatten` from a resolved document. Every name is dot-namespaced by its owning
// component path (`SuperFast.O3`, `Atmosphere.Chemistry.NO2`); expressions live in the
// system's own expression Pool and reference only flat names, `t`, and numbers. Unknowns are
// partitioned per spec §6.3.1: states (D(x, t) targets, with their right-hand side), observed
// unknowns (bare-name left-hand sides, in dependency order: each observed reads only states,
// parameters and observeds before it) and algebraic unknowns (implicit equations).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "esi/expr/expr.hpp"

namespace esi::esm {

/// How often a parameter changes (spec §5.4, §6.3.1).
enum class Cadence { Constant, Sampled, Discrete, Brownian };

struct FlatVariable {
  std::string name;         ///< fully qualified, e.g. "SuperFast.O3"
  std::string units;        ///< as declared ("" when absent)
  std::string description;  ///< as declared
  std::optional<double> default_value;
  /// Initial value expression from an `ic` equation (wins over `default`); kNoNode if none.
  expr::NodeId initial = expr::kNoNode;
  std::vector<std::string> shape;  ///< index-set names; empty = scalar
  /// For one cell of a shaped variable: the array's flat name ("C.x") and the cell's 1-based
  /// position along each of its axes; empty for a scalar variable.
  std::string array;
  std::vector<std::int64_t> cell;
  Cadence cadence = Cadence::Constant;  ///< parameters only
  std::string file;     ///< where it was declared
  std::string pointer;  ///< JSON pointer of its declaration
};

struct FlatEquation {
  expr::NodeId lhs = expr::kNoNode;
  expr::NodeId rhs = expr::kNoNode;
  std::string file;
  std::string pointer;
};

/// One reaction of a reaction system as authored (spec §7), kept for people (`esi inspect`):
/// the mass-action ODEs in `state_rhs` are what runs.
struct FlatReaction {
  std::string component;  ///< the reaction system's path, e.g. "SuperFast"
  std::string id;         ///< "R1" ("" when absent)
  std::string name;       ///< optional descriptive name
  /// Species by their local names with their stoichiometric coefficients, in authored order.
  std::vector<std::pair<std::string, double>> substrates, products;
  /// The rate law with templates expanded and names flat ("SuperFast.k1"), before the §7.4
  /// substrate factors are multiplied in and before coupling substitutions.
  expr::NodeId rate = expr::kNoNode;
  std::string file, pointer;
};

/// The name of one cell of array `name`: "C.x[2,1,7]" (1-based, as the format indexes).
std::string cell_name(const std::string& name, const std::vector<std::int64_t>& cell);
/// cell_name into `out`, reusing its buffer.
void assign_cell_name(std::string& out, const std::string& name,
                      const std::vector<std::int64_t>& cell);

/// The states of a System, in state-vector order, with the read interface of a
/// std::vector<FlatVariable>. Scalar states (and the cells of arrays flattened to cells) are
/// stored one entry each. A state array in per-region form (System::grid) is appended as one
/// run of cells described once (`append_cells`): its per-cell entries ("C.x[i,j,k]", the cell's
/// position) are made the first time one of them is read, whole array at once, so that
/// flattening and compiling a grid take the same time and memory at any number of cells, and
/// commands that never read a cell's entry never make them. Making them is logically const
/// (the entries follow from the run's description) and safe from concurrent readers; copies
/// of the list share them.
class StateList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = FlatVariable;
    using difference_type = std::ptrdiff_t;
    using pointer = const FlatVariable*;
    using reference = const FlatVariable&;
    const_iterator() = default;
    const_iterator(const StateList* list, std::size_t i) : list_(list), i_(i) {}
    reference operator*() const { return (*list_)[i_]; }
    pointer operator->() const { return &(*list_)[i_]; }
    reference operator[](difference_type d) const { return (*list_)[i_ + d]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      auto t = *this;
      ++i_;
      return t;
    }
    const_iterator& operator--() {
      --i_;
      return *this;
    }
    const_iterator operator--(int) {
      auto t = *this;
      --i_;
      return t;
    }
    const_iterator& operator+=(difference_type d) {
      i_ += d;
      return *this;
    }
    const_iterator& operator-=(difference_type d) {
      i_ -= d;
      return *this;
    }
    friend const_iterator operator+(const_iterator a, difference_type d) { return a += d; }
    friend const_iterator operator+(difference_type d, const_iterator a) { return a += d; }
    friend const_iterator operator-(const_iterator a, difference_type d) { return a -= d; }
    friend difference_type operator-(const_iterator a, const_iterator b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.i_ == b.i_;
    }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) {
      return a.i_ <=> b.i_;
    }

   private:
    const StateList* list_ = nullptr;
    std::size_t i_ = 0;
  };
  using value_type = FlatVariable;
  using size_type = std::size_t;
  using iterator = const_iterator;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const FlatVariable& operator[](std::size_t i) const {
    if (runs_.empty()) return entries_[i];  // no lazy run: entries_ is the whole list
    return lookup(i);
  }
  const FlatVariable& at(std::size_t i) const;
  const FlatVariable& front() const { return (*this)[0]; }
  const FlatVariable& back() const { return (*this)[size_ - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  void push_back(FlatVariable v);
  void reserve(std::size_t n) { entries_.reserve(n); }
  void clear();
  /// Appends the cells of state array `array` (extents, first index fastest) as one lazy run;
  /// every cell's entry is `cell` with its name and position filled in.
  void append_cells(FlatVariable cell, const std::string& array, std::vector<std::int64_t> extents);
  /// Entry i for writing: a lazy run it belongs to becomes stored entries first.
  FlatVariable& mutable_entry(std::size_t i);
  /// The name of state i, without making its run's entries ("C.x[2,1,7]" for a cell).
  std::string name(std::size_t i) const;
  /// Index of a state by name, or -1. A cell name "C.x[i,j,k]" of a lazy run is found by its
  /// position, without making the run's entries.
  std::int64_t find(const std::string& name) const;
  /// find() for the cells of lazy runs only (-1 for any other name), in time independent of
  /// the number of states.
  std::int64_t find_lazy_cell(std::string_view name) const;
  bool has_lazy_runs() const { return !runs_.empty(); }
  /// How many lazy runs have made their entries (for tests).
  std::size_t materialized_runs() const;
  /// Calls f(i, entry) for every stored entry (every state but the cells of lazy runs), in
  /// order, without making any run's entries.
  template <class F>
  void for_each_stored(F&& f) const {
    std::size_t stored = 0, i = 0;
    for (const Run& run : runs_) {
      for (; i < run.first; ++i, ++stored) f(i, entries_[stored]);
      i += run.count;
    }
    for (; i < size_; ++i, ++stored) f(i, entries_[stored]);
  }
  /// Calls f(first, count, cell) for every lazy run, in order: its cells are states
  /// [first, first + count), and `cell` is every cell's entry but for its name and position.
  template <class F>
  void for_each_lazy_run(F&& f) const {
    for (const Run& run : runs_) f(run.first, run.count, lazy_cell(run));
  }

 private:
  struct LazyCells;
  struct Run {  // a lazy run at [first, first + count); stored entries fill the gaps
    std::size_t first = 0, count = 0;
    std::size_t lazy_before = 0;  ///< cells of the lazy runs before this one
    std::shared_ptr<LazyCells> cells;
  };
  /// Where state i lives: run `run` at `offset`, or (run == runs_.size()) entries_[offset].
  struct Position {
    std::size_t run, offset;
  };
  Position locate(std::size_t i) const;
  const FlatVariable& lookup(std::size_t i) const;
  static const FlatVariable& lazy_cell(const Run& run);
  std::vector<FlatVariable> entries_;  ///< the stored (non-lazy) states, in order
  std::vector<Run> runs_;
  std::size_t size_ = 0;
};

/// Calls f(v) for every variable of the given lists (states, observed, ...), list by list.
template <class F, class... Lists>
void for_each_variable(F&& f, const Lists&... lists) {
  (..., [&] {
    for (const FlatVariable& v : lists) f(v);
  }());
}

struct System {
  expr::Pool pool;
  std::vector<std::string> components;  ///< component paths, document order

  StateList states;  ///< dx/dt = state_rhs[i]
  std::vector<expr::NodeId> state_rhs;
  /// Per state: the component path of each contribution summed into its right-hand side
  /// (operator_compose parts, in the order of the top-level sum's arguments; one entry when a
  /// single component contributes, empty for a state without one). The planner's provenance.
  /// May be shorter than `states` (the cells of per-region state arrays have none): a state
  /// past its end has no sources.
  std::vector<std::vector<std::string>> state_sources;
  std::vector<FlatVariable> observed;    ///< y = observed_rhs[i], dependency order
  std::vector<expr::NodeId> observed_rhs;
  std::vector<FlatVariable> algebraic;   ///< constrained by algebraic_equations
  std::vector<FlatEquation> algebraic_equations;
  std::vector<FlatVariable> parameters;
  std::vector<FlatReaction> reactions;  ///< every reaction, document order (for inspection)

  std::map<std::string, std::int64_t> index_sets;  ///< name -> folded size
  /// Every shaped variable, before it became cells: its flat name, its axes (index-set names)
  /// and their extents. Cells are stored first index fastest, named "C.x[i,j,k]".
  struct Array {
    std::string name;
    std::vector<std::string> axes;
    std::vector<std::int64_t> extents;
    /// A parameter array: only the cells some equation reads are in `parameters` (a field
    /// over a global grid read on a regional slice keeps only that slice).
    bool parameter = false;
    std::string units, description;
    /// Per-region form only (`grid` non-empty): where a state array's cells start in
    /// `states` (contiguous, first index fastest), -1 otherwise; a parameter array's values
    /// (first index fastest; NaN where nothing gave one), since its cells are not declared.
    std::int64_t first_state = -1;
    std::vector<double> values;
  };
  std::vector<Array> arrays;

  /// Per-region programs (FlattenOptions::grid, spec §4.3 without cells): each array equation
  /// is a list of boxes of output cells and, per box, one expression that holds at every cell
  /// of it. Reads of arrays in those expressions are relative symbols: "C.x[@0+1,@1,3]" is
  /// C.x at (output axis 0 plus one, output axis 1, 3); "$index[@2-1]" is the cell's own
  /// position along output axis 2, minus one, as a number. Out-of-range gathers were already
  /// replaced by 0 in the boxes where they fall outside, so the expressions never read
  /// outside an array. Boxes do not overlap and cover the extents; the number of boxes and
  /// their expressions do not depend on the grid size, only their bounds do.
  struct GridRegion {
    std::vector<std::int64_t> lo, hi;  ///< 1-based, inclusive
    std::vector<expr::NodeId> rhs;     ///< one per target
  };
  struct GridEquation {
    enum class Kind { Observed, Tendency, Initial };
    Kind kind = Kind::Tendency;
    std::vector<std::string> targets;  ///< arrays it defines (same extents), flat names
    std::vector<std::int64_t> extents;
    std::vector<GridRegion> regions;
    std::string file, pointer;
    /// Tendency with one region: per target, the component path of each contribution summed
    /// into it (operator_compose parts, in the order of the top-level sum's arguments; one
    /// entry when a single component contributes). The planner's provenance.
    std::vector<std::vector<std::string>> sources;
  };
  /// Observed arrays first (dependency order), then tendencies, then initial values. Empty
  /// unless the per-region form was asked for and the document has one.
  std::vector<GridEquation> grid;
  /// Why the per-region form was asked for but the arrays became cells ("" otherwise).
  std::string grid_fallback;
  nlohmann::json events = nlohmann::json::array();  ///< flattened events (run later)

  /// Index of a flat name in states / observed / parameters, or -1.
  int state_index(const std::string& name) const;
  int observed_index(const std::string& name) const;
  int parameter_index(const std::string& name) const;
};

}  // namespace esi::esm
