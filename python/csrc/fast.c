/* attnc._fast: the warm path of attnc's drop-in functions (attnc.vllm, attnc.flashinfer) in C.
 *
 * A warm drop-in call is a repeat of a call already checked: the Python path (attnc/_memo.py) keys
 * it by every tensor's pointer, shape, strides and dtype and every scalar, finds the checked
 * attnc_call and runs it through ctypes. Here the key is packed into bytes by C reading the same
 * values through the tensor's Python API (data_ptr(), shape, stride(), dtype: no torch headers are
 * needed at build time), the dict lookup and the replay (allocating out/lse when the caller did not
 * pass them, following a grown split-KV workspace) are C too, and the library's run function is
 * called through its address, without ctypes' argument conversion. Where attnc/_torch_shim.py has
 * found torch's C shim and checked it (tensor_abi(), stream_abi()), torch tensors' metadata is read through it instead
 * of their Python API.
 *
 * Stable ABI (Py_LIMITED_API 3.10): one build serves every CPython from 3.10 on.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int (*attnc_run_fn)(void* handle, const void* call, void* stream);

/* Set by init(): the tensor type keyed by its metadata (other objects are not keyed), the entry
 * table, current-stream, status-check and allocation callables. */
static PyObject *g_tensor_type, *g_table, *g_stream_fn, *g_check_fn, *g_alloc_fn;
static PyObject *s_data_ptr, *s_shape, *s_stride, *s_dtype, *s_is_contiguous, *s_workspace_ptr, *s_workspace_bytes;

/* torch's stable C shim (AOTInductor's extern "C" functions in libtorch_cpu, AtenTensorHandle =
 * at::Tensor*) and the offset of the at::Tensor inside torch's Python tensor object (THPVariable):
 * set by tensor_abi() once attnc/_torch_shim.py has checked the offset against `_cdata` and the shim's
 * reads against the Python API on probe tensors. A tensor's metadata then costs six calls of a few
 * nanoseconds each, against ~0.4 us for data_ptr(), dtype, shape and is_contiguous() through
 * torch's Python API (each a Python call with torch_function checks, torch.Size built and freed).
 * Only objects of exactly abi.type are read so; the rest take the Python API. */
typedef int32_t (*shim_i32)(void*, int32_t*);
typedef int32_t (*shim_i64)(void*, int64_t*);
typedef int32_t (*shim_ptr)(void*, void**);
typedef int32_t (*shim_i64s)(void*, int64_t**);

static struct {
  PyObject* type;      /* NULL: not in use */
  Py_ssize_t offset;   /* of the at::Tensor in the object */
  int32_t strided;     /* aoti_torch_layout_strided() */
  shim_i32 layout, dtype;
  shim_ptr data_ptr;
  shim_i64 dim;
  shim_i64s sizes, strides;
} abi;

/* aoti_torch_get_current_cuda_stream (libtorch_cuda), set by stream_abi() once attnc/_torch_shim.py
 * has compared it with torch's own current stream; NULL: stream_fn (a Python call) gives the stream. */
typedef int32_t (*shim_stream)(int32_t, void**);
static shim_stream g_stream_shim;

typedef struct {
  void* ptr;
  int32_t dtype;
  int64_t dim;
  const int64_t *sizes, *strides;
} Meta;

/* 1 read, 0 not a strided tensor the shim reads (the Python API reads it). A tensor without
 * storage or with symbolic sizes makes the shim log its exception once per call; such tensors
 * (vmap's, nested ones) are refused by the drop-ins' checks anyway. */
static int read_meta(PyObject* o, Meta* m) {
  if (!abi.type || (PyObject*)Py_TYPE(o) != abi.type) return 0;
  void* t = (char*)o + abi.offset;
  int32_t layout;
  if (abi.layout(t, &layout) || layout != abi.strided) return 0;
  int64_t *sizes, *strides;
  if (abi.data_ptr(t, &m->ptr) || abi.dtype(t, &m->dtype) || abi.dim(t, &m->dim) || abi.sizes(t, &sizes) ||
      abi.strides(t, &strides))
    return 0;
  m->sizes = sizes, m->strides = strides;
  return 1;
}

enum { KEY_MAX = 4096, NEST_MAX = 4 };

