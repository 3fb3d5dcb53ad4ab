/* gcomm datatypes: MPI derived datatypes for host and GPU memory.
 *
 * The constructors, bounds and pack semantics are MPI's (MPI-4.1 chapter 5), so that an MPI
 * programmer can read every call at a glance. No initialisation call is needed: the predefined
 * types are usable from program start, with or without MPI, with or without a GPU.
 *
 * Handles are reference counted: a derived type keeps the types it was built from alive, so
 * freeing a child after building its parent is safe (as in MPI). */
#ifndef GCOMM_DATATYPE_H
#define GCOMM_DATATYPE_H

#include <stddef.h>
#include <stdint.h>

#include "gcomm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gcomm_datatype_s *gcomm_datatype;

#define GCOMM_DATATYPE_NULL ((gcomm_datatype)0)

/* Predefined types. X-macro: name suffix, C storage size in bytes, natural alignment.
 * The order is part of the ABI (type ids index the table). */
#define GCOMM_BASIC_TYPE_LIST(X)                                                             \
    X(BYTE, 1, 1)                                                                            \
    X(CHAR, 1, 1)                                                                            \
    X(INT8, 1, 1)                                                                            \
    X(UINT8, 1, 1)                                                                           \
    X(INT16, 2, 2)                                                                           \
    X(UINT16, 2, 2)                                                                          \
    X(INT32, 4, 4)                                                                           \
    X(UINT32, 4, 4)                                                                          \
    X(INT64, 8, 8)                                                                           \
    X(UINT64, 8, 8)                                                                          \
    X(INT, sizeof(int), _Alignof(int))                                                       \
    X(LONG, sizeof(long), _Alignof(long))                                                    \
    X(FLOAT16, 2, 2)                                                                         \
    X(BFLOAT16, 2, 2)                                                                        \
    X(FLOAT, 4, 4)                                                                           \
    X(DOUBLE, 8, 8)

typedef enum {
#define GCOMM_BASIC_ENUM(name, size, align) GCOMM_TYPEID_##name,
    GCOMM_BASIC_TYPE_LIST(GCOMM_BASIC_ENUM)
#undef GCOMM_BASIC_ENUM
    GCOMM_TYPEID_COUNT
} gcomm_typeid_t;

/* The predefined objects live in the library; the macros are address constants, so they can
 * appear in static initialisers. Each object is padded to a fixed size (as Open MPI does), so that
 * programs linked against one release keep working with the next: an executable may hold a copy
 * of an exported object whose size it learnt at link time. */
struct gcommi_predefined_type_s;
#define GCOMM_BASIC_DECL(name, size, align) extern struct gcommi_predefined_type_s gcommi_type_##name;
GCOMM_BASIC_TYPE_LIST(GCOMM_BASIC_DECL)
#undef GCOMM_BASIC_DECL
#define GCOMMI_PREDEFINED(name) ((gcomm_datatype)&gcommi_type_##name)

#define GCOMM_BYTE GCOMMI_PREDEFINED(BYTE)
#define GCOMM_CHAR GCOMMI_PREDEFINED(CHAR)
#define GCOMM_INT8 GCOMMI_PREDEFINED(INT8)
#define GCOMM_UINT8 GCOMMI_PREDEFINED(UINT8)
#define GCOMM_INT16 GCOMMI_PREDEFINED(INT16)
#define GCOMM_UINT16 GCOMMI_PREDEFINED(UINT16)
#define GCOMM_INT32 GCOMMI_PREDEFINED(INT32)
#define GCOMM_UINT32 GCOMMI_PREDEFINED(UINT32)
#define GCOMM_INT64 GCOMMI_PREDEFINED(INT64)
#define GCOMM_UINT64 GCOMMI_PREDEFINED(UINT64)
#define GCOMM_INT GCOMMI_PREDEFINED(INT)
#define GCOMM_LONG GCOMMI_PREDEFINED(LONG)
#define GCOMM_FLOAT16 GCOMMI_PREDEFINED(FLOAT16)
#define GCOMM_BFLOAT16 GCOMMI_PREDEFINED(BFLOAT16)
#define GCOMM_FLOAT GCOMMI_PREDEFINED(FLOAT)
#define GCOMM_DOUBLE GCOMMI_PREDEFINED(DOUBLE)

/* Array orders for subarray and darray. */
enum { GCOMM_ORDER_C = 56, GCOMM_ORDER_FORTRAN = 57 };

/* Distributions for darray (MPI_DISTRIBUTE_*). */
enum {
    GCOMM_DISTRIBUTE_BLOCK = 121,
    GCOMM_DISTRIBUTE_CYCLIC = 122,
    GCOMM_DISTRIBUTE_NONE = 123,
    GCOMM_DISTRIBUTE_DFLT_DARG = -49767
};

