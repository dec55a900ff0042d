// PNG (libpng's simplified API) and JPEG (libjpeg-turbo) decoding and encoding.
#include <png.h>
// jpeglib.h needs size_t and FILE declared first.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <jpeglib.h>
// jerror.h after jpeglib.h: the warning codes.
#include <jerror.h>

#include "data/file_util.h"
#include "ember/data/io.h"

namespace ember::data {
namespace {

struct Pixels {
  std::vector<unsigned char> hwc;  // interleaved rows
  int64_t h = 0, w = 0, c = 0;
};

Pixels decode_png(const std::vector<unsigned char>& bytes, const std::string& path, int channels) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size()))
    EMBER_FAIL("load_image", path, ": corrupt PNG (", img.message, ")");
  const bool color = (img.format & PNG_FORMAT_FLAG_COLOR) != 0;
  const int c = channels == 0 ? (color ? 3 : 1) : channels;
  img.format = c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  Pixels p;
  p.h = img.height, p.w = img.width, p.c = c;
  // The header's size is untrusted: refuse before allocating for it.
  if (p.h > 65535 || p.w > 65535 || p.h * p.w > (int64_t(1) << 28)) {
    png_image_free(&img);
    EMBER_FAIL("load_image", path, ": PNG declares ", p.w, "x", p.h,
               " pixels, beyond the 65535 per side and 2^28 in total that Ember reads");
  }
  p.hwc.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, p.hwc.data(), 0, nullptr)) {
    const std::string msg = img.message;
    png_image_free(&img);
    EMBER_FAIL("load_image", path, ": corrupt or truncated PNG (", msg, ")");
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
  // A truncated file must not pass silently (libjpeg only warns and pads with grey).
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_on_error(cinfo);
}

// C-style on purpose: longjmp may only skip frames without C++ destructors. `out` and `err` are
// set up by the caller; the only C++ object touched here is *out, through a pointer.
bool decode_jpeg_c(const unsigned char* data, size_t n, int channels, Pixels* out, JpegError* err) {
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
  const bool gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  const int c = channels == 0 ? (gray ? 1 : 3) : channels;
  cinfo.out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  out->h = cinfo.output_height, out->w = cinfo.output_width, out->c = cinfo.output_components;
  out->hwc.resize(size_t(out->h * out->w * out->c));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->hwc.data() + size_t(cinfo.output_scanline) * size_t(out->w * out->c);
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
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
  const auto* src = x.data_ptr<uint8_t>();
  p.hwc.assign(src, src + x.numel());
  return p;
}

}  // namespace

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
    if (!decode_jpeg_c(bytes.data(), bytes.size(), channels, &p, &err))
      EMBER_FAIL("load_image", path, ": corrupt or truncated JPEG (", err.message, ")");
  } else {
    EMBER_FAIL("load_image", path, ": unsupported image format (not PNG or JPEG)");
  }
  // HWC -> CHW.
  Tensor out = empty({p.c, p.h, p.w}, TensorOptions(DType::u8, Device::cpu()));
  uint8_t* dst = out.data_ptr<uint8_t>();
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
    png_image img;
    std::memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size()))
      EMBER_FAIL("read_image_info", path, ": corrupt PNG (", img.message, ")");
    info.height = img.height, info.width = img.width;
    info.channels = (img.format & PNG_FORMAT_FLAG_COLOR) != 0 ? 3 : 1;
    png_image_free(&img);
  } else if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    JpegError err;
    std::memset(&err, 0, sizeof err);
    if (!jpeg_header_c(bytes.data(), bytes.size(), &info, &err))
      EMBER_FAIL("read_image_info", path, ": corrupt JPEG (", err.message, ")");
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
  detail::write_file_atomic(path, buf.data(), size, "save_png");
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
    detail::write_file_atomic(path, buf, size, "save_jpeg");
  } catch (...) {
    std::free(buf);
    throw;
  }
  std::free(buf);
}

}  // namespace ember::data