typedef struct {
  char bytes[KEY_MAX];
  Py_ssize_t n;
} Key;

/* 1 appended, 0 the key is too long (the call is not keyed). */
static int put(Key* k, const void* p, size_t n) {
  if (k->n + (Py_ssize_t)n > KEY_MAX) return 0;
  memcpy(k->bytes + k->n, p, n);
  k->n += (Py_ssize_t)n;
  return 1;
}

static int put_tag(Key* k, char tag, long long v) { return put(k, &tag, 1) && put(k, &v, sizeof v); }

/* A tuple of ints (torch.Size, a stride tuple) into the key: 1, 0 when not ints, -1 on error. */
static int put_ints(Key* k, char tag, PyObject* t) {
  if (!t) return -1;
  Py_ssize_t n = PyTuple_Size(t);
  if (n < 0 || !put_tag(k, tag, n)) return n < 0 ? -1 : 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long v = PyLong_AsLongLong(PyTuple_GetItem(t, i));
    if (v == -1 && PyErr_Occurred()) return -1;
    if (!put(k, &v, sizeof v)) return 0;
  }
  return 1;
}

static int put_tensor(Key* k, PyObject* o) {
  Meta m;
  if (read_meta(o, &m)) {  /* pointer, dtype code, sizes, strides (never is_contiguous: all strides) */
    size_t n = (size_t)m.dim * sizeof(int64_t);
    return put_tag(k, 'A', (long long)(uintptr_t)m.ptr) && put_tag(k, 'd', m.dtype) && put_tag(k, 'S', m.dim) &&
           put(k, m.sizes, n) && put(k, m.strides, n);
  }
  PyObject* p = PyObject_CallMethodObjArgs(o, s_data_ptr, NULL);
  if (!p) return -1;
  unsigned long long ptr = PyLong_AsUnsignedLongLong(p);
  Py_DECREF(p);
  if (ptr == (unsigned long long)-1 && PyErr_Occurred()) return -1;
  PyObject* dtype = PyObject_GetAttr(o, s_dtype);
  if (!dtype) return -1;
  /* torch's dtype objects live as long as torch: their address names them */
  long long dt = (long long)(intptr_t)dtype;
  Py_DECREF(dtype);
  if (!put_tag(k, 'T', (long long)ptr) || !put(k, &dt, sizeof dt)) return 0;
  PyObject* shape = PyObject_GetAttr(o, s_shape);
  int r = put_ints(k, 'S', shape);
  Py_XDECREF(shape);
  if (r != 1) return r;
  /* contiguous: the strides follow from the shape (torch ignores those of size-1 dims, which no
     index reaches); else the strides themselves (cheaper to ask this first) */
  PyObject* contiguous = PyObject_CallMethodObjArgs(o, s_is_contiguous, NULL);
  if (!contiguous) return -1;
  Py_DECREF(contiguous);
  if (contiguous == Py_True) return put_tag(k, 'C', 0);
  PyObject* stride = PyObject_CallMethodObjArgs(o, s_stride, NULL);
  r = put_ints(k, 'D', stride);
  Py_XDECREF(stride);
  return r;
}

/* One argument into the key: 1, 0 when it cannot key a call (the caller takes the full path), -1
 * on error. None, bool, int, float, str, tuples and lists of those, and tensors of the init type. */
static int put_part(Key* k, PyObject* o, PyObject* tensor_type, int depth) {
  if (o == Py_None) return put_tag(k, 'N', 0);
  if (o == Py_True || o == Py_False) return put_tag(k, 'B', o == Py_True);
  if (PyLong_CheckExact(o)) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();  /* past 64 bits: not keyed */
      return 0;
    }
    return put_tag(k, 'I', v);
  }
  if (PyFloat_CheckExact(o)) {
    double d = PyFloat_AsDouble(o);
    long long bits;
    memcpy(&bits, &d, sizeof bits);
    return put_tag(k, 'F', bits);
  }
  if (PyUnicode_CheckExact(o)) {
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (!s) return -1;
    return put_tag(k, 'U', n) && put(k, s, (size_t)n);
  }
  if ((PyTuple_CheckExact(o) || PyList_CheckExact(o)) && depth < NEST_MAX) {
    int tuple = PyTuple_CheckExact(o);
    Py_ssize_t n = tuple ? PyTuple_Size(o) : PyList_Size(o);
    if (!put_tag(k, tuple ? '(' : '[', n)) return 0;
    for (Py_ssize_t i = 0; i < n; ++i) {
      int r = put_part(k, tuple ? PyTuple_GetItem(o, i) : PyList_GetItem(o, i), tensor_type, depth + 1);
      if (r != 1) return r;
    }
    return 1;
  }
  if (tensor_type && (PyObject*)Py_TYPE(o) == tensor_type) return put_tensor(k, o);
  return 0;
}

