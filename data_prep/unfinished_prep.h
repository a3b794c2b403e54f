// The mark of a `data prep` that has not finished: a file in its output folder from before the
// first shard is written until the length index describes them all, so that a prep killed at any
// moment (SIGKILL, a power cut) leaves a folder that every reader refuses by name instead of
// shards without an index, or an index that lists another run's shards.
//
// Design choice: the mark names its writer (this machine's key and pid) and the shards that run
// plans. Readers refuse a folder marked by any other process; the prep that wrote it lists its own
// folder freely; a rerun, holding the folder's lock (prep_folder.h), takes the mark over and
// removes the shards the unfinished run planned that the rerun does not write again.
#pragma once
#include <filesystem>
#include <vector>

namespace mlbert::data {

// `<dir>/.mlbert-prep-unfinished`.
std::filesystem::path unfinished_prep_mark(const std::filesystem::path& dir);

// Throws "<dir>: ... did not finish ..." (or "... is writing it now ...") when `dir` holds a mark
// that another process wrote.
void refuse_unfinished_prep(const std::filesystem::path& dir);

// The shards an earlier, unfinished prep into `dir` planned (absolute paths under `dir`); empty
// when `dir` holds no mark. The caller holds the folder's lock.
std::vector<std::filesystem::path> unfinished_prep_shards(const std::filesystem::path& dir);

// Writes this process's mark for the shards `planned`, durably, before the first of them.
void mark_prep_unfinished(const std::filesystem::path& dir,
                          const std::vector<std::filesystem::path>& planned);

// Removes the mark once the index describes the folder's shards (or a failed run was undone).
void mark_prep_finished(const std::filesystem::path& dir);

}  // namespace mlbert::data
