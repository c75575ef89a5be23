// TH's files (THFile.h, THDiskFile.h, THMemoryFile.h): a THFile reads and
// writes TH's numbers and storages, in binary (the machine's bytes, or those
// of an endianness asked for) or ASCII (numbers as text, TH's formats, bytes
// and chars raw), on disk, through a pipe, or in memory.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include "THRuntime.h"

// The file: what TH's THFile struct held, and the medium's primitives
struct THFile__ {
  bool readable = false, writable = false, binary = false, autospacing = true, quiet = false;
  bool error = false, opened = true;
  bool swap = false;  // binary multibyte values byte-swapped (an endianness other than the CPU's)
  int long_size = 0;  // binary longs of 4 or 8 bytes (0: int64_t's)
  virtual ~THFile__() = default;
  virtual size_t read_bytes(void* p, size_t n) = 0;
  virtual size_t write_bytes(const void* p, size_t n) = 0;
  virtual int get() = 0;  // the next character, or EOF
  virtual void unget(int c) = 0;
  virtual void seek(size_t position) = 0;
  virtual void seek_end() = 0;
  virtual size_t position() = 0;
  virtual void sync() {}
  virtual void close() { opened = false; }
};

namespace {

struct DiskFile : THFile__ {
  FILE* handle = nullptr;
  bool pipe = false;
  std::string name;
  ~DiskFile() override { close(); }
  size_t read_bytes(void* p, size_t n) override { return std::fread(p, 1, n, handle); }
  size_t write_bytes(const void* p, size_t n) override { return std::fwrite(p, 1, n, handle); }
  int get() override { return std::fgetc(handle); }
  void unget(int c) override {
    if (c != EOF) std::ungetc(c, handle);
  }
  void seek(size_t position) override {
    if (std::fseek(handle, static_cast<long>(position), SEEK_SET) != 0)
      throw std::runtime_error("THFile_seek: unable to seek to position " +
                               std::to_string(position));
  }
  void seek_end() override {
    if (std::fseek(handle, 0, SEEK_END) != 0)
      throw std::runtime_error("THFile_seekEnd: unable to seek at the end of the file");
  }
  size_t position() override { return static_cast<size_t>(std::ftell(handle)); }
  void sync() override { std::fflush(handle); }
  void close() override {
    if (handle != nullptr) pipe ? pclose(handle) : std::fclose(handle);
    handle = nullptr;
    opened = false;
  }
};

struct MemoryFile : THFile__ {
  std::string data;
  size_t pos = 0;
  THCharStorage* storage = nullptr;  // the last one THMemoryFile_storage gave
  ~MemoryFile() override { THCharStorage_free(storage); }
  size_t read_bytes(void* p, size_t n) override {
    const size_t k = std::min(n, data.size() - std::min(pos, data.size()));
    std::memcpy(p, data.data() + pos, k);
    pos += k;
    return k;
  }
  size_t write_bytes(const void* p, size_t n) override {
    if (pos > data.size()) data.resize(pos, '\0');
    data.replace(pos, std::min(n, data.size() - pos), static_cast<const char*>(p), n);
    pos += n;
    return n;
  }
  int get() override { return pos < data.size() ? static_cast<unsigned char>(data[pos++]) : EOF; }
  void unget(int c) override {
    if (c != EOF && pos > 0) --pos;
  }
  void seek(size_t position) override {
    if (position > data.size())
      throw std::runtime_error("THFile_seek: position " + std::to_string(position) +
                               " is past the end (" + std::to_string(data.size()) + ")");
    pos = position;
  }
  void seek_end() override { pos = data.size(); }
  size_t position() override { return pos; }
};

THFile__* file(THFile* f, const char* fn) {
  if (f == nullptr)
    throw std::runtime_error(std::string(fn) +
                             ": argument 1 (self, THFile*) is NULL; a THFile* is needed here");
  return f;
}

THFile__* open_file(THFile* f, const char* fn) {
  THFile__* self = file(f, fn);
  if (!self->opened) throw std::runtime_error(std::string(fn) + ": attempt to use a closed file");
  return self;
}

void check_readable(THFile__* self, const char* fn) {
  if (!self->readable)
    throw std::runtime_error(std::string(fn) + ": attempt to read in a write-only file");
}
void check_writable(THFile__* self, const char* fn) {
  if (!self->writable)
    throw std::runtime_error(std::string(fn) + ": attempt to write in a read-only file");
}

// Fewer values than asked: an error, or (quiet) the file's error flag
size_t short_count(THFile__* self, size_t done, size_t n, bool reading, const char* fn) {
  if (done == n) return done;
  self->error = true;
  if (!self->quiet)
    throw std::runtime_error(std::string(fn) + ": " + (reading ? "read" : "write") +
                             " error: " + (reading ? "read " : "wrote ") + std::to_string(done) +
                             " blocks instead of " + std::to_string(n));
  return done;
}

void swap_bytes(void* p, size_t size, size_t n) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) std::reverse(b + i * size, b + (i + 1) * size);
}