/* Packs args[first:] into k: 1, 0 when an argument cannot key a call, -1 on error. */
static int pack(Key* k, PyObject* const* args, Py_ssize_t first, Py_ssize_t n, PyObject* tensor_type) {
  k->n = 0;
  for (Py_ssize_t i = first; i < n; ++i) {
    int r = put_part(k, args[i], tensor_type, 0);
    if (r != 1) return r;
  }
  return 1;
}

/* The key of args[first:] as bytes; None when an argument cannot key a call; NULL on error. */
static PyObject* make_key(PyObject* const* args, Py_ssize_t first, Py_ssize_t n, PyObject* tensor_type) {
  Key k;
  int r = pack(&k, args, first, n, tensor_type);
  if (r < 0) return NULL;
  if (r == 0) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize(k.bytes, k.n);
}

/* A 64-bit hash of the key's bytes (multiply-xorshift over 8-byte words): the table is keyed by
 * it, and an entry keeps its whole key to compare, so a collision is a miss, never a wrong hit.
 * Cheaper than a bytes object and Python's SipHash of a ~500-byte key on every call. */
static unsigned long long hash_bytes(const char* p, Py_ssize_t n) {
  unsigned long long h = 0x243F6A8885A308D3ull ^ (unsigned long long)n;
  Py_ssize_t i = 0;
  for (; i + 8 <= n; i += 8) {
    unsigned long long w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  unsigned long long w = 0;
  memcpy(&w, p + i, (size_t)(n - i));
  h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

/* ------------------------------------------------------------------ Entry: a checked call */

typedef struct {
  PyObject_HEAD
  attnc_run_fn fn;
  void* handle;
  char* call;              /* the struct's bytes (the C API's call, merge or cache-write struct) */
  Py_ssize_t call_size;
  PyObject* device;        /* int: the CUDA device index */
  PyObject* var;           /* the Variant whose split-KV workspace the call follows, or None */
  Py_ssize_t o_off, lse_off, ws_off, wsb_off;  /* field offsets in the struct (-1: none) */
  PyObject* out_shape;     /* a tuple when out is allocated per call, else None */
  PyObject* dtype;         /* out's dtype */
  PyObject* lse_shape;     /* a tuple when lse is allocated per call (float32), else None */
  PyObject* key;           /* bytes: the key it was remembered under */
  int device_index;        /* device as a C int for the stream shim; -1 when it is no int */
} Entry;

static PyTypeObject* EntryType;

static void entry_dealloc(PyObject* self) {
  Entry* e = (Entry*)self;
  PyMem_Free(e->call);
  Py_XDECREF(e->device);
  Py_XDECREF(e->var);
  Py_XDECREF(e->out_shape);
  Py_XDECREF(e->dtype);
  Py_XDECREF(e->lse_shape);
  Py_XDECREF(e->key);
  PyTypeObject* tp = Py_TYPE(self);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(self);
  Py_DECREF(tp);
}

static int check_offset(Py_ssize_t off, size_t width, Py_ssize_t size, const char* name) {
  if (off >= 0 && off + (Py_ssize_t)width > size) {
    PyErr_Format(PyExc_ValueError, "Entry: %s offset %zd past the struct's %zd bytes", name, off, size);
    return 0;
  }
  return 1;
}

/* Entry(key, fn_address, handle, struct_bytes, device, var, o_off, lse_off, ws_off, wsb_off,
 *       out_shape, dtype, lse_shape) */
static PyObject* entry_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  unsigned long long fn, handle;
  const char* bytes;
  Py_ssize_t size, o_off, lse_off, ws_off, wsb_off;
  PyObject *key, *device, *var, *out_shape, *dtype, *lse_shape;
  if (kwargs && PyDict_Size(kwargs)) {
    PyErr_SetString(PyExc_TypeError, "Entry takes positional arguments only");
    return NULL;
  }
  if (!PyArg_ParseTuple(args, "SKKy#OOnnnnOOO:Entry", &key, &fn, &handle, &bytes, &size, &device, &var, &o_off,
                        &lse_off, &ws_off, &wsb_off, &out_shape, &dtype, &lse_shape))
    return NULL;
  if (!fn) {
    PyErr_SetString(PyExc_ValueError, "Entry: the function address is 0");
    return NULL;
  }
  if (!check_offset(o_off, 8, size, "o") || !check_offset(lse_off, 8, size, "lse") ||
      !check_offset(ws_off, 8, size, "workspace") || !check_offset(wsb_off, 8, size, "workspace_bytes"))
    return NULL;
  if ((out_shape != Py_None && o_off < 0) || (lse_shape != Py_None && lse_off < 0) ||
      (var != Py_None && (ws_off < 0 || wsb_off < 0))) {
    PyErr_SetString(PyExc_ValueError, "Entry: an allocated output or a workspace needs its field's offset");
    return NULL;
  }
  allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  Entry* e = (Entry*)alloc(type, 0);
  if (!e) return NULL;
  e->call = PyMem_Malloc((size_t)size);
  if (!e->call) {
    Py_DECREF(e);
    return PyErr_NoMemory();
  }
  memcpy(e->call, bytes, (size_t)size);
  e->fn = (attnc_run_fn)(uintptr_t)fn;
  e->handle = (void*)(uintptr_t)handle;
  e->call_size = size;
  e->o_off = o_off, e->lse_off = lse_off, e->ws_off = ws_off, e->wsb_off = wsb_off;
  Py_INCREF(device), Py_INCREF(var), Py_INCREF(out_shape), Py_INCREF(dtype), Py_INCREF(lse_shape), Py_INCREF(key);
  e->device = device, e->var = var, e->out_shape = out_shape, e->dtype = dtype, e->lse_shape = lse_shape;
  e->key = key;
  long index = PyLong_CheckExact(device) ? PyLong_AsLong(device) : -1;
  if (index == -1 && PyErr_Occurred()) PyErr_Clear();
  e->device_index = index >= 0 && index <= INT32_MAX ? (int)index : -1;
  return (PyObject*)e;
}

static void put_u64(char* call, Py_ssize_t off, unsigned long long v) { memcpy(call + off, &v, sizeof v); }

/* A fresh tensor from alloc(shape, dtype, device) with its pointer written at `off` of `call`. */
static PyObject* allocate(PyObject* shape, PyObject* dtype, PyObject* device, char* call, Py_ssize_t off) {
  PyObject* t = PyObject_CallFunctionObjArgs(g_alloc_fn, shape, dtype, device, NULL);
  if (!t) return NULL;
  Meta m;
  if (read_meta(t, &m)) {
    put_u64(call, off, (unsigned long long)(uintptr_t)m.ptr);
    return t;
  }
  PyObject* p = PyObject_CallMethodObjArgs(t, s_data_ptr, NULL);
  unsigned long long ptr = p ? PyLong_AsUnsignedLongLong(p) : 0;
  Py_XDECREF(p);
  if (!p || (ptr == (unsigned long long)-1 && PyErr_Occurred())) {
    Py_DECREF(t);
    return NULL;
  }
  put_u64(call, off, ptr);
  return t;
}

/* The entry's decode workspace follows its Variant's (grown by a larger call since). */
static int follow_workspace(Entry* e) {
  PyObject* p = PyObject_GetAttr(e->var, s_workspace_ptr);
  if (!p) return -1;
  unsigned long long ptr = p == Py_None ? 0 : PyLong_AsUnsignedLongLong(p);
  Py_DECREF(p);
  if (ptr == (unsigned long long)-1 && PyErr_Occurred()) return -1;
  unsigned long long have;
  memcpy(&have, e->call + e->ws_off, sizeof have);
  if (have == ptr) return 0;
  PyObject* b = PyObject_GetAttr(e->var, s_workspace_bytes);
  if (!b) return -1;
  unsigned long long bytes = PyLong_AsUnsignedLongLong(b);
  Py_DECREF(b);
  if (bytes == (unsigned long long)-1 && PyErr_Occurred()) return -1;
  put_u64(e->call, e->ws_off, ptr);
  put_u64(e->call, e->wsb_off, bytes);
  return 0;
}

/* The device's current stream: through torch's C shim where stream_abi() set it, else stream_fn. */
static int current_stream(Entry* e, void** stream) {
  if (g_stream_shim && e->device_index >= 0 && !g_stream_shim((int32_t)e->device_index, stream)) return 0;
  PyObject* s = PyObject_CallFunctionObjArgs(g_stream_fn, e->device, NULL);
  if (!s) return -1;
  *stream = PyLong_AsVoidPtr(s);
  Py_DECREF(s);
  return !*stream && PyErr_Occurred() ? -1 : 0;
}

/* Runs the entry: (out, lse), each the tensor allocated for this call or None. */
static PyObject* replay(Entry* e) {
  if (e->var != Py_None && follow_workspace(e) < 0) return NULL;
  PyObject *out = NULL, *lse = NULL, *result = NULL;
  char local[1024];
  char* call = e->call;
  int alloc = e->out_shape != Py_None || e->lse_shape != Py_None;
  if (alloc) {  /* the struct's copy gets this call's pointers */
    call = e->call_size <= (Py_ssize_t)sizeof local ? local : PyMem_Malloc((size_t)e->call_size);
    if (!call) return PyErr_NoMemory();
    memcpy(call, e->call, (size_t)e->call_size);
    if (e->out_shape != Py_None && !(out = allocate(e->out_shape, e->dtype, e->device, call, e->o_off))) goto done;
    if (e->lse_shape != Py_None && !(lse = allocate(e->lse_shape, Py_None, e->device, call, e->lse_off))) goto done;
  }
  void* stream;
  if (current_stream(e, &stream) < 0) goto done;
  int rc = e->fn(e->handle, call, stream);
  if (rc) {
    PyObject* r = PyObject_CallFunction(g_check_fn, "i", rc);  /* raises attnc's error */
    Py_XDECREF(r);
    if (!PyErr_Occurred()) PyErr_Format(PyExc_RuntimeError, "attnc: status %d", rc);
    goto done;
  }
  result = PyTuple_Pack(2, out ? out : Py_None, lse ? lse : Py_None);
done:
  if (alloc && call != local) PyMem_Free(call);
  Py_XDECREF(out);
  Py_XDECREF(lse);
  return result;
}

static PyType_Slot entry_slots[] = {
    {Py_tp_new, entry_new},
    {Py_tp_dealloc, entry_dealloc},
    {Py_tp_doc, "A checked drop-in call: Entry(key, fn_address, handle, struct_bytes, device, var, o_off, "
                "lse_off, ws_off, wsb_off, out_shape, dtype, lse_shape)"},
    {0, NULL}};

static PyType_Spec entry_spec = {"attnc._fast.Entry", sizeof(Entry), 0, Py_TPFLAGS_DEFAULT, entry_slots};

/* ------------------------------------------------------------------ module functions */

static PyObject* fast_init(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  if (n != 5) {
    PyErr_SetString(PyExc_TypeError, "init(tensor_type, table, stream_fn, check_fn, alloc_fn) takes 5 arguments");
    return NULL;
  }
  if (!PyDict_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "init: table must be a dict");
    return NULL;
  }
  PyObject** slots[] = {&g_tensor_type, &g_table, &g_stream_fn, &g_check_fn, &g_alloc_fn};
  for (int i = 0; i < 5; ++i) {
    PyObject* old = *slots[i];
    Py_INCREF(args[i]);
    *slots[i] = args[i];
    Py_XDECREF(old);
  }
  Py_RETURN_NONE;
}

