# The installed C++ package (`cmake --install build --prefix DIR`):
#   lib/libqdqrt.so              the engine and everything under it (optimizer, reference, parser, core, kernels)
#   include/qdqrt/...            the public API: engine/engine.h, engine/profiles.h and the headers they include (docs/python.md)
#   lib/cmake/qdqrt/             find_package(qdqrt CONFIG) -> qdqrt::engine
#   lib/pkgconfig/qdqrt.pc       pkg-config --cflags --libs qdqrt
#   bin/qdqrt                    the CLI; the Python module goes to python/CMakeLists.txt's QDQRT_PYTHON_INSTALL_DIR
# tests/install builds an out-of-tree consumer against the result.
include(CMakePackageConfigHelpers)

# One shared library from the objects of the static libraries (already position-independent).
set(QDQRT_PACKAGED_LIBRARIES qdqrt_engine qdqrt_optimizer qdqrt_reference qdqrt_parser qdqrt_core qdqrt_kernels)
set(QDQRT_PACKAGED_OBJECTS)
foreach(library ${QDQRT_PACKAGED_LIBRARIES})
  list(APPEND QDQRT_PACKAGED_OBJECTS $<TARGET_OBJECTS:${library}>)
endforeach()
add_library(qdqrt_shared SHARED ${QDQRT_PACKAGED_OBJECTS})
add_dependencies(qdqrt_shared ${QDQRT_PACKAGED_LIBRARIES})
set_target_properties(qdqrt_shared PROPERTIES OUTPUT_NAME qdqrt EXPORT_NAME engine VERSION ${PROJECT_VERSION}
                                              SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
target_include_directories(qdqrt_shared INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/qdqrt>)
target_link_libraries(qdqrt_shared PUBLIC fmt::fmt  # core/status.h formats messages inline
                      PRIVATE TBB::tbb onnx onnx_proto protobuf::libprotobuf xxhash Threads::Threads)

# The public headers: engine/engine.h and its includes (an installed consumer compiling engine.h
# checks this list: tests/install).
set(QDQRT_PUBLIC_HEADERS engine/engine.h engine/plan.h engine/profiles.h engine/shape_profile.h core/dtype.h core/dim_expr.h core/graph.h
                         core/status.h core/tensor.h kernels/cpu_features.h)
foreach(header ${QDQRT_PUBLIC_HEADERS})
  get_filename_component(header_dir ${header} DIRECTORY)
  install(FILES ${QDQRT_SOURCE_ROOT}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qdqrt/${header_dir})
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/core/generated/core/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qdqrt/core)

install(TARGETS qdqrt_shared EXPORT qdqrtTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS qdqrt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(QDQRT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qdqrt)
install(EXPORT qdqrtTargets NAMESPACE qdqrt:: DESTINATION ${QDQRT_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/qdqrtConfig.cmake.in ${CMAKE_BINARY_DIR}/package/qdqrtConfig.cmake
                              INSTALL_DESTINATION ${QDQRT_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/qdqrtConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/qdqrtConfig.cmake ${CMAKE_BINARY_DIR}/package/qdqrtConfigVersion.cmake
        DESTINATION ${QDQRT_CMAKE_DIR})
configure_file(${CMAKE_CURRENT_LIST_DIR}/qdqrt.pc.in ${CMAKE_BINARY_DIR}/package/qdqrt.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/qdqrt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
