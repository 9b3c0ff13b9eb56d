/* tapegrad: a tape-based autograd training micro-framework in C.
 * The umbrella header: the public API of every layer of libtapegrad.
 * Training on several processes is a library of its own, libtapegrad_dist
 * (MPI): its header is distributed/dist.h. */
#ifndef TAPEGRAD_H
#define TAPEGRAD_H

#include "core/tensor.h"
#include "core/graph.h"
#include "core/params.h"
#include "core/rng.h"
#include "core/gradcheck.h"
#include "core/op.h"
#include "core/alloc.h"
#include "core/parallel.h"
#include "core/cpu.h"
#include "core/safetensors.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "ops/ops.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "text/text.h"
#include "train/train.h"
#include "pictures/pictures.h"
#include "formats/formats.h"

#endif