// The next whitespace-separated word of an ASCII file, or "" at its end
std::string word(THFile__* self) {
  int c = self->get();
  while (c != EOF && std::isspace(c)) c = self->get();
  std::string w;
  while (c != EOF && !std::isspace(c)) {
    w.push_back(static_cast<char>(c));
    c = self->get();
  }
  self->unget(c);
  return w;
}

// After the values of one call in ASCII with auto-spacing: TH's newline
void end_values(THFile__* self, size_t n, bool reading) {
  if (!self->autospacing || n == 0) return;
  if (reading) {
    const int c = self->get();
    if (c != '\n') self->unget(c);
  } else {
    self->write_bytes("\n", 1);
  }
}

// The open file, checked for reading or writing n values at data
THFile__* for_values(THFile* f, const void* data, size_t n, bool reading, const char* fn) {
  THFile__* self = open_file(f, fn);
  reading ? check_readable(self, fn) : check_writable(self, fn);
  if (n > 0 && data == nullptr)
    throw std::runtime_error(std::string(fn) + ": data is NULL for " + std::to_string(n) +
                             " values");
  return self;
}

template <class R>
constexpr bool is_text_raw = std::is_same_v<R, uint8_t> || std::is_same_v<R, int8_t>;

// n values of R from the file into data; bytes and chars are raw in both modes
template <class R>
size_t read_values(THFile* f, R* data, size_t n, const char* fn) {
  THFile__* self = for_values(f, data, n, true, fn);
  if (self->binary || is_text_raw<R>) {
    if constexpr (std::is_same_v<R, int64_t>) {
      if (self->binary && self->long_size == 4) {
        std::vector<int32_t> small(n);
        const size_t k = self->read_bytes(small.data(), 4 * n) / 4;
        if (self->swap) swap_bytes(small.data(), 4, k);
        for (size_t i = 0; i < k; ++i) data[i] = small[i];
        return short_count(self, k, n, true, fn);
      }
    }
    const size_t k = self->read_bytes(data, sizeof(R) * n) / sizeof(R);
    if (self->binary && self->swap && sizeof(R) > 1) swap_bytes(data, sizeof(R), k);
    return short_count(self, k, n, true, fn);
  }
  size_t k = 0;
  for (; k < n; ++k) {
    const std::string w = word(self);
    if (w.empty()) break;
    char* end = nullptr;
    if constexpr (std::is_integral_v<R>) {
      const long long v = std::strtoll(w.c_str(), &end, 10);
      data[k] = static_cast<R>(v);
    } else {
      const double v = std::strtod(w.c_str(), &end);
      data[k] = from_double<R>(v);
    }
    if (end == w.c_str() || *end != 0) break;
  }
  if (k == n) end_values(self, n, true);
  return short_count(self, k, n, true, fn);
}

