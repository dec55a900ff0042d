// PNG (libpng's simplified API) and JPEG (libjpeg-turbo) decoding and encoding.
#include <png.h>
// jpeglib.h needs size_t and FILE declared first.
#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <jpeglib.h>
// jerror.h after jpeglib.h: the warning codes.
#include <jerror.h>

#include "core/atomic_file.h"
#include "data/file_util.h"
#include "ember/data/io.h"

namespace ember::data {
namespace {

std::atomic<int64_t> g_max_image_pixels{kDefaultMaxImagePixels};

// A header's size is untrusted: every reader checks it here before allocating for the pixels.
// w and h are at most 2^32 - 1 (both formats store 32 bits or fewer), so w * h fits in 64 bits.
bool too_many_pixels(uint64_t w, uint64_t h) {
  const int64_t limit = g_max_image_pixels.load(std::memory_order_relaxed);
  return limit > 0 && w * h > uint64_t(limit);
}
[[noreturn]] void fail_too_many_pixels(const char* op, const std::string& path, const char* format,
                                       uint64_t w, uint64_t h) {
  EMBER_FAIL(op, path, ": ", format, " declares ", w, "x", h, " = ", w * h,
             " pixels, more than the limit of ", g_max_image_pixels.load(),
             " (data::max_image_pixels; a small file declaring a huge size would exhaust memory). "
             "If the image is genuine, raise the limit with data::set_max_image_pixels or the "
             "CLI's --max-image-pixels");
}

// Pixel bytes, left uninitialized: a file that declares a large size but holds little data fails
// having touched only the rows it decoded (zero-filling 192 MiB takes a second on its own).
struct PixelBuffer {
  std::unique_ptr<unsigned char[]> bytes;
  unsigned char* data() const { return bytes.get(); }
  unsigned char& operator[](size_t i) const { return bytes[i]; }
};
// Allocates without throwing (for the C-style libjpeg frames that longjmp may cross).
bool try_alloc(PixelBuffer* b, size_t n) noexcept {
  b->bytes.reset(new (std::nothrow) unsigned char[std::max<size_t>(n, 1)]);
  return b->bytes != nullptr;
}
[[noreturn]] void fail_no_memory(const char* op, const std::string& path, uint64_t w, uint64_t h,
                                 uint64_t c) {
  EMBER_FAIL(op, path, ": cannot allocate ", w * h * c, " bytes for its ", w, "x", h, "x", c,
             " pixels (out of memory; data::max_image_pixels is ", g_max_image_pixels.load(), ")");
}

struct Pixels {
  PixelBuffer hwc;  // interleaved rows
  int64_t h = 0, w = 0, c = 0;
};

// Walks the chunks up to IEND: each one's declared length must fit in the bytes left. libpng
// allocates a text chunk's declared length before reading it (a 141-byte file declaring a 2 GiB
// tEXt took 2.1 GB).
void check_png_chunks(const std::vector<unsigned char>& b, const std::string& path,
                      const char* op) {
  size_t at = 8;  // after the signature
  while (at + 8 <= b.size()) {
    const uint64_t len = uint64_t(b[at]) << 24 | uint64_t(b[at + 1]) << 16 |
                         uint64_t(b[at + 2]) << 8 | uint64_t(b[at + 3]);
    const std::string type(reinterpret_cast<const char*>(&b[at + 4]), 4);
    const uint64_t left = b.size() - at - 8;
    if (len > 0x7fffffffu || len + 4 > left)
      EMBER_FAIL(op, path, ": corrupt PNG (chunk '", type, "' at byte ", at, " declares ", len,
                 " bytes; the file has ", left < 4 ? 0 : left - 4, " left)");
    if (type == "IEND") return;
    at += 8 + size_t(len) + 4;
  }
}

Pixels decode_png(const std::vector<unsigned char>& bytes, const std::string& path, int channels) {
  check_png_chunks(bytes, path, "load_image");
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size()))
    EMBER_FAIL("load_image", path, ": corrupt PNG (", img.message, ")");
  const bool color = (img.format & PNG_FORMAT_FLAG_COLOR) != 0;
  const bool alpha = (img.format & PNG_FORMAT_FLAG_ALPHA) != 0;  // also a palette's tRNS
  const int c = channels == 0 ? (color ? 3 : 1) : channels;
  // 8 bits per channel whatever the file stores (16-bit, palette): libpng converts row by row.
  // An alpha channel is read and dropped, as PIL's convert("RGB") does: asked for a format
  // without alpha, libpng composites onto the buffer's previous contents (garbage here).
  const int stored = c + (alpha ? 1 : 0);
  // A 16-bit file is read as its 16-bit values and keeps their high byte (as torchvision's
  // read_image and PIL's RGB decoder): asked for 8 bits, libpng would take the values as linear
  // light and gamma-encode them to sRGB (32768 became 188, not 128).
  const bool wide = (img.format & PNG_FORMAT_FLAG_LINEAR) != 0;
  img.format = (c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY) | (alpha ? PNG_FORMAT_FLAG_ALPHA : 0) |
               (wide ? PNG_FORMAT_FLAG_LINEAR : 0);
  Pixels p;
  p.h = img.height, p.w = img.width, p.c = c;
  if (too_many_pixels(img.width, img.height)) {
    png_image_free(&img);
    fail_too_many_pixels("load_image", path, "PNG", img.width, img.height);
  }
  // In 64 bits (PNG_IMAGE_SIZE multiplies in 32 and could wrap for a raised limit).
  const size_t pixels = size_t(p.h) * size_t(p.w);
  const size_t n = pixels * size_t(stored);
  PixelBuffer words;  // the 16-bit values of a wide file
  if (!try_alloc(&p.hwc, n) || (wide && !try_alloc(&words, 2 * n))) {
    png_image_free(&img);
    fail_no_memory("load_image", path, img.width, img.height, uint64_t(stored) * (wide ? 3 : 1));
  }
  if (!png_image_finish_read(&img, nullptr, wide ? words.data() : p.hwc.data(), 0, nullptr)) {
    const std::string msg = img.message;
    png_image_free(&img);
    EMBER_FAIL("load_image", path, ": corrupt or truncated PNG (", msg, ")");
  }
  if (wide)
    for (size_t i = 0; i < n; ++i) {
      uint16_t w;  // native order, as libpng writes it
      std::memcpy(&w, words.data() + 2 * i, 2);
      p.hwc[i] = static_cast<unsigned char>(w >> 8);
    }
  if (alpha) {  // in place: pixel i's c bytes move to i * c
    unsigned char* d = p.hwc.data();
    for (size_t i = 0; i < pixels; ++i)
      for (int k = 0; k < c; ++k) d[i * size_t(c) + size_t(k)] = d[i * size_t(stored) + size_t(k)];
  }
  return p;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}
