/* matrix.h: a weight matrix as the kernels read it (engine-internal).  The
 * model (model.h) is made of these; the kernels need nothing else of it. */
#ifndef ELMCHAT_ENGINE_KERNELS_MATRIX_H
#define ELMCHAT_ENGINE_KERNELS_MATRIX_H

#include <stdint.h>

#include "engine/elm.h"

/* A row-major [rows, cols] weight matrix, PyTorch [out, in] layout. */
struct elm_matrix {
    const void *data; /* rows * cols elements of dtype, borrowed from a mapping */
    enum elm_dtype dtype;
    int64_t rows, cols;
};

#endif
