/* hearth._hearth: module init, the error mapping, the process-wide probes
 * (GPU devices, build facts), and the conversion of JSON Schemas to
 * grammars. */
#include <string.h>

#include "hp.h"

#define N_STATUS (HEARTH_ERR_CANCELLED + 1)

/* The classes of hearth/errors.py, by status (index 0: the base class). */
static PyObject *error_class[N_STATUS];

PyObject *hp_set_errors(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *base, *by_status;
    if (!PyArg_ParseTuple(args, "OO!", &base, &PyDict_Type, &by_status)) return NULL;
    for (int st = 0; st < N_STATUS; st++) {
        PyObject *key = PyLong_FromLong(st);
        PyObject *cls = key ? PyDict_GetItem(by_status, key) : NULL; /* borrowed */
        Py_XDECREF(key);
        cls = cls ? cls : base;
        Py_INCREF(cls);
        Py_XDECREF(error_class[st]);
        error_class[st] = cls;
    }
    Py_RETURN_NONE;
}

PyObject *hp_raise(hearth_status st, const char *msg) {
    PyObject *cls = (int)st > 0 && (int)st < N_STATUS && error_class[st] ? error_class[st] : error_class[0];
    if (!msg) msg = hearth_last_error();
    if (!*msg) msg = hearth_status_str(st);
    if (!cls) cls = PyExc_RuntimeError; /* hearth/errors.py did not register (the package's __init__ always does) */
    PyObject *exc = PyObject_CallFunction(cls, "si", msg, (int)st);
    if (exc) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

const char *hp_utf8(PyObject *str, PyObject **holder) {
    if (!PyUnicode_Check(str)) {
        PyErr_SetString(PyExc_TypeError, "expected a str");
        return NULL;
    }
    *holder = PyUnicode_AsUTF8String(str);
    if (!*holder) return NULL;
    char *text;
    Py_ssize_t len;
    if (PyBytes_AsStringAndSize(*holder, &text, &len) < 0) {
        Py_CLEAR(*holder);
        return NULL;
    }
    if ((size_t)len != strlen(text)) {
        Py_CLEAR(*holder);
        PyErr_SetString(PyExc_ValueError, "the text holds a NUL character");
        return NULL;
    }
    return text;
}

static PyObject *supports_gpu_offload(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    return PyBool_FromLong(hearth_supports_gpu_offload());
}

/* [{"index", "id", "name", "is_gpu", "compute_capability": (major, minor),
 * "compute_units", "free_bytes", "total_bytes", "backend", "backend_label"}] */
static PyObject *gpu_devices(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    int32_t n;
    Py_BEGIN_ALLOW_THREADS n = hearth_gpu_device_count();
    Py_END_ALLOW_THREADS PyObject *out = PyList_New(0);
    for (int32_t i = 0; out && i < n; i++) {
        hearth_gpu_info info;
        const hearth_status st = hearth_gpu_device_info(i, &info);
        PyObject *d = st == HEARTH_OK
                          ? Py_BuildValue("{s:i,s:s,s:s,s:O,s:(ii),s:i,s:K,s:K,s:s,s:s}", "index", i, "id", info.id,
                                          "name", info.name, "is_gpu", info.is_gpu ? Py_True : Py_False,
                                          "compute_capability", info.cc_major, info.cc_minor, "compute_units",
                                          info.compute_units, "free_bytes", (unsigned long long)info.free_bytes,
                                          "total_bytes", (unsigned long long)info.total_bytes, "backend", info.backend,
                                          "backend_label", info.backend_label)
                          : hp_raise(st, NULL);
        if (!d || PyList_Append(out, d) < 0) Py_CLEAR(out);
        Py_XDECREF(d);
    }
    return out;
}

/* The build line, then the CPU and GPU facts:
 * "hearth 0.1.0; cpu: avx2 fma f16c; backends: cpu cuda; 2 physical cores;
 *  gpu: none (CUDA unavailable: ...)" */
static PyObject *system_info(PyObject *m, PyObject *unused) {
    (void)m, (void)unused;
    const int32_t n_gpu = hearth_gpu_device_count();
    const char *why = hearth_gpu_unavailable_reason();
    if (n_gpu > 0)
        return PyUnicode_FromFormat("%s; %d physical cores; gpu: %d device(s)", hearth_build_info(),
                                    (int)hearth_cpu_physical_cores(), (int)n_gpu);
    return PyUnicode_FromFormat("%s; %d physical cores; gpu: none (%s)", hearth_build_info(),
                                (int)hearth_cpu_physical_cores(), why ? why : "no device");
}

/* json_schema_to_grammar(schema: str) -> str: the GBNF of the JSON texts
 * the schema (JSON text) accepts (hearth_json_schema_to_grammar). */
static PyObject *json_schema_to_grammar(PyObject *m, PyObject *schema) {
    (void)m;
    PyObject *holder;
    const char *text = hp_utf8(schema, &holder);
    if (!text) return NULL;
    char *gbnf = NULL;
    const hearth_status st = hearth_json_schema_to_grammar(text, &gbnf);
    Py_DECREF(holder);
    if (st != HEARTH_OK) return hp_raise(st, NULL);
    PyObject *out = PyUnicode_DecodeUTF8(gbnf, (Py_ssize_t)strlen(gbnf), "strict");
    hearth_grammar_free_text(gbnf);
    return out;
}

static PyMethodDef module_methods[] = {
    {"open", (PyCFunction)(void (*)(void))hp_engine_open, METH_VARARGS | METH_KEYWORDS, "open(path, ...) -> Engine"},
    {"_set_errors", hp_set_errors, METH_VARARGS, "_set_errors(base, {status: class})"},
    {"supports_gpu_offload", supports_gpu_offload, METH_NOARGS, "supports_gpu_offload() -> bool"},
    {"gpu_devices", gpu_devices, METH_NOARGS, "gpu_devices() -> list[dict]"},
    {"system_info", system_info, METH_NOARGS, "system_info() -> str"},
    {"json_schema_to_grammar", json_schema_to_grammar, METH_O, "json_schema_to_grammar(schema: str) -> str (GBNF)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_hearth",
    "hearth's C extension (use the hearth package)",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__hearth(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyObject *engine = PyType_FromSpec(&hp_engine_spec);
    hp_request_type = engine ? PyType_FromSpec(&hp_request_spec) : NULL;
    if (!hp_request_type || PyModule_AddObject(m, "Engine", engine) < 0) {
        Py_XDECREF(engine);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(engine);
    hp_engine_set_type(engine);
    Py_INCREF(hp_request_type);
    if (PyModule_AddObject(m, "Request", hp_request_type) < 0 ||
        PyModule_AddStringConstant(m, "__version__", HEARTH_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
