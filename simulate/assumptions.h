// The assumptions a prediction lists (internal to the simulator): where every figure of its
// compute and its reduction comes from, in words, in the order the output prints them.
#pragma once

#include "simulate/simulator.h"
#include "simulate/step.h"

namespace mlbert::simulate {

// The assumptions behind the compute columns: convergence, lengths, the deal, the profile, the
// kernels.
void compute_assumptions(const StepContext& c, const LengthSource& lengths,
                         const AcceleratorProfile& profile, Prediction& p);

// The assumptions behind the gradients' reduction and passes, the optimizer, the host, the
// evaluation and the network, then the cluster's notes.
void reduction_assumptions(const StepContext& c, const ClusterRun& cluster, Prediction& p);

}  // namespace mlbert::simulate