void jpeg_on_warning(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  // libjpeg only warns about damaged data (a truncated file, "premature end of data segment", a
  // bad Huffman code, extraneous bytes...) and fills what it could not decode with grey: a
  // damaged image would load as another one. Every warning is fatal but an unknown JFIF
  // revision, which is metadata and leaves the pixels intact.
  if (cinfo->err->msg_code == JWRN_JFIF_MAJOR) return;
  jpeg_on_error(cinfo);
}

enum class JpegStatus { ok, libjpeg_error, too_many_pixels, no_memory };

// C-style on purpose: longjmp may only skip frames without C++ destructors. `out` and `err` are
// set up by the caller; the only C++ object touched here is *out, through a pointer and noexcept
// calls. The size is checked after the header, before libjpeg allocates for the image (a
// progressive JPEG's coefficients, at jpeg_start_decompress) and before *out is.
JpegStatus decode_jpeg_c(const unsigned char* data, size_t n, int channels, Pixels* out,
                         JpegError* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_on_error;
  err->mgr.emit_message = jpeg_on_warning;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return JpegStatus::libjpeg_error;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, (unsigned long)n);
  jpeg_read_header(&cinfo, TRUE);
  out->h = cinfo.image_height, out->w = cinfo.image_width;
  if (too_many_pixels(cinfo.image_width, cinfo.image_height)) {
    jpeg_destroy_decompress(&cinfo);
    return JpegStatus::too_many_pixels;
  }
  const bool gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  const int c = channels == 0 ? (gray ? 1 : 3) : channels;
  cinfo.out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  out->h = cinfo.output_height, out->w = cinfo.output_width, out->c = cinfo.output_components;
  if (!try_alloc(&out->hwc, size_t(out->h) * size_t(out->w) * size_t(out->c))) {
    jpeg_destroy_decompress(&cinfo);
    return JpegStatus::no_memory;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->hwc.data() + size_t(cinfo.output_scanline) * size_t(out->w * out->c);
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return JpegStatus::ok;
}

