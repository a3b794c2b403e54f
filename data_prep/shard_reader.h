// The shard reader process: `mlbert-shard-reader` runs the HDF5 shard readers (hdf5_direct.h) on
// behalf of the process that links data_prep, whose readers (hdf5_io.h) send it one request at a
// time over a socket and decode the samples it sends back.
//
// Design choice: corrupt HDF5 files are contained, not pre-validated. The HDF5 library parses a
// file's metadata (object headers, B-trees, global heaps) with too little checking to be safe on
// arbitrary bytes: fuzzing found it looping forever on a corrupt global heap and asking malloc for
// exabytes. Checking the bytes before HDF5 sees them would mean writing a second HDF5 parser, so
// instead the library runs in a child process; when it crashes, or does not answer within the
// timeout, the child is killed, the read throws an error naming the file, and the next read starts
// a fresh child. One child serves the whole process (started on the first read, requests
// serialized by a mutex); it exits when the socket closes and never outlives its parent.
//
// Inside the reader process: the process itself never reads a shard. Each one-shot read runs in a
// fork of it, so its answer depends on the file and the request only (HDF5 1.10 reading a corrupt
// shard can fill rows from memory the file does not define, and a persistent process answered a
// corrupt shard differently after reading another); a fork that crashes is an error answer and
// the reader serves on. The shards ShardReader keeps open live in one child of it, the keeper
// (their metadata cached across reads is what makes a loader's small reads cheap), restarted
// when HDF5 crashes in it.
#pragma once
#include <filesystem>

namespace mlbert::data {

// The reader the client starts: $MLBERT_SHARD_READER, else `mlbert-shard-reader` next to the
// running executable.
std::filesystem::path shard_reader_executable();

// Seconds one request may take before the reader is killed: $MLBERT_SHARD_READ_TIMEOUT (a
// positive number), else 600.
double shard_read_timeout_seconds();

// The reader's main loop: answers requests on `fd` until the peer closes it. Returns the exit
// status for main().
int serve_shard_reads(int fd);

}  // namespace mlbert::data