/* run(*parts): the remembered call keyed by parts, replayed: a tuple (out, lse); on a miss its key
 * (bytes) to remember the checked call under (remember()); None when a part cannot key a call. */
static PyObject* fast_run(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  if (!g_table) {
    PyErr_SetString(PyExc_RuntimeError, "attnc._fast.run before init()");
    return NULL;
  }
  Key k;
  int r = pack(&k, args, 0, n, g_tensor_type);
  if (r < 0) return NULL;
  if (r == 0) Py_RETURN_NONE;
  PyObject* h = PyLong_FromUnsignedLongLong(hash_bytes(k.bytes, k.n));
  if (!h) return NULL;
  PyObject* e = PyDict_GetItemWithError(g_table, h);  /* borrowed */
  Py_DECREF(h);
  if (!e && PyErr_Occurred()) return NULL;
  if (e && Py_TYPE(e) != EntryType) {
    PyErr_SetString(PyExc_TypeError, "attnc._fast.run: the table holds something other than an Entry");
    return NULL;
  }
  if (!e || PyBytes_Size(((Entry*)e)->key) != k.n || memcmp(PyBytes_AsString(((Entry*)e)->key), k.bytes, (size_t)k.n))
    return PyBytes_FromStringAndSize(k.bytes, k.n);  /* a miss (or a colliding key: the same) */
  Py_INCREF(e);  /* the table may drop it while the call runs Python (alloc, stream) */
  PyObject* res = replay((Entry*)e);
  Py_DECREF(e);
  return res;
}