// The header only: size and stored components (C-style, as decode_jpeg_c).
bool jpeg_header_c(const unsigned char* data, size_t n, ImageInfo* out, JpegError* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_on_error;
  err->mgr.emit_message = jpeg_on_warning;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, (unsigned long)n);
  jpeg_read_header(&cinfo, TRUE);
  out->height = cinfo.image_height, out->width = cinfo.image_width;
  out->channels = cinfo.jpeg_color_space == JCS_GRAYSCALE ? 1 : 3;
  jpeg_destroy_decompress(&cinfo);
  return true;
}

bool encode_jpeg_c(const unsigned char* hwc, int h, int w, int c, int quality, unsigned char** buf,
                   unsigned long* size, JpegError* err) {
  jpeg_compress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_on_error;
  if (setjmp(err->jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buf, size);
  cinfo.image_width = JDIMENSION(w);
  cinfo.image_height = JDIMENSION(h);
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(hwc) + size_t(cinfo.next_scanline) * size_t(w * c);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

// u8 [C, H, W] (or [H, W]) -> interleaved HWC bytes.
Pixels to_pixels(const Tensor& image, const char* op, const std::string& path) {
  if (!image.defined()) EMBER_FAIL(op, path, ": image is undefined");
  const bool ok_rank =
      image.dim() == 2 || (image.dim() == 3 && (image.size(0) == 1 || image.size(0) == 3));
  if (image.dtype() != DType::u8 || !ok_rank)
    EMBER_FAIL(op, path, ": expected a uint8 image [1 or 3, H, W] or [H, W], got ",
               dtype_name(image.dtype()), " ", shape_str(image.shape()));
  Tensor x = image.dim() == 2 ? image.unsqueeze(0) : image;
  if (x.size(1) < 1 || x.size(2) < 1 || x.size(1) > 65535 || x.size(2) > 65535)
    EMBER_FAIL(op, path, ": image size ", shape_str(image.shape()), " is not in 1..65535");
  x = x.permute({1, 2, 0}).to(Device::cpu()).contiguous();
  Pixels p;
  p.c = x.size(2), p.h = x.size(0), p.w = x.size(1);
  const auto* src = static_cast<uint8_t*>(x.raw_data());
  if (!try_alloc(&p.hwc, size_t(x.numel()))) throw std::bad_alloc();
  std::memcpy(p.hwc.data(), src, size_t(x.numel()));
  return p;
}

}  // namespace

int64_t max_image_pixels() { return g_max_image_pixels.load(); }

void set_max_image_pixels(int64_t pixels) {
  if (pixels < 0)
    EMBER_FAIL("set_max_image_pixels", "the limit must be >= 0 (0: no limit), got ", pixels);
  g_max_image_pixels.store(pixels);
}

Tensor load_image(const std::string& path, int channels) {
  if (channels != 0 && channels != 1 && channels != 3)
    EMBER_FAIL("load_image", path, ": channels must be 0 (as stored), 1 or 3, got ", channels);
  const std::vector<unsigned char> bytes = detail::read_file(path, "load_image");
  Pixels p;
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) {
    p = decode_png(bytes, path, channels);
  } else if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    JpegError err;
    std::memset(&err, 0, sizeof err);
    switch (decode_jpeg_c(bytes.data(), bytes.size(), channels, &p, &err)) {
      case JpegStatus::ok:
        break;
      case JpegStatus::libjpeg_error:
        EMBER_FAIL("load_image", path, ": corrupt or truncated JPEG (", err.message, ")");
      case JpegStatus::too_many_pixels:
        fail_too_many_pixels("load_image", path, "JPEG", uint64_t(p.w), uint64_t(p.h));
      case JpegStatus::no_memory:
        fail_no_memory("load_image", path, uint64_t(p.w), uint64_t(p.h), uint64_t(p.c));
    }
  } else {
    EMBER_FAIL("load_image", path, ": unsupported image format (not PNG or JPEG)");
  }
  // HWC -> CHW.
  Tensor out;
  try {
    out = empty({p.c, p.h, p.w}, TensorOptions(DType::u8, Device::cpu()));
  } catch (const std::bad_alloc&) {
    fail_no_memory("load_image", path, uint64_t(p.w), uint64_t(p.h), uint64_t(p.c));
  }
  uint8_t* dst = static_cast<uint8_t*>(out.raw_data());
  const int64_t plane = p.h * p.w;
  for (int64_t i = 0; i < plane; ++i)
    for (int64_t c = 0; c < p.c; ++c) dst[c * plane + i] = p.hwc[size_t(i * p.c + c)];
  return out;
}

