# The module_privacy test: a module reaches another module's private header only by failing to
# compile. Builds two probes with exec's include paths: exec/model.hpp (its own private header)
# must compile, method/controller.hpp (method's) must fail with "No such file".
#   cmake -DBUILD_DIR=... -P module_privacy.cmake
foreach(probe allowed denied)
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" --target esi_privacy_probe_${probe}
                  RESULT_VARIABLE rc_${probe} OUTPUT_VARIABLE out_${probe} ERROR_VARIABLE out_${probe})
endforeach()
if(NOT rc_allowed EQUAL 0)
  message(FATAL_ERROR "exec could not include its own private header exec/model.hpp:\n${out_allowed}")
endif()
if(rc_denied EQUAL 0)
  message(FATAL_ERROR "exec compiled with method's private header method/controller.hpp: module privacy is not enforced")
endif()
if(NOT out_denied MATCHES "method/controller.hpp: No such file")
  message(FATAL_ERROR "the denied probe failed for another reason than the missing header:\n${out_denied}")
endif()
message(STATUS "module privacy: exec/model.hpp compiles from exec, method/controller.hpp does not")
