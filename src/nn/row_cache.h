// A host's shared copy of a job's training rows. Every handler process of a job makes its step
// inputs from its own copy of the data (LoadDataset); on one machine those copies are the same
// bytes, made again by each process and held once per process. A row cache is a directory where
// the first process to load a job's rows leaves them in one file, `<key>.rows`, that the others
// map read-only: the rows are then held once by the page cache whatever the number of processes,
// a restarted process has them in the time it takes to check their hash instead of the time to
// read and preprocess its files again, and the kernel reaps a killed process without freeing them
// (measured here: 0.7 ms for 320 MB mapped from a file, 25 ms when the same bytes were its own).
//
// The file: a 4096-byte header (magic "ACANROW1", rows, features, target width, classes,
// classification, standardisation count, the rows' DataSha256 and the SHA-256 of the
// standardisation figures, as hex), then the inputs, the targets, and the figures, as
// little-endian float32. A file is written under a temporary name and renamed, so a reader sees a
// whole file or none; a reader checks the sizes against the file's length and both hashes
// against the bytes before it hands the rows out: a damaged file is a DataLoss naming it, never
// wrong rows. The key (RowCacheKey) covers what LoadDataset reads; the content hash, not the key,
// is what a job's processes compare. Stateless functions; thread-safe; processes may race to write
// the same key (each renames a whole file of the same rows).
#pragma once

#include <optional>
#include <string>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/dataset.h"

namespace acan::nn {

// SHA-256 (hex) of what LoadDataset(job) depends on: the [data] section's training keys, the
// model's input and output widths and loss, the seed (synthetic data), and for each data file its
// resolved path, size and modification time.
std::string RowCacheKey(const JobConfig& job);

// The rows and their DataSha256.
struct CachedRows {
  Dataset data;
  std::string sha256;
};

// Writes `rows` (not mapped) to dir/<key>.rows; `dir` is created when missing.
Status WriteRowCache(const std::string& dir, const std::string& key, const CachedRows& rows);

// dir/<key>.rows mapped and checked; nullopt when there is no such file.
Result<std::optional<CachedRows>> MapRowCache(const std::string& dir, const std::string& key);

// LoadDataset(job) through the cache in `dir`: the mapped file when it is there and whole, else
// the rows loaded from the job's data, written to the cache and mapped from it (a damaged file is
// replaced; a cache that cannot be written leaves the rows loaded in memory, with `note` saying
// why). An empty `dir` is LoadDataset with the rows' hash.
Result<CachedRows> LoadDatasetShared(const JobConfig& job, const std::string& dir,
                                     std::string* note = nullptr);

}  // namespace acan::nn