ImageInfo read_image_info(const std::string& path) {
  const std::vector<unsigned char> bytes = detail::read_file(path, "read_image_info");
  ImageInfo info;
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) {
    check_png_chunks(bytes, path, "read_image_info");
    png_image img;
    std::memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size()))
      EMBER_FAIL("read_image_info", path, ": corrupt PNG (", img.message, ")");
    info.height = img.height, info.width = img.width;
    info.channels = (img.format & PNG_FORMAT_FLAG_COLOR) != 0 ? 3 : 1;
    png_image_free(&img);
    // As PIL.Image.open: a size load_image would refuse is an error already.
    if (too_many_pixels(img.width, img.height))
      fail_too_many_pixels("read_image_info", path, "PNG", img.width, img.height);
  } else if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    JpegError err;
    std::memset(&err, 0, sizeof err);
    if (!jpeg_header_c(bytes.data(), bytes.size(), &info, &err))
      EMBER_FAIL("read_image_info", path, ": corrupt JPEG (", err.message, ")");
    if (too_many_pixels(uint64_t(info.width), uint64_t(info.height)))
      fail_too_many_pixels("read_image_info", path, "JPEG", uint64_t(info.width),
                           uint64_t(info.height));
  } else {
    EMBER_FAIL("read_image_info", path, ": unsupported image format (not PNG or JPEG)");
  }
  return info;
}

void save_png(const std::string& path, const Tensor& image) {
  const Pixels p = to_pixels(image, "save_png", path);
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = png_uint_32(p.w);
  img.height = png_uint_32(p.h);
  img.format = p.c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&img, nullptr, &size, 0, p.hwc.data(), 0, nullptr))
    EMBER_FAIL("save_png", path, ": libpng error (", img.message, ")");
  std::vector<unsigned char> buf(size);
  if (!png_image_write_to_memory(&img, buf.data(), &size, 0, p.hwc.data(), 0, nullptr))
    EMBER_FAIL("save_png", path, ": libpng error (", img.message, ")");
  ember::write_file_atomic(path, buf.data(), size, "save_png");
}

void save_jpeg(const std::string& path, const Tensor& image, int quality) {
  if (quality < 1 || quality > 100)
    EMBER_FAIL("save_jpeg", path, ": quality must be in 1..100, got ", quality);
  const Pixels p = to_pixels(image, "save_jpeg", path);
  JpegError err;
  std::memset(&err, 0, sizeof err);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const bool ok =
      encode_jpeg_c(p.hwc.data(), int(p.h), int(p.w), int(p.c), quality, &buf, &size, &err);
  if (!ok) {
    std::free(buf);
    EMBER_FAIL("save_jpeg", path, ": libjpeg error (", err.message, ")");
  }
  try {
    ember::write_file_atomic(path, buf, size, "save_jpeg");
  } catch (...) {
    std::free(buf);
    throw;
  }
  std::free(buf);
}

}  // namespace ember::data