/* remember(entry): keeps an Entry in the table under its key's hash (replacing one there). */
static PyObject* fast_remember(PyObject* self, PyObject* e) {
  (void)self;
  if (Py_TYPE(e) != EntryType || !g_table) {
    PyErr_SetString(PyExc_TypeError, "remember takes an Entry, after init()");
    return NULL;
  }
  PyObject* key = ((Entry*)e)->key;
  PyObject* h = PyLong_FromUnsignedLongLong(hash_bytes(PyBytes_AsString(key), PyBytes_Size(key)));
  if (!h) return NULL;
  int rc = PyDict_SetItem(g_table, h, e);
  Py_DECREF(h);
  if (rc < 0) return NULL;
  Py_RETURN_NONE;
}

/* key(tensor_type, *parts): the key run() would use (bytes), or None. */
static PyObject* fast_key(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  if (n < 1) {
    PyErr_SetString(PyExc_TypeError, "key(tensor_type, *parts) needs the tensor type");
    return NULL;
  }
  return make_key(args, 1, n, args[0]);
}

/* tensor_abi(type, offset, layout_strided, get_layout, get_dtype, get_data_ptr, get_dim, get_sizes,
 * get_strides): objects of exactly `type` are read through the shim functions at those addresses
 * (the caller has checked them); tensor_abi(None) stops it. */
