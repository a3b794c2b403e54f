// The compute network a submission's system description states in its free-text host_networking
// field, as `mlbert simulate --results` reads it.
//
// Design choice: the text is read, never trusted to a fixed format (every submitter words it
// differently); the compute fabric is the adapter group of the most bandwidth, and what the text
// does not state (the count) is said so (count_stated) for the caller to name its default.
#pragma once

#include <optional>
#include <string>

namespace mlbert::simulate {

// The compute NICs a system description's host_networking states. A labelled text ("Storage: ...,
// Compute: 8x ConnectX-6 IB HDR 200Gb/Sec, Management: ...") is read in its compute part only, else
// every part not labelled storage, management or front end. A part may list several adapters
// (", ", "; ", " + "): the compute fabric is the one of the most bandwidth ("1x Ethernet 40Gb/Sec,
// 8x ConnectX-6 IB HDR 200Gb/Sec" is the eight HDR NICs), one naming storage or management only
// when no other states a speed. An adapter's speed: the first number with Gb/s, Gbps, Gbit/s, GbE
// or G (Tb/s x 1000), else an InfiniBand generation (EDR 100, HDR 200, NDR 400, XDR 800; "HDR100"
// 100). Its count: "8x" before the speed (an item without a speed counts with the next: "2x
// ConnectX-6, 100Gb/s"), else "x 8" after it, else one NIC (count_stated false). nullopt when no
// adapter states a speed.
struct ComputeNics {
  int count = 1;         // per node
  double gbps_each = 0;  // line rate of each, Gb/s
  bool count_stated = false;
};
std::optional<ComputeNics> parse_compute_nics(const std::string& host_networking);

}  // namespace mlbert::simulate
