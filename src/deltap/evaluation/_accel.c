/* deltap.evaluation._accel: the compiled inner loops of evaluate()'s dict path (optional).

   The pure-Python code of ranking.py is the reference. This module only does, faster, two loops that code runs over
   the run's dicts, and it declines any input it is not sure of: each function either does its whole job or returns
   -1 ("not handled"), and the caller then runs the Python path on the same input, which computes the same numbers
   or names the bad entries exactly as it does without this module. It never raises for a user's data.

   Built at install time by hatch_build.py (the hatchling build hook) with the interpreter's own compiler settings;
   deltap.evaluation.accel loads it (DELTAP_ACCEL=0 switches it off). Only borrowed references to the dicts' values
   are read, while no Python code can run: no reference count of a score changes and nothing needs releasing but the
   buffers, which every path releases. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

/* SHA-256 of this file, passed by the build (accel.py compares it with the file next to the module: a module built
   from an older source is not used). */
#ifndef DELTAP_ACCEL_SOURCE
#define DELTAP_ACCEL_SOURCE "unknown"
#endif

/* A C-contiguous buffer of 8-byte items of one kind ('d': float64, 'q': int64), writable when asked; a TypeError
   otherwise (the callers are deltap's own code: a wrong buffer is a bug, not user input). */
static int
get_buffer(PyObject *obj, Py_buffer *view, int writable, char kind)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        return -1;
    }
    const char *fmt = view->format ? view->format : "B";
    if (fmt[0] == '@' || fmt[0] == '=') {
        fmt++;
    }
    int ok = view->itemsize == 8 && fmt[1] == '\0' &&
             (kind == 'd' ? fmt[0] == 'd' : (fmt[0] == 'q' || fmt[0] == 'l'));
    if (!ok) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "expected a contiguous %s buffer", kind == 'd' ? "float64" : "int64");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(pack_doc,
"pack(rows: list, out) -> int\n\n"
"Write every score of ``rows`` (run rows, in row order, each row in its dict's order) into the float64 buffer\n"
"``out``; the number written, or -1 when ``rows`` is not a list, a row not an exact dict, a doc id (key) not an exact\n"
"str, a score not an exact float, or ``out`` too small. NaN and infinities are copied as they are (the caller's\n"
"finiteness check names them); a doc id of another type is the Python path's to name.");

static PyObject *
pack(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "pack(rows: list, out: float64 buffer)");
        return NULL;
    }
    if (!PyList_Check(args[0])) {
        return PyLong_FromLong(-1);
    }
    Py_buffer view;
    if (get_buffer(args[1], &view, 1, 'd') < 0) {
        return NULL;
    }
    PyObject *rows = args[0];
    double *out = (double *)view.buf;
    Py_ssize_t capacity = view.len / 8, written = 0;
    for (Py_ssize_t r = 0; r < PyList_GET_SIZE(rows); r++) {
        PyObject *row = PyList_GET_ITEM(rows, r);
        if (!PyDict_CheckExact(row)) {
            written = -1;
            break;
        }
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        /* PyDict_Next runs no Python code: the borrowed key and value stay valid for the iteration. Every key is
           checked here (the dict path reads no other doc id but in ties), so a run of exact str ids costs no other
           pass; an int id would never match the qrels' '1', and in a tie its comparison would raise. */
        while (written >= 0 && PyDict_Next(row, &pos, &key, &value)) {
            if (!PyFloat_CheckExact(value) || !PyUnicode_CheckExact(key) || written == capacity) {
                written = -1;
            }
            else {
                out[written++] = PyFloat_AS_DOUBLE(value);
            }
        }
        if (written < 0) {
            break;
        }
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(written);
}

/* The score of ``key`` in ``row``: 1 found (in *score), 0 absent (NaN), -1 not handled (not an exact float, or an
   exception from a key's comparison, which is cleared: the Python path meets it again and raises it as it would). */