static PyObject* fast_tensor_abi(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self;
  if (n == 1 && args[0] == Py_None) {
    Py_CLEAR(abi.type);
    Py_RETURN_NONE;
  }
  if (n != 9 || !PyType_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError,
                    "tensor_abi(type, offset, layout_strided, get_layout, get_dtype, get_data_ptr, get_dim, get_sizes, "
                    "get_strides) or tensor_abi(None)");
    return NULL;
  }
  Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
  long strided = offset == -1 && PyErr_Occurred() ? -1 : PyLong_AsLong(args[2]);
  if (PyErr_Occurred()) return NULL;
  void* fns[6];
  for (int i = 0; i < 6; ++i) {
    fns[i] = PyLong_AsVoidPtr(args[3 + i]);
    if (fns[i]) continue;
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "tensor_abi: a function address is 0");
    return NULL;
  }
  PyObject* basic = PyObject_GetAttrString(args[0], "__basicsize__");
  Py_ssize_t size = basic ? PyLong_AsSsize_t(basic) : -1;
  Py_XDECREF(basic);
  if (size < 0) return NULL;
  if (offset < (Py_ssize_t)sizeof(PyObject) || offset + (Py_ssize_t)sizeof(void*) > size) {
    PyErr_Format(PyExc_ValueError, "tensor_abi: offset %zd is not inside the type's %zd-byte object", offset, size);
    return NULL;
  }
  PyObject* old = abi.type;
  Py_INCREF(args[0]);
  abi.type = args[0];
  Py_XDECREF(old);
  abi.offset = offset, abi.strided = (int32_t)strided;
  abi.layout = (shim_i32)fns[0], abi.dtype = (shim_i32)fns[1], abi.data_ptr = (shim_ptr)fns[2];
  abi.dim = (shim_i64)fns[3], abi.sizes = (shim_i64s)fns[4], abi.strides = (shim_i64s)fns[5];
  Py_RETURN_NONE;
}