template <class R>
size_t write_values(THFile* f, const R* data, size_t n, const char* fn) {
  THFile__* self = for_values(f, data, n, false, fn);
  if (self->binary || is_text_raw<R>) {
    if constexpr (std::is_same_v<R, int64_t>) {
      if (self->binary && self->long_size == 4) {
        std::vector<int32_t> small(data, data + n);
        if (self->swap) swap_bytes(small.data(), 4, n);
        return short_count(self, self->write_bytes(small.data(), 4 * n) / 4, n, false, fn);
      }
    }
    if (self->binary && self->swap && sizeof(R) > 1) {
      std::vector<R> copy(data, data + n);
      swap_bytes(copy.data(), sizeof(R), n);
      return short_count(self, self->write_bytes(copy.data(), sizeof(R) * n) / sizeof(R), n, false,
                         fn);
    }
    return short_count(self, self->write_bytes(data, sizeof(R) * n) / sizeof(R), n, false, fn);
  }
  for (size_t i = 0; i < n; ++i) {
    char buf[64];
    if constexpr (std::is_integral_v<R>)
      std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(data[i]));
    else if constexpr (std::is_same_v<R, double>)
      std::snprintf(buf, sizeof(buf), "%.17g", data[i]);
    else
      std::snprintf(buf, sizeof(buf), "%.9g", as_double(data[i]));
    self->write_bytes(buf, std::strlen(buf));
    if (self->autospacing && i + 1 < n) self->write_bytes(" ", 1);
  }
  end_values(self, n, false);
  return n;
}

void parse_mode(const char* mode, bool& readable, bool& writable, const char* fn) {
  const std::string m = mode ? mode : "";
  if (m == "r" || m == "rb")
    readable = true, writable = false;
  else if (m == "w" || m == "wb")
    readable = false, writable = true;
  else if (m == "rw" || m == "rwb" || m == "r+" || m == "w+")
    readable = writable = true;
  else
    throw std::runtime_error(std::string(fn) + ": bad mode \"" + m + "\" (\"r\", \"w\" or \"rw\")");
}

bool little_endian_cpu() {
  const uint16_t one = 1;
  return *reinterpret_cast<const unsigned char*>(&one) == 1;
}

DiskFile* disk(THFile* f, const char* fn) {
  auto* d = dynamic_cast<DiskFile*>(file(f, fn));
  if (d == nullptr) throw std::runtime_error(std::string(fn) + ": the file is not a disk file");
  return d;
}

// A file on disk (mode "r", "w" or "rw") or a pipe to a command (not both
// ways); one that cannot open raises, or (isQuiet) is NULL
THFile* open_disk(const char* name, const char* mode, int isQuiet, bool pipe, const char* fn) {
  if (name == nullptr) throw std::runtime_error(std::string(fn) + ": name is NULL");
  bool readable, writable;
  parse_mode(mode, readable, writable, fn);
  if (pipe && readable && writable)
    throw std::runtime_error(std::string(fn) + ": a pipe is read or written, not both");
  const char* how = readable && writable ? (access(name, F_OK) == 0 ? "r+b" : "w+b")
                    : readable           ? "rb"
                                         : "wb";
  FILE* handle = pipe ? popen(name, readable ? "r" : "w") : std::fopen(name, how);
  if (handle == nullptr) {
    if (isQuiet) return nullptr;
    throw std::runtime_error(std::string(fn) + ": cannot open <" + name + "> in mode " + mode);
  }
  auto* f = new DiskFile();
  f->handle = handle, f->pipe = pipe, f->name = name, f->readable = readable;
  f->writable = writable, f->quiet = isQuiet != 0;
  return f;
}

MemoryFile* memory(THFile* f, const char* fn) {
  auto* m = dynamic_cast<MemoryFile*>(file(f, fn));
  if (m == nullptr) throw std::runtime_error(std::string(fn) + ": the file is not a memory file");
  return m;
}

}  // namespace

