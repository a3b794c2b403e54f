// mlbert-shard-reader: the process the shard readers of hdf5_io.h run HDF5 in (shard_reader.h).
// It serves requests on its standard input, a socket set up by the process that started it.
#include <unistd.h>

#include "data_prep/shard_reader.h"

int main() {
  return mlbert::data::serve_shard_reads(STDIN_FILENO);
}
