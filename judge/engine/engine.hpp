// AllocLab's serving engine: a worked example of the six allocators in one system.
//
// Read in this order: model_config.hpp (the shape), kernels.hpp (batch-invariant arithmetic),
// model.hpp (the decoder and its KV layout), sampler.hpp, trace.hpp (the workload),
// block_managers.hpp (reserve, paged, prefix), served_engine.hpp (the scheduler, the
// allocators, the two threads), plain_engine.hpp (the oracle).
#pragma once

#include "arithmetic.hpp"
#include "block_managers.hpp"
#include "host_device.hpp"
#include "kernels.hpp"
#include "model.hpp"
#include "model_config.hpp"
#include "plain_engine.hpp"
#include "random.hpp"
#include "results.hpp"
#include "sampler.hpp"
#include "served_engine.hpp"
#include "trace.hpp"
