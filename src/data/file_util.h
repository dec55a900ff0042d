// File helpers for ember::data readers and writers (internal).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember::data::detail {

/// The whole file. Throws "[op] <path>: cannot open (<reason>)" or a read error.
std::vector<unsigned char> read_file(const std::string& path, const char* op);
/// True when the bytes start with the gzip magic 1f 8b.
bool is_gzip(const std::vector<unsigned char>& bytes);
/// Decompresses gzip (or zlib) data: every member of a multi-member gzip file, concatenated (as
/// gzip -d), ignoring trailing zero bytes (padding, as Python's gzip). Throws "[op] <path>: gzip
/// error: ..." when corrupt or truncated, or for other bytes after the last member.
std::vector<unsigned char> gunzip(const std::vector<unsigned char>& bytes, const std::string& path,
                                  const char* op);
/// gzip-compresses bytes (level 6).
std::vector<unsigned char> gzip(const unsigned char* data, size_t n, const char* op);

}  // namespace ember::data::detail