/* Constructors: MPI semantics. Counts and blocklengths must be >= 0 (GCOMM_ERR_COUNT); arrays may
 * be NULL only when count is 0 (GCOMM_ERR_ARG); a result whose size or extent overflows 63 bits is
 * refused (GCOMM_ERR_OVERFLOW). Strides and displacements of vector/indexed are in multiples of the
 * old type's extent, those of the h-variants in bytes; both may be negative. */
int gcomm_type_contiguous(int count, gcomm_datatype oldtype, gcomm_datatype *newtype);
int gcomm_type_vector(int count, int blocklength, int stride, gcomm_datatype oldtype,
                      gcomm_datatype *newtype);
int gcomm_type_hvector(int count, int blocklength, ptrdiff_t stride, gcomm_datatype oldtype,
                       gcomm_datatype *newtype);
int gcomm_type_indexed(int count, const int blocklengths[], const int displacements[],
                       gcomm_datatype oldtype, gcomm_datatype *newtype);
int gcomm_type_hindexed(int count, const int blocklengths[], const ptrdiff_t displacements[],
                        gcomm_datatype oldtype, gcomm_datatype *newtype);
int gcomm_type_indexed_block(int count, int blocklength, const int displacements[],
                             gcomm_datatype oldtype, gcomm_datatype *newtype);
int gcomm_type_hindexed_block(int count, int blocklength, const ptrdiff_t displacements[],
                              gcomm_datatype oldtype, gcomm_datatype *newtype);
int gcomm_type_struct(int count, const int blocklengths[], const ptrdiff_t displacements[],
                      const gcomm_datatype types[], gcomm_datatype *newtype);
/* order: GCOMM_ORDER_C or GCOMM_ORDER_FORTRAN. 0 <= starts[i], 1 <= subsizes[i],
 * starts[i] + subsizes[i] <= sizes[i]. The result has lb 0 and the extent of the whole array. */
int gcomm_type_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[],
                        int order, gcomm_datatype oldtype, gcomm_datatype *newtype);
/* MPI_Type_create_darray: the part of a distributed ndims-dimensional array that process `rank`
 * of a size-process grid owns (HPF block / cyclic distributions). */
int gcomm_type_darray(int size, int rank, int ndims, const int gsizes[], const int distribs[],
                      const int dargs[], const int psizes[], int order, gcomm_datatype oldtype,
                      gcomm_datatype *newtype);
int gcomm_type_resized(gcomm_datatype oldtype, ptrdiff_t lb, ptrdiff_t extent,
                       gcomm_datatype *newtype);
int gcomm_type_dup(gcomm_datatype oldtype, gcomm_datatype *newtype);

/* Commit normalises the type for fast packing (idempotent; predefined types are committed).
 * Pack and unpack need a committed type; the queries below work on any live type. */
int gcomm_type_commit(gcomm_datatype *type);
/* Releases the caller's reference and sets *type to GCOMM_DATATYPE_NULL. Types built from it stay
 * valid. Freeing a predefined type is an error. */
int gcomm_type_free(gcomm_datatype *type);

int gcomm_type_size(gcomm_datatype type, size_t *size);
int gcomm_type_get_extent(gcomm_datatype type, ptrdiff_t *lb, ptrdiff_t *extent);
int gcomm_type_get_true_extent(gcomm_datatype type, ptrdiff_t *true_lb, ptrdiff_t *true_extent);
/* Number of basic elements in one instance of the type (MPI_Get_elements for a whole count). */
int gcomm_type_get_elements(gcomm_datatype type, size_t *elements);

/* Type signatures (the sequence of basic types, MPI 3.3.1). *match is set to 1 when the signature
 * of sendcount x sendtype is a prefix of (or equal to) that of recvcount x recvtype, so that a
 * message sent with the one can be received with the other; 0 otherwise. */
int gcomm_type_match(gcomm_datatype sendtype, size_t sendcount, gcomm_datatype recvtype,
                     size_t recvcount, int *match);

/* Pack and unpack. Buffers may be host or GPU memory (detected per pointer). MPI_Pack's position
 * semantics: data goes to outbuf + *position and *position advances by the packed size. A buffer
 * too small for the whole operation returns GCOMM_ERR_TRUNCATE and writes nothing. */
int gcomm_pack_size(size_t incount, gcomm_datatype type, size_t *size);
int gcomm_pack(const void *inbuf, size_t incount, gcomm_datatype type, void *outbuf,
               size_t outsize, size_t *position);
