// File helpers: whole-file reads and gzip through zlib (atomic writes: core/atomic_file.h).
#include "data/file_util.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ember/error.h"

namespace ember::data::detail {

std::vector<unsigned char> read_file(const std::string& path, const char* op) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) EMBER_FAIL(op, path, ": is a directory, not a file");
  // A FIFO, socket or device would block the open or the read (a FIFO without a writer: forever).
  if (!ec && !std::filesystem::is_regular_file(st))
    EMBER_FAIL(op, path, ": not a regular file (a FIFO, socket or device)");
  std::ifstream f(path, std::ios::binary);
  if (!f) EMBER_FAIL(op, path, ": cannot open (", std::strerror(errno), ")");
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0) EMBER_FAIL(op, path, ": cannot read (not a regular file?)");
  f.seekg(0, std::ios::beg);
  std::vector<unsigned char> bytes(static_cast<size_t>(size));
  if (size > 0 && !f.read(reinterpret_cast<char*>(bytes.data()), size))
    EMBER_FAIL(op, path, ": read error after ", f.gcount(), " of ", size, " bytes");
  return bytes;
}

bool is_gzip(const std::vector<unsigned char>& b) {
  return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

std::vector<unsigned char> gunzip(const std::vector<unsigned char>& in, const std::string& path,
                                  const char* op) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) EMBER_FAIL(op, path, ": gzip error: inflateInit2 failed");
  std::vector<unsigned char> out;
  // The gzip trailer holds the size mod 2^32: a good first guess.
  size_t guess = in.size() * 4;
  if (in.size() >= 18) {
    const size_t n = in.size();
    guess = size_t(in[n - 4]) | size_t(in[n - 3]) << 8 | size_t(in[n - 2]) << 16 |
            size_t(in[n - 1]) << 24;
  }
  // A truncated file's "trailer" is arbitrary bytes: cap the guess (deflate expands <= 1032x).
  guess = std::min({guess, in.size() * 1032, size_t(1) << 28});
  out.resize(std::max<size_t>(guess, 1024));
  size_t fed = 0;  // bytes of `in` handed to zlib (at most 1 GiB at a time: avail_in is 32-bit)
  auto feed = [&] {
    const size_t k = std::min<size_t>(in.size() - fed, 1u << 30);
    z.next_in = const_cast<unsigned char*>(in.data()) + fed;
    z.avail_in = uInt(k);
    fed += k;
  };
  feed();
  size_t produced = 0;
  int rc = Z_OK;
  for (;;) {
    if (z.avail_in == 0 && fed < in.size()) feed();
    if (produced == out.size()) out.resize(out.size() * 2);
    z.next_out = out.data() + produced;
    const size_t room = std::min<size_t>(out.size() - produced, 1u << 30);
    z.avail_out = uInt(room);
    rc = inflate(&z, Z_NO_FLUSH);
    produced += room - z.avail_out;
    if (rc == Z_STREAM_END) {
      // As gzip -d (and Python's gzip): the file may hold several members, concatenated, each
      // decompressed in turn, then zero padding; any other trailing byte is an error, never
      // data silently dropped.
      const size_t at = fed - z.avail_in;
      size_t zeros = at;
      while (zeros < in.size() && in[zeros] == 0) ++zeros;
      if (zeros == in.size()) break;
      if (zeros == at && in.size() - at >= 2 && in[at] == 0x1f && in[at + 1] == 0x8b) {
        inflateReset(&z);
        continue;  // zlib resumes at next_in, the next member's header
      }
      inflateEnd(&z);
      EMBER_FAIL(op, path, ": gzip error: ", in.size() - at, " trailing bytes after the ",
                 "compressed data (at offset ", at, "), not another gzip member");
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && fed == in.size()) {
      inflateEnd(&z);
      EMBER_FAIL(op, path, ": gzip error: truncated compressed data (ends after ", produced,
                 " decompressed bytes)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = z.msg ? z.msg : "code " + std::to_string(rc);
      inflateEnd(&z);
      EMBER_FAIL(op, path, ": gzip error: ", msg);
    }
  }
  inflateEnd(&z);
  out.resize(produced);
  return out;
}

std::vector<unsigned char> gzip(const unsigned char* data, size_t n, const char* op) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    EMBER_FAIL(op, "gzip error: deflateInit2 failed");
  std::vector<unsigned char> out(deflateBound(&z, uLong(n)) + 32);
  z.next_in = const_cast<unsigned char*>(data);
  z.avail_in = uInt(n);
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t produced = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) EMBER_FAIL(op, "gzip error: deflate returned ", rc);
  out.resize(produced);
  return out;
}

}  // namespace ember::data::detail
