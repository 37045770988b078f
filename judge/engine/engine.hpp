// AllocLab's serving engine: a worked example of the six allocators in one system.
//
// Read in this order: model_config.hpp (the shape), arithmetic.hpp (the rounding and the slot
// formula, named once), kernels.hpp (batch-invariant arithmetic), model.hpp (the decoder and
// its KV layout), sampler.hpp, trace.hpp (the workload), block_managers.hpp (reserve, paged,
// prefix, virtual), sequence.hpp (a sequence and the waiting queue), scheduler.hpp (schedule,
// preempt, postprocess), step_inputs.hpp (a step's metadata in the arena, packed into the ring),
// model_runner.hpp (the forward pass, on its own thread), metrics.hpp (what a run measures),
// served_engine.hpp (the engine, whose step ties them together), plain_engine.hpp (the oracle).
#pragma once

#include "arithmetic.hpp"
#include "block_managers.hpp"
#include "engine_options.hpp"
#include "host_device.hpp"
#include "kernels.hpp"
#include "metrics.hpp"
#include "model.hpp"
#include "model_config.hpp"
#include "model_runner.hpp"
#include "plain_engine.hpp"
#include "random.hpp"
#include "results.hpp"
#include "sampler.hpp"
#include "scheduler.hpp"
#include "sequence.hpp"
#include "served_engine.hpp"
#include "step_inputs.hpp"
#include "trace.hpp"