static int
score_of(PyObject *row, PyObject *key, double *score)
{
    Py_INCREF(key); /* an odd run key's __eq__ may run Python code during the probe: keep the probe key alive */
    PyObject *value = PyDict_GetItemWithError(row, key); /* borrowed, read at once */
    Py_DECREF(key);
    if (value == NULL) {
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
        *score = NAN;
        return 0;
    }
    if (!PyFloat_CheckExact(value)) {
        return -1;
    }
    *score = PyFloat_AS_DOUBLE(value);
    return 1;
}

PyDoc_STRVAR(lookup_doc,
"lookup(rows: list, counts, docs: list, start: int, out) -> int\n\n"
"The judged look-ups of a block: row ``r`` of ``rows`` answers the next ``counts[r]`` (int64 buffer) doc ids of\n"
"``docs``, starting at ``docs[start]``; each one's score in that row goes to the float64 buffer ``out`` (NaN when\n"
"the row lacks it). The number written (``sum(counts)``), or -1 when ``rows`` or ``docs`` is not a list, a row\n"
"not an exact dict, a doc id not an exact str, a found score not an exact float, or the sizes do not match.");

static PyObject *
lookup(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "lookup(rows: list, counts: int64 buffer, docs: list, start: int, out)");
        return NULL;
    }
    if (!PyList_Check(args[0]) || !PyList_Check(args[2])) {
        return PyLong_FromLong(-1);
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[3]);
    if (start == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer counts_view, out_view;
    if (get_buffer(args[1], &counts_view, 0, 'q') < 0) {
        return NULL;
    }
    if (get_buffer(args[4], &out_view, 1, 'd') < 0) {
        PyBuffer_Release(&counts_view);
        return NULL;
    }
    PyObject *rows = args[0], *docs = args[2];
    const char *counts = (const char *)counts_view.buf;
    double *out = (double *)out_view.buf;
    Py_ssize_t n_counts = counts_view.len / 8, capacity = out_view.len / 8, written = 0;
    if (n_counts != PyList_GET_SIZE(rows) || start < 0) {
        written = -1;
    }
    /* sizes re-read on every step: a key's __eq__ (Python code) could change the lists */
    for (Py_ssize_t r = 0; written >= 0 && r < n_counts && r < PyList_GET_SIZE(rows); r++) {
        PyObject *row = PyList_GET_ITEM(rows, r);
        if (!PyDict_CheckExact(row)) {
            written = -1;
            break;
        }
        long long count; /* int64 item r, read without aliasing the buffer's own type */
        memcpy(&count, counts + 8 * r, sizeof count);
        Py_INCREF(row);
        for (long long j = 0; j < count; j++) {
            Py_ssize_t at = start + written;
            if (written == capacity || at >= PyList_GET_SIZE(docs)) {
                written = -1;
                break;
            }
            PyObject *doc = PyList_GET_ITEM(docs, at);
            if (!PyUnicode_CheckExact(doc) || score_of(row, doc, &out[written]) < 0) {
                written = -1;
                break;
            }
            written++;
        }
        Py_DECREF(row);
    }
    if (written != capacity) {
        written = -1;
    }
    PyBuffer_Release(&counts_view);
    PyBuffer_Release(&out_view);
    return PyLong_FromSsize_t(written);
}

static PyMethodDef methods[] = {
    {"pack", (PyCFunction)(void (*)(void))pack, METH_FASTCALL, pack_doc},
    {"lookup", (PyCFunction)(void (*)(void))lookup, METH_FASTCALL, lookup_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "deltap.evaluation._accel",
    .m_doc = "Compiled inner loops of deltap's dict path (optional; see deltap.evaluation.accel).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__accel(void)
{
    PyObject *module = PyModule_Create(&module_def);
    if (module != NULL && PyModule_AddStringConstant(module, "SOURCE_SHA256", DELTAP_ACCEL_SOURCE) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
