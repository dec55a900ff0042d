// Readers and writers for data files: IDX (the MNIST format), CSV, PNG and JPEG images, and an
// image folder dataset (as torchvision.datasets.ImageFolder). Every reader throws ember::Error
// naming the file and what is wrong; every writer writes atomically (a temporary file renamed
// over the target, so a reader never sees half a file).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/data/dataset.h"

namespace ember::data {

// ---- IDX (LeCun's MNIST format): 0, 0, type code, rank, rank big-endian u32 dims, then the
// values big-endian, row-major. Type codes: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32,
// 0x0E f64. ----

/// Reads an IDX file, plain or gzip-compressed (detected by the gzip magic, not the name; every
/// member of a multi-member gzip file, as gzip -d), into a host (cpu) tensor of the file's dtype
/// and dims. Throws "[read_idx] <path>: ..." when the file cannot be read, for a bad magic, an
/// unknown type code, rank 0, a truncated header or data, trailing bytes or dims beyond 2^48
/// bytes (dims/size mismatch; every dim counts, also in an empty tensor), or a gzip error
/// (corrupt or truncated data, bytes after the last member other than zero padding).
Tensor read_idx(const std::string& path);
/// Writes `t` (u8, i8, i16, i32, f32 or f64; rank 1..255) as IDX; gzip-compressed when the path
/// ends in ".gz". Atomic. Throws "[write_idx] ..." for other dtypes, rank 0, or an I/O error.
void write_idx(const std::string& path, const Tensor& t);

// ---- CSV ----

enum class CsvHeader : uint8_t { Auto, Yes, No };
struct CsvOptions {
  char delimiter = ',';
  /// Auto: the first row is a header when one of its fields is not a number.
  CsvHeader header = CsvHeader::Auto;
  /// The label column (negative counts from the end), unless label_name names it (needs a header).
  int64_t label_column = -1;
  std::string label_name = {};
  /// When > 0, labels must lie in [0, num_classes).
  int64_t num_classes = 0;
};
/// Reads a numeric CSV file (blank lines skipped: whitespace only, so a row holding just "" is a
/// row of one empty field, an error; fields may be "quoted", \r\n accepted) into a
/// TensorDataset: data f32 [N, columns-1] (the other columns, in order), targets i64 [N].
/// Throws "[read_csv] <path>:<line>: ..." for a ragged row, a non-numeric field, a non-integral
/// or out-of-range label, an unknown label column, or an empty file.
TensorDataset read_csv(const std::string& path, const CsvOptions& options = {});

// ---- images ----

/// The default of max_image_pixels(): 2^26 = 67,108,864 pixels (8192 x 8192), more than any
/// camera's photo (61 megapixels at most) and far more than a training image, while a decode
/// stays within about 0.4 GiB (RGB: 192 MiB of decoded rows plus the 192 MiB [C, H, W] tensor),
/// 0.8 GiB for a progressive JPEG (its coefficients take up to 384 MiB more). PIL's
/// Image.MAX_IMAGE_PIXELS is of the same order (89,478,485, an error at twice that).
constexpr int64_t kDefaultMaxImagePixels = int64_t(1) << 26;
/// The largest image, in pixels (width x height, whatever the format, bit depth or channels),
/// that load_image and read_image_info accept (as PIL's Image.MAX_IMAGE_PIXELS). The size a
/// PNG or JPEG header declares is checked against it before anything is allocated for the
/// pixels, so a small file declaring a huge size (a "decompression bomb") fails with an
/// ember::Error instead of exhausting memory. 0: no limit (the formats' own remain: 65,500
/// per side for JPEG, libpng's 1,000,000 per side for PNG).
int64_t max_image_pixels();
/// Sets max_image_pixels() for the whole process (thread-safe; a decode in progress keeps the
/// limit it started with). The CLI's --max-image-pixels sets it. Throws
/// "[set_max_image_pixels] ..." for a negative value.
void set_max_image_pixels(int64_t pixels);

/// Decodes a PNG (libpng) or JPEG (libjpeg-turbo) file, chosen by its magic bytes, into u8
/// [C, H, W] on the host (as torchvision.io.decode_image). channels: 0 keeps the file's (1 for
/// grayscale, 3 for colour; alpha is dropped), 1 converts to grayscale, 3 to RGB. 16-bit PNGs are
/// reduced to 8 bits (a decode allocates C x H x W bytes, plus libpng's and libjpeg's own
/// buffers). Throws "[load_image] <path>: ..." for other formats, corrupt, damaged or truncated
/// data (every libjpeg warning about damaged data is an error, not a grey fill), an image of
/// more than max_image_pixels() pixels (the message gives its size and the limit), memory
/// exhausted, or channels not in {0, 1, 3}.
Tensor load_image(const std::string& path, int channels = 0);
/// What a PNG or JPEG file's header says: its size and stored channels (1 for grayscale, 3 for
/// colour; as load_image(path, 0) would return, without decoding the pixels).
struct ImageInfo {
  int64_t height = 0, width = 0, channels = 0;
};
/// Reads the header of a PNG or JPEG file (as PIL.Image.open's size and mode). Throws
/// "[read_image_info] <path>: ..." for a missing file, another format, a corrupt header, or a
/// size of more than max_image_pixels() pixels (as PIL.Image.open, so that a folder's images can
/// be checked before any is decoded).
ImageInfo read_image_info(const std::string& path);
/// Writes u8 [1 or 3, H, W] (or [H, W]) as PNG (lossless). Atomic. Throws "[save_png] ...".
void save_png(const std::string& path, const Tensor& image);
/// Writes u8 [1 or 3, H, W] (or [H, W]) as baseline JPEG, quality 1..100. Atomic.
void save_jpeg(const std::string& path, const Tensor& image, int quality = 95);

/// root/<class>/<image> (as torchvision.datasets.ImageFolder): classes are the sub-folders of
/// root in sorted order (label = position), images the .png/.jpg/.jpeg files (any case) in each,
/// sorted by name; other files are ignored. get(i) decodes image i (load_image(path, channels))
/// into {u8 [C, H, W], i64 label}. Throws "[ImageFolder] <root>: ..." when root is missing, has
/// no class folder, or a class folder holds no image.
class ImageFolder : public Dataset<Example> {
 public:
  explicit ImageFolder(const std::string& root, int channels = 0);
  Example get(int64_t index) const override;
  int64_t size() const override { return int64_t(samples_.size()); }
  const std::vector<std::string>& classes() const& { return classes_; }
  std::vector<std::string> classes() && { return classes_; }  // a copy on a temporary
  /// (path, label) of each image, in dataset order.
  const std::vector<std::pair<std::string, int64_t>>& samples() const& { return samples_; }
  std::vector<std::pair<std::string, int64_t>> samples() && {
    return samples_;
  }  // a copy on a temporary

 private:
  int channels_;
  std::vector<std::string> classes_;
  std::vector<std::pair<std::string, int64_t>> samples_;
};

}  // namespace ember::data
