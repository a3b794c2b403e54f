// Sample encoding: count, then per sample its token and prediction counts, NSP label and arrays.
#include "data_prep/sample_codec.h"

namespace mlbert::data {

void put_samples(ByteWriter& out, std::span<const Sample> samples) {
  out.put<std::uint32_t>(static_cast<std::uint32_t>(samples.size()));
  for (const auto& s : samples) {
    out.put<std::uint32_t>(static_cast<std::uint32_t>(s.input_ids.size()));
    out.put<std::uint32_t>(static_cast<std::uint32_t>(s.masked_lm_positions.size()));
    out.put<std::int8_t>(s.next_sentence_label);
    out.put_array(s.input_ids);
    out.put_array(s.segment_ids);
    out.put_array(s.masked_lm_positions);
    out.put_array(s.masked_lm_ids);
  }
}

std::vector<Sample> get_samples(ByteReader& in) {
  const auto count = in.get<std::uint32_t>();
  if (count > in.remaining()) throw std::runtime_error(in.origin() + ": corrupt sample count");
  std::vector<Sample> samples(count);
  for (auto& s : samples) {
    const auto tokens = in.get<std::uint32_t>();
    const auto masked = in.get<std::uint32_t>();
    if (tokens > in.remaining() || masked > tokens)
      throw std::runtime_error(in.origin() + ": corrupt sample sizes");
    s.next_sentence_label = in.get<std::int8_t>();
    s.input_ids = in.get_array<std::int32_t>(tokens);
    s.segment_ids = in.get_array<std::int8_t>(tokens);
    s.masked_lm_positions = in.get_array<std::int32_t>(masked);
    s.masked_lm_ids = in.get_array<std::int32_t>(masked);
  }
  return samples;
}

std::vector<std::byte> serialize_samples(std::span<const Sample> samples) {
  ByteWriter out;
  put_samples(out, samples);
  return std::move(out.bytes());
}

std::vector<Sample> deserialize_samples(std::span<const std::byte> bytes,
                                        const std::string& origin) {
  ByteReader in(bytes, origin);
  auto samples = get_samples(in);
  if (!in.done()) throw std::runtime_error(origin + ": trailing bytes after the samples");
  return samples;
}

}  // namespace mlbert::data