int gcomm_unpack(const void *inbuf, size_t insize, size_t *position, void *outbuf,
                 size_t outcount, gcomm_datatype type);
/* Bytes [offset, offset + bytes) of the packed stream of incount x type only (the unit of
 * pipelining): pack writes them to outbuf[0 .. bytes), unpack reads them from inbuf[0 .. bytes).
 * The cost is independent of offset: the type is not re-walked from its start. On the CPU a range
 * of 4 KiB or more is copied with the loops of the whole incount x type (past the caches as the
 * whole operation would be), so ranges of 64 KiB and more cost about what one call does. A range
 * that extends past the packed stream is GCOMM_ERR_ARG (nothing is written). */
int gcomm_pack_range(const void *inbuf, size_t incount, gcomm_datatype type, size_t offset,
                     size_t bytes, void *outbuf);
int gcomm_unpack_range(const void *inbuf, size_t offset, size_t bytes, void *outbuf,
                       size_t outcount, gcomm_datatype type);
/* Per-call options of a range call, for pipelining on GPUs: the stream, a limit on the thread
 * blocks its kernel may use (so that it can run beside a user kernel), and whether to wait. */
typedef struct {
    void *stream;   /* cudaStream_t (NULL: the legacy default stream) */
    int max_blocks; /* most thread blocks of the call's kernel; 0: GCOMM_PACK_MAX_BLOCKS or
                       automatic (16 per multiprocessor) */
    int wait;       /* nonzero: return when the bytes are in place; 0: return once enqueued */
} gcomm_pack_opts_t;
#define GCOMM_PACK_OPTS_INIT {NULL, 0, 1}

/* gcomm_pack_range / gcomm_unpack_range with options (opts NULL: GCOMM_PACK_OPTS_INIT). Host
 * memory on both sides is copied before returning, after earlier work on opts->stream. */
int gcomm_pack_range_opts(const void *inbuf, size_t incount, gcomm_datatype type, size_t offset,
                          size_t bytes, void *outbuf, const gcomm_pack_opts_t *opts);
int gcomm_unpack_range_opts(const void *inbuf, size_t offset, size_t bytes, void *outbuf,
                            size_t outcount, gcomm_datatype type, const gcomm_pack_opts_t *opts);

/* Asynchronous forms take a cudaStream_t passed as void* (NULL: the default stream). On host
 * memory they complete before returning. */
int gcomm_pack_async(const void *inbuf, size_t incount, gcomm_datatype type, void *outbuf,
                     size_t outsize, size_t *position, void *stream);
int gcomm_unpack_async(const void *inbuf, size_t insize, size_t *position, void *outbuf,
                       size_t outcount, gcomm_datatype type, void *stream);
/* Copies between two layouts with matching type signatures in one pass (e.g. a transpose). The
 * source signature must be a prefix of the destination's (GCOMM_ERR_TYPE_MISMATCH otherwise);
 * src and dst must not overlap.
 * With GPU memory and a non-NULL stream the copy is enqueued on that stream and may still be
 * running when the call returns; with a NULL stream, or when host memory is involved, it is
 * complete on return. */
int gcomm_copy(const void *src, size_t srccount, gcomm_datatype srctype, void *dst,
               size_t dstcount, gcomm_datatype dsttype, void *stream);

/* A committed type as device code sees it, for the typed put/get of the device API
 * (gcomm/device.cuh): pass it to a kernel by value. Its fields are internal. It points at the
 * type's copy in the memory of one GPU (made on first use, freed with the type), so it is valid
 * on that GPU only and only while the type lives: free the type after the kernels that use it. */
typedef struct {
    const void *nodes;    /* the committed layout, in the GPU's memory */
    const int64_t *aux;
    int64_t size;         /* packed bytes of one instance */
    int64_t extent;       /* distance between instances */
    int64_t true_lb;      /* the bytes one instance touches: [true_lb, true_ub) */
    int64_t true_ub;
    int64_t align;        /* widest aligned access of a word-by-word traversal (<= 16) */
} gcomm_device_type_t;

/* Fills *out with the handle of a committed type for kernels on CUDA device `device` (uploads
 * the type's layout to it on first use; GCOMM_ERR_NO_DEVICE without CUDA or that device), or
 * for host ranks with device = GCOMM_DEVICE_HOST (the layout in host memory; no GPU needed). */
#define GCOMM_DEVICE_HOST (-1)
int gcomm_type_device(gcomm_datatype type, int device, gcomm_device_type_t *out);

#ifdef __cplusplus
}
#endif

#endif /* GCOMM_DATATYPE_H */
