// The Python module `qdqrt`: ONNX Runtime's InferenceSession over qdqrt engines (session.cpp), the
// builder, engines and contexts (engine_bindings.cpp), calibration and inspection
// (tools_bindings.cpp). docs/python.md.
#include <pybind11/pybind11.h>

#include "core/version.h"
#include "python/bindings.h"

namespace py = pybind11;
using namespace qdqrt::python;

namespace {

// Created once at import; never freed (module-lifetime objects, like pybind11's own exceptions).
PyObject* error_type = nullptr;
PyObject* invalid_argument_type = nullptr;
PyObject* invalid_type_type = nullptr;

PyObject* new_exception(py::module_& module, const char* name, PyObject* bases, const char* doc) {
  std::string qualified = std::string("qdqrt.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw py::error_already_set();
  module.add_object(name, py::handle(type));
  return type;
}

}  // namespace

PYBIND11_MODULE(qdqrt, module) {
  module.doc() = "qdqrt: INT8 inference for explicit-QDQ ONNX models, with ONNX Runtime's InferenceSession API.";
  module.attr("__version__") = qdqrt::kVersion;

  error_type =
      new_exception(module, "Error", PyExc_RuntimeError, "Every error qdqrt reports (a Status that is not OK).");
  py::tuple value_bases = py::make_tuple(py::handle(error_type), py::handle(PyExc_ValueError));
  invalid_argument_type = new_exception(module, "InvalidArgument", value_bases.ptr(),
                                        "A bad argument: unknown name, wrong shape, non-contiguous array, bad option.");
  py::tuple type_bases = py::make_tuple(py::handle(error_type), py::handle(PyExc_TypeError));
  invalid_type_type = new_exception(module, "InvalidType", type_bases.ptr(), "An input array of the wrong dtype.");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const StatusError& error) {
      PyObject* type = error.status.code() == qdqrt::StatusCode::kInvalidArgument ? invalid_argument_type : error_type;
      PyErr_SetString(type, error.status.message().c_str());
    } catch (const DtypeError& error) {
      PyErr_SetString(invalid_type_type, error.message.c_str());
    }
  });

  bind_engine(module);
  bind_session(module);
  bind_tools(module);
  bind_quantization(module);
}
