// The esi::Error an action throws, for tests that check codes and pointers.
#pragma once

#include <functional>

#include <gtest/gtest.h>

#include "esi/core/error.hpp"

namespace esi::testing {

/// The error `action` throws (fails the test when it throws none).
inline esi::Error error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const esi::Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an esi::Error";
  return esi::Error("none", "", "", "");
}

}  // namespace esi::testing