extern "C" {

#define KFL_FILE_FLAG(name, expr)             \
  int THFile_##name(THFile* self) {           \
    return file(self, "THFile_" #name)->expr; \
  }
KFL_FILE_FLAG(isOpened, opened)
KFL_FILE_FLAG(isQuiet, quiet)
KFL_FILE_FLAG(isReadable, readable)
KFL_FILE_FLAG(isWritable, writable)
KFL_FILE_FLAG(isBinary, binary)
KFL_FILE_FLAG(isAutoSpacing, autospacing)
KFL_FILE_FLAG(hasError, error)
#define KFL_FILE_SET(name, stmt)       \
  void THFile_##name(THFile* self) {   \
    file(self, "THFile_" #name)->stmt; \
  }
KFL_FILE_SET(binary, binary = true)
KFL_FILE_SET(ascii, binary = false)
KFL_FILE_SET(autoSpacing, autospacing = true)
KFL_FILE_SET(noAutoSpacing, autospacing = false)
KFL_FILE_SET(quiet, quiet = true)
KFL_FILE_SET(pedantic, quiet = false)
KFL_FILE_SET(clearError, error = false)

// Scalars, storages and raw memory of each type
#define KFL_DEFINE_FILE_IO(Name, real, Storage)                                       \
  real THFile_read##Name##Scalar(THFile* self) {                                      \
    real v{};                                                                         \
    read_values<real>(self, &v, 1, "THFile_read" #Name "Scalar");                     \
    return v;                                                                         \
  }                                                                                   \
  void THFile_write##Name##Scalar(THFile* self, real scalar) {                        \
    write_values<real>(self, &scalar, 1, "THFile_write" #Name "Scalar");              \
  }                                                                                   \
  size_t THFile_read##Name##Raw(THFile* self, real* data, size_t n) {                 \
    return read_values<real>(self, data, n, "THFile_read" #Name "Raw");               \
  }                                                                                   \
  size_t THFile_write##Name##Raw(THFile* self, real* data, size_t n) {                \
    return write_values<real>(self, data, n, "THFile_write" #Name "Raw");             \
  }                                                                                   \
  size_t THFile_read##Name(THFile* self, Storage* storage) {                          \
    need("THFile_read" #Name, {{storage, 2, "storage", #Storage "*"}});               \
    return read_values<real>(self, Storage##_data(storage), Storage##_size(storage),  \
                             "THFile_read" #Name);                                    \
  }                                                                                   \
  size_t THFile_write##Name(THFile* self, Storage* storage) {                         \
    need("THFile_write" #Name, {{storage, 2, "storage", #Storage "*"}});              \
    return write_values<real>(self, Storage##_data(storage), Storage##_size(storage), \
                              "THFile_write" #Name);                                  \
  }
KFL_DEFINE_FILE_IO(Byte, uint8_t, THByteStorage)
KFL_DEFINE_FILE_IO(Char, int8_t, THCharStorage)
KFL_DEFINE_FILE_IO(Short, int16_t, THShortStorage)
KFL_DEFINE_FILE_IO(Int, int32_t, THIntStorage)
KFL_DEFINE_FILE_IO(Long, int64_t, THLongStorage)
KFL_DEFINE_FILE_IO(Float, float, THFloatStorage)
KFL_DEFINE_FILE_IO(Double, double, THDoubleStorage)
KFL_DEFINE_FILE_IO(Half, THHalf, THHalfStorage)

// format "*a": the rest of the file; "*l": the rest of the line (without its
// newline). *str_ is the caller's to THFree.
size_t THFile_readStringRaw(THFile* f, const char* format, char** str_) {
  const char* fn = "THFile_readStringRaw";
  THFile__* self = open_file(f, fn);
  check_readable(self, fn);
  if (str_ == nullptr) throw std::runtime_error(std::string(fn) + ": str_ is NULL");
  const std::string how = format ? format : "";
  if (how != "*a" && how != "*l")
    throw std::runtime_error(std::string(fn) + ": format must be \"*a\" or \"*l\", got \"" + how +
                             "\"");
  std::string text;
  for (int c = self->get(); c != EOF; c = self->get()) {
    if (how == "*l" && c == '\n') break;
    text.push_back(static_cast<char>(c));
  }
  *str_ = static_cast<char*>(THAlloc(static_cast<ptrdiff_t>(text.size()) + 1));
  std::memcpy(*str_, text.c_str(), text.size() + 1);
  return text.size();
}

size_t THFile_writeStringRaw(THFile* f, const char* str, size_t size) {
  const char* fn = "THFile_writeStringRaw";
  THFile__* self = open_file(f, fn);
  check_writable(self, fn);
  if (size > 0 && str == nullptr) throw std::runtime_error(std::string(fn) + ": str is NULL");
  return short_count(self, self->write_bytes(str, size), size, false, fn);
}

void THFile_synchronize(THFile* self) {
  open_file(self, "THFile_synchronize")->sync();
}
void THFile_seek(THFile* self, size_t position) {
  open_file(self, "THFile_seek")->seek(position);
}
void THFile_seekEnd(THFile* self) {
  open_file(self, "THFile_seekEnd")->seek_end();
}
size_t THFile_position(THFile* self) {
  return open_file(self, "THFile_position")->position();
}
void THFile_close(THFile* self) {
  open_file(self, "THFile_close")->close();
}
void THFile_free(THFile* self) {
  delete self;
}

// name, mode "r", "w" or "rw"; a file that cannot open raises, or (isQuiet) is NULL
THFile* THDiskFile_new(const char* name, const char* mode, int isQuiet) {
  return open_disk(name, mode, isQuiet, false, "THDiskFile_new");
}

// a command's output (mode "r") or input ("w")
THFile* THPipeFile_new(const char* name, const char* mode, int isQuiet) {
  return open_disk(name, mode, isQuiet, true, "THPipeFile_new");
}

const char* THDiskFile_name(THFile* self) {
  return disk(self, "THDiskFile_name")->name.c_str();
}
int THDiskFile_isLittleEndianCPU(void) {
  return little_endian_cpu();
}
int THDiskFile_isBigEndianCPU(void) {
  return !little_endian_cpu();
}
void THDiskFile_nativeEndianEncoding(THFile* self) {
  disk(self, "THDiskFile_nativeEndianEncoding")->swap = false;
}
void THDiskFile_littleEndianEncoding(THFile* self) {
  disk(self, "THDiskFile_littleEndianEncoding")->swap = !little_endian_cpu();
}
void THDiskFile_bigEndianEncoding(THFile* self) {
  disk(self, "THDiskFile_bigEndianEncoding")->swap = little_endian_cpu();
}
void THDiskFile_longSize(THFile* self, int size) {
  if (size != 0 && size != 4 && size != 8)
    throw std::runtime_error("THDiskFile_longSize: Invalid long size specified, got " +
                             std::to_string(size));
  disk(self, "THDiskFile_longSize")->long_size = size;
}
void THDiskFile_noBuffer(THFile* self) {
  DiskFile* d = disk(self, "THDiskFile_noBuffer");
  if (d->handle != nullptr && std::setvbuf(d->handle, nullptr, _IONBF, 0) != 0)
    throw std::runtime_error("THDiskFile_noBuffer: error: cannot disable buffer");
}

// A file in memory, from a THCharStorage's text (its size - 1 characters, TH's
// terminating NUL left out) or empty
THFile* THMemoryFile_newWithStorage(THCharStorage* storage, const char* mode) {
  const char* fn = "THMemoryFile_newWithStorage";
  bool readable, writable;
  parse_mode(mode, readable, writable, fn);
  auto* f = new MemoryFile();
  f->readable = readable, f->writable = writable;
  if (storage != nullptr) {
    const ptrdiff_t n = THCharStorage_size(storage);
    if (n > 0) f->data.assign(reinterpret_cast<const char*>(THCharStorage_data(storage)), n - 1);
  }
  return f;
}
THFile* THMemoryFile_new(const char* mode) {
  return THMemoryFile_newWithStorage(nullptr, mode);
}

// What the file holds, as a THCharStorage with TH's terminating NUL; the
// file's own (it lives until the next call or the file's free)
THCharStorage* THMemoryFile_storage(THFile* self) {
  MemoryFile* m = memory(self, "THMemoryFile_storage");
  THCharStorage_free(m->storage);
  m->storage = THCharStorage_newWithSize(static_cast<ptrdiff_t>(m->data.size()) + 1);
  std::memcpy(THCharStorage_data(m->storage), m->data.c_str(), m->data.size() + 1);
  return m->storage;
}
void THMemoryFile_longSize(THFile* self, int size) {
  if (size != 0 && size != 4 && size != 8)
    throw std::runtime_error("THMemoryFile_longSize: Invalid long size specified, got " +
                             std::to_string(size));
  memory(self, "THMemoryFile_longSize")->long_size = size;
}

}  // extern "C"