/* stream_abi(address of aoti_torch_get_current_cuda_stream) or stream_abi(None). */
static PyObject* fast_stream_abi(PyObject* self, PyObject* fn) {
  (void)self;
  void* p = fn == Py_None ? NULL : PyLong_AsVoidPtr(fn);
  if (!p && PyErr_Occurred()) return NULL;
  g_stream_shim = (shim_stream)p;
  Py_RETURN_NONE;
}

static PyObject* int64s(const int64_t* v, int64_t n) {
  PyObject* t = PyTuple_New((Py_ssize_t)n);
  for (int64_t i = 0; t && i < n; ++i) {
    PyObject* x = PyLong_FromLongLong(v[i]);
    if (!x || PyTuple_SetItem(t, (Py_ssize_t)i, x) < 0) Py_CLEAR(t);
  }
  return t;
}

/* tensor_meta(t): (data_ptr, dtype code, sizes, strides) as the shim reads them, or None where
 * tensor_abi() does not read t (the check of the offset, and tests). */
static PyObject* fast_tensor_meta(PyObject* self, PyObject* o) {
  (void)self;
  Meta m;
  if (!read_meta(o, &m)) Py_RETURN_NONE;
  PyObject *sizes = int64s(m.sizes, m.dim), *strides = sizes ? int64s(m.strides, m.dim) : NULL;
  PyObject* r = strides ? Py_BuildValue("(KiOO)", (unsigned long long)(uintptr_t)m.ptr, (int)m.dtype, sizes, strides)
                        : NULL;
  Py_XDECREF(sizes);
  Py_XDECREF(strides);
  return r;
}

static PyMethodDef methods[] = {
    {"init", (PyCFunction)(void (*)(void))fast_init, METH_FASTCALL,
     "init(tensor_type, table, stream_fn, check_fn, alloc_fn)"},
    {"run", (PyCFunction)(void (*)(void))fast_run, METH_FASTCALL,
     "run(*parts) -> (out, lse) on a hit, the key (bytes) on a miss, None when not keyable"},
    {"key", (PyCFunction)(void (*)(void))fast_key, METH_FASTCALL, "key(tensor_type, *parts) -> bytes or None"},
    {"remember", fast_remember, METH_O, "remember(entry): into the table under its key's hash"},
    {"tensor_abi", (PyCFunction)(void (*)(void))fast_tensor_abi, METH_FASTCALL,
     "tensor_abi(type, offset, layout_strided, get_layout, get_dtype, get_data_ptr, get_dim, get_sizes, get_strides)"
     " or tensor_abi(None): read tensors of `type` through torch's C shim"},
    {"stream_abi", fast_stream_abi, METH_O,
     "stream_abi(address of aoti_torch_get_current_cuda_stream) or stream_abi(None): the replay's stream in C"},
    {"tensor_meta", fast_tensor_meta, METH_O, "tensor_meta(t) -> (data_ptr, dtype, sizes, strides) or None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) {
  PyObject* m = PyModule_Create(&module);
  if (!m) return NULL;
  const char* names[] = {"data_ptr", "shape", "stride", "dtype", "is_contiguous", "workspace_ptr", "workspace_bytes"};
  PyObject** interned[] = {&s_data_ptr, &s_shape,         &s_stride,        &s_dtype,
                           &s_is_contiguous, &s_workspace_ptr, &s_workspace_bytes};
  for (int i = 0; i < 7; ++i)
    if (!(*interned[i] = PyUnicode_InternFromString(names[i]))) goto fail;
  EntryType = (PyTypeObject*)PyType_FromSpec(&entry_spec);
  if (!EntryType) goto fail;
  Py_INCREF(EntryType);
  if (PyModule_AddObject(m, "Entry", (PyObject*)EntryType) < 0) {
    Py_DECREF(EntryType);
    goto fail;
  }
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
